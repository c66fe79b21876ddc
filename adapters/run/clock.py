"""The clock: the only place the shell reads time or sleeps, so tests can swap in a fake one; and
`settle`, the bounded wait for a stopping run's cancelled operations (on that clock)."""

from __future__ import annotations

import asyncio
import heapq
import threading
import time
from collections.abc import Collection
from typing import Any, Protocol


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
    """The one fake clock of the tests, the simulator and the benches: time moves only when told to or
    when every sleeper is waiting, and never goes back (after trio's autojump MockClock).

    Sleepers register their wake time; once the event loop has had a few turns with nothing else to
    do, the clock jumps to the earliest wake time and wakes every sleeper due then. Concurrent sleepers
    therefore wake in order and no earlier than they asked, and a job that would wait 24 hours runs in
    milliseconds. `sleeps` records every requested duration; `advance(seconds)` and `set(when)` move
    time by hand; `step` seconds are added after every read (0: none), as if each read took that long.
    Calling the clock reads it (the simulator's `clock` is a `() -> float`); reads and moves may come
    from another thread (a simulator served on a thread).
    """

    _SETTLE_TURNS = 20

    def __init__(self, start: float = 1_800_000_000.0, *, step: float = 0.0) -> None:
        self._now = start
        self.step = step
        self._lock = threading.Lock()
        self._seq = 0
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._jump_scheduled = False
        self.sleeps: list[float] = []

    def now(self) -> float:
        if not self.step:
            return self._now
        with self._lock:
            value = self._now
            self._now += self.step
            return value

    __call__ = now

    def advance(self, seconds: float) -> float:
        """Move forward by `seconds` (>= 0); the new time."""
        if seconds < 0:
            raise ValueError("a FakeClock never goes back")
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, when: float) -> None:
        """Jump to `when`, which must not be earlier than now."""
        with self._lock:
            if when < self._now:
                raise ValueError("a FakeClock never goes back")
            self._now = when

    async def sleep(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.sleeps.append(seconds)
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._seq += 1
        heapq.heappush(self._waiters, (self._now + seconds, self._seq, fut))
        if not self._jump_scheduled:
            self._jump_scheduled = True
            loop.call_soon(self._settle, loop, self._SETTLE_TURNS)
        await fut

    def _settle(self, loop: asyncio.AbstractEventLoop, turns: int) -> None:
        if turns > 0:
            loop.call_soon(self._settle, loop, turns - 1)
            return
        self._jump_scheduled = False
        while self._waiters and self._waiters[0][2].done():  # a cancelled sleeper is no reason to jump
            heapq.heappop(self._waiters)
        if not self._waiters:
            return
        target = self._waiters[0][0]
        self._now = max(self._now, target)
        while self._waiters and self._waiters[0][0] <= self._now:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
        if self._waiters:
            self._jump_scheduled = True
            loop.call_soon(self._settle, loop, self._SETTLE_TURNS)


#: How long a run that stops (an error, an interrupt) waits for its cancelled operations to end.
SETTLE_SECONDS = 10.0


async def settle(tasks: Collection[asyncio.Task[Any]], clock: Clock) -> None:
    """Wait until every task has ended, or `SETTLE_SECONDS` have passed; retrieve what each raised
    (it is not the run's error: that one is already on its way)."""
    pending = set(tasks)
    sleeper = asyncio.ensure_future(clock.sleep(SETTLE_SECONDS))
    try:
        while pending and not sleeper.done():
            await asyncio.wait({*pending, sleeper}, return_when=asyncio.FIRST_COMPLETED)
            pending = {t for t in pending if not t.done()}
    finally:
        sleeper.cancel()
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()
