"""What a serving process still does before it serves at full speed: `GET /api/v1/health`.

A process starts serving at once, then pays its one-time costs on threads of its own (the
providers' SDKs, the hot queries' SQL): a turn served meanwhile works, but shares the
interpreter with them. `soon` runs one such piece of work and keeps its name among
`starting()` until it is over, failed or not (a failure is logged: the work is then done on
first use, as it would be without it). A load balancer's readiness probe, or a benchmark,
waits for `ready`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_starting: set[str] = set()
_lock = threading.Lock()


def soon(name: str, work: Callable[[], Any], delay: float) -> threading.Timer:
    """Run `work` on a daemon thread after `delay` seconds, `name` starting until it ends."""

    def run() -> None:
        try:
            work()
        except Exception:
            log.exception("%s: the start-up work failed; it is done on first use instead", name)
        finally:
            with _lock:
                _starting.discard(name)

    with _lock:
        _starting.add(name)
    timer = threading.Timer(delay, run)
    timer.name, timer.daemon = f"horsie-{name.replace(' ', '-')}", True
    timer.start()
    return timer


def starting() -> list[str]:
    with _lock:
        return sorted(_starting)
