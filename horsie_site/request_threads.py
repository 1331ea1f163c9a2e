"""Django's ASGI handler, with each request's synchronous code on a thread kept for reuse.

Django runs a request's synchronous code (the middleware, a sync view) on a thread of the
request's own: asgiref makes a one-thread executor per request and shuts it down at the end.
Starting that thread cost the event loop about 0.3 ms per request, with the loop blocked
while the thread came up. asgiref lets the caller own the executor of a request's
thread-sensitive context, so the handler takes an idle one from a pool and gives it back when
the request is over, as a threaded WSGI server keeps its threads. An executor still running
work (a view that outlived its client's disconnect) is not given back: it finishes and ends.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler

from sessions_app import outbox

IDLE_KEPT = 16


class RequestThread(ThreadPoolExecutor):
    """One thread, and how much of what was sent to it is not done yet."""

    def __init__(self) -> None:
        super().__init__(max_workers=1, thread_name_prefix="horsie-request")
        self.pending = 0
        self.lock = threading.Lock()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self.lock:
            self.pending += 1
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self.done)
        return future

    def done(self, _: Future[Any]) -> None:
        with self.lock:
            self.pending -= 1


class RequestThreads:
    def __init__(self, kept: int = IDLE_KEPT) -> None:
        self.kept = kept
        self.idle: list[RequestThread] = []
        self.lock = threading.Lock()

    def take(self) -> RequestThread:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return RequestThread()

    def give(self, executor: RequestThread) -> None:
        with self.lock, executor.lock:
            if executor.pending == 0 and len(self.idle) < self.kept:
                self.idle.append(executor)
                return
        executor.shutdown(wait=False)


class PooledASGIHandler(ASGIHandler):
    threads = RequestThreads()

    def load_middleware(self, is_async: bool = False) -> None:
        """The middleware chain and the view run synchronously, in one hop to the request's
        thread. Django's asynchronous chain ends in an asynchronous handler, so with
        synchronous middleware (ours) and synchronous views a request hopped to its thread,
        back to the loop at the innermost middleware, and to the thread again for the view,
        plus a hop for each `process_view`: about 0.5 ms a request, the loop busy for each."""
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        executor = self.threads.take()
        try:
            with outbox.serving():
                async with ThreadSensitiveContext(executor=executor):
                    await self.handle(scope, receive, send)
        finally:
            self.threads.give(executor)
