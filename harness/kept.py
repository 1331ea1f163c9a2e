"""A process's per-session keepings, for the sessions used last."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class KeptBy(Generic[Value]):
    """One value per key, made by `make` on first use; past `size` keys, the least recently
    used key's value is dropped. Thread safe."""

    def __init__(self, make: Callable[[], Value], size: int = 64) -> None:
        self.make, self.size = make, size
        self._values: OrderedDict[Hashable, Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Value:
        with self._lock:
            value = self._values.get(key)
            if value is None:
                value = self._values[key] = self.make()
                while len(self._values) > self.size:
                    self._values.popitem(last=False)
            else:
                self._values.move_to_end(key)
            return value
