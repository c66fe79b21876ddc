"""A manual clock for tests and demos: time moves only when told to, and never backwards."""

from __future__ import annotations

import threading

import attrs


@attrs.define
class ManualClock:
    """Epoch seconds that move only by `advance` / `set`; call the instance to read it."""

    now: float = 1_796_000_000.0
    #: Seconds added after every read (0 = frozen); handy when a retrying client must see time pass.
    step: float = 0.0
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False, eq=False)

    def __call__(self) -> float:
        with self._lock:
            value = self.now
            self.now += self.step
            return value

    def advance(self, seconds: float) -> float:
        """Move forward by `seconds` (must be >= 0); returns the new time."""
        if seconds < 0:
            raise ValueError("a ManualClock never goes back")
        with self._lock:
            self.now += seconds
            return self.now

    def set(self, when: float) -> None:
        """Jump to `when`, which must not be earlier than now."""
        with self._lock:
            if when < self.now:
                raise ValueError("a ManualClock never goes back")
            self.now = when
