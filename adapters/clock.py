"""The clock: the only place the shell reads time or sleeps, so tests can swap in a fake one."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock seconds since the epoch, and an awaitable sleep."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """`time.time()` and `asyncio.sleep`."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that jumps instead of sleeping, and never goes back (after trio's MockClock).

    `sleep(s)` moves the time to at least `start + s`, where `start` is the time the sleep began, then
    yields to the event loop once. Concurrent sleepers therefore end no earlier than they asked, and a
    job that would wait 24 hours runs in milliseconds. `sleeps` records every requested duration.
    """

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a FakeClock never goes back")
        self._now += seconds

    async def sleep(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.sleeps.append(seconds)
        self._now = max(self._now, self._now + seconds) if seconds else self._now
        await asyncio.sleep(0)
