"""Settings, all from the environment, with embedded defaults.

Nothing set: SQLite in `var/`, the in-memory channel layer, turns run in-process, the bundled
local model. `DATABASE_URL` (PostgreSQL) and `REDIS_URL` turn the same code into a cluster:
several web processes and turn workers (`manage.py runworker horsie-turns`).
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import dj_database_url

from horsie_site import env

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env.string("HORSIE_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    configured = env.raw("DJANGO_SECRET_KEY")
    if configured:
        return configured
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()


def _secrets_key() -> str:
    """The Fernet key that encrypts provider keys at rest; kept apart from SECRET_KEY so
    rotating the session-signing key never loses the team's stored credentials."""
    from cryptography.fernet import Fernet

    configured = env.raw("HORSIE_SECRETS_KEY")
    if not configured:
        path = VAR_DIR / "secrets_key"
        if not path.exists():
            path.write_text(Fernet.generate_key().decode())
            path.chmod(0o600)
        configured = path.read_text().strip()
    try:
        Fernet(configured)
    except ValueError:
        raise env.SettingError(
            "HORSIE_SECRETS_KEY is not a Fernet key (32 url-safe base64-encoded bytes)"
        ) from None
    return configured


HORSIE_SECRETS_KEY = _secrets_key()
DEBUG = env.boolean("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env.string_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.string_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "ninja",
    "teams_app",
    "sessions_app",
    "memory_app",
    "skills_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "horsie_site.api.JsonErrorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "horsie_site.inputs.TextCheckMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "teams_app.middleware.CurrentTeamMiddleware",
    "teams_app.middleware.OneTimePasswordMiddleware",
]

ROOT_URLCONF = "horsie_site.urls"
ASGI_APPLICATION = "horsie_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "teams_app.context_processors.teams",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env.string("DATABASE_URL", f"sqlite:///{VAR_DIR / 'horsie.sqlite3'}"),
        conn_max_age=env.integer("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
POOL_SIZE = env.integer("DATABASE_POOL_SIZE", 10)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Under ASGI every request's sync code runs on a thread of its own: connections go back
    # to a pool per process at the end of each request (horsie_site.sqlite).
    DATABASES["default"]["ENGINE"] = "horsie_site.sqlite"
    if POOL_SIZE:
        DATABASES["default"]["CONN_MAX_AGE"] = 0
    # Turns append from a worker thread while requests read: wait for the lock, don't fail.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "pool_size": POOL_SIZE,
    }
    # Turns run on another thread: tests need a file, not a shared in-memory database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-{os.getpid()}.sqlite3")}
elif DATABASES["default"]["ENGINE"].endswith("postgresql") and POOL_SIZE:
    # Under ASGI every request's sync code runs on a thread of its own, so a connection kept
    # per thread is never reused and each request would connect anew: a pool per process.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": POOL_SIZE,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.string("REDIS_URL", "")
REDIS_PREFIX = env.string("HORSIE_REDIS_PREFIX", "horsie")
if REDIS_URL:
    CHANNEL_LAYERS = {
        # Turns for the workers: each one taken by exactly one worker, kept until taken.
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # redis-py's 5 s default socket timeout equals channels_redis's blocking
                # receive: an idle worker or websocket would die after 5 s without it.
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                "prefix": REDIS_PREFIX,
                "capacity": 1000,
            },
        },
        # A session's events for its watchers: published once, received once per process
        # and handed to each of its watchers there (not one message, and one Redis round
        # trip, per watcher). A watcher that misses one catches up from the log.
        "events": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": REDIS_URL}], "prefix": REDIS_PREFIX},
        },
    }
    # The reply text in flight is kept here so a browser that joins mid-reply sees all of it.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": REDIS_PREFIX,
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "horsie_site.layers.EmbeddedChannelLayer"},
        "events": {"BACKEND": "horsie_site.layers.EmbeddedChannelLayer"},
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "sessions:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.string("HORSIE_LOG_LEVEL", "INFO")},
    # httpx logs a line per model call at INFO: a turn's worth of noise and 1.5% of its CPU.
    "loggers": {"httpx": {"level": env.string("HORSIE_HTTPX_LOG_LEVEL", "WARNING")}},
}

# Horsie's own settings.
HORSIE = {
    # "inprocess" runs turns in the web process; "channels" sends them to `runworker horsie-turns`.
    "DISPATCH": env.string("HORSIE_DISPATCH", "channels" if REDIS_URL else "inprocess"),
    "MESSAGE_MAX_CHARS": env.integer("HORSIE_MESSAGE_MAX_CHARS", 200_000, minimum=1),
    # A runner renews its lease every third of this; a dead runner's turn is taken over after it.
    "LEASE_SECONDS": env.integer("HORSIE_LEASE_SECONDS", 30, minimum=3),
    # A snapshot of the state every this many entries (and at every boundary).
    "SNAPSHOT_EVERY": env.integer("HORSIE_SNAPSHOT_EVERY", 200, minimum=1),
    # Fire due timers and take over dead runners' sessions, once a second, in every process
    # that serves the ASGI application (daphne and runworker alike). Off by default inside the
    # test runner, whose tests call `scheduler.tick` themselves; server processes it starts
    # run their own.
    "SCHEDULER": env.boolean("HORSIE_SCHEDULER", "pytest" not in sys.modules),
    # Pay the provider SDKs' one-time costs (lazy imports, first-call set-up) at process start,
    # on a thread of its own, not on a session's first turn. Off by default inside pytest.
    "WARM": env.boolean("HORSIE_WARM", "pytest" not in sys.modules),
    "MAX_STEPS": env.integer("HORSIE_MAX_STEPS", 25, minimum=1),
    "COMPACT_TRIGGER": env.number("HORSIE_COMPACT_TRIGGER", 0.8, low=0.1, high=1.0),
    # Recent history kept verbatim at a compaction, and the summary's cap: fractions of W.
    "RECENT_FRACTION": env.number("HORSIE_RECENT_FRACTION", 0.2, low=0.01, high=0.9),
    "SUMMARY_FRACTION": env.number("HORSIE_SUMMARY_FRACTION", 0.1, low=0.01, high=0.5),
    "LOCAL_MODEL_PATH": env.string("HORSIE_LOCAL_MODEL_PATH", ""),
    "LOCAL_THREADS": env.integer("HORSIE_LOCAL_THREADS", 1, minimum=1),
    "PROVIDER_TIMEOUT": env.number("HORSIE_PROVIDER_TIMEOUT", 120.0, low=1.0, high=3600.0),
    # Near the compaction trigger, ask a wire that can count (anthropic) for the prompt's size.
    "COUNT_TOKENS": env.boolean("HORSIE_COUNT_TOKENS", True),
    "WORKER_CONCURRENCY": env.integer("HORSIE_WORKER_CONCURRENCY", 8, minimum=1),
    # Subagents: how deep they may nest (1: a main session's children may not spawn) and how
    # many children of one session may run at once.
    "SUBAGENT_MAX_DEPTH": env.integer("HORSIE_SUBAGENT_MAX_DEPTH", 2, minimum=1, maximum=10),
    "SUBAGENT_MAX_RUNNING": env.integer("HORSIE_SUBAGENT_MAX_RUNNING", 4, minimum=1, maximum=64),
    # Environment variables a model card's `api_key_env` may name: `VAR` for every team,
    # `team:VAR` for that team only. Empty: cards use stored provider keys only.
    "PROVIDER_ENV": env.string_list("HORSIE_PROVIDER_ENV", []),
    # Hosts or CIDRs model calls may go to; empty means anywhere but link-local and metadata.
    "OUTBOUND_ALLOW": env.string_list("HORSIE_OUTBOUND_ALLOW", []),
    "DEFAULT_SYSTEM_PROMPT": env.string(
        "HORSIE_DEFAULT_SYSTEM_PROMPT", "You are a helpful assistant. Answer concisely."
    ),
}
