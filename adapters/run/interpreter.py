"""The one interpreter loop of the machines (`judgecore.run.vocab`): advance the machine, perform its
effects at once and in order, start its operations, wait on its `Wait` through the one clock (until
its time, or until an operation answers), feed each answer back with `on`, and end at `Done`.

The three shells drive their machine through `Interpreter`: the job (`adapters.run.job`), the batch
run (`adapters.run.batch`) and the sync run (`adapters.run.sync`). Their loops share that shape; what
differs is passed in, and this is why it differs:

- `inline`: the job's operations are whole parts of the run (the probe, the batch part, the sync
  part, the output), one at a time; each is awaited where it is handed out, so an interrupt reaches
  the part itself (the sync part's wait for its answers in flight), not a task of this loop.
- `before`, `wake`, `after`: the batch run asks the deadline's switch (`adapters.run.switch`) before
  each advance and lets it bound each wait; after each round of actions it discards what harvested
  batches left on the provider. Its operations run concurrently; their answers are fed back in the
  order they were started, once the loop wakes.
- `eager`: the sync run takes each answer in the task that received it, and performs the rows and
  lines it makes there, at once (`SyncRun.effects`): not when this loop next wakes, which behind a
  burst of answers being read can be a second later. `interrupted`: on an interrupt it waits a while
  for the answers in flight, which were sent, so billed.
- `bounded`: a run that stops waits for its cancelled operations at most `clock.SETTLE_SECONDS`
  (`clock.settle`: the batch run's, so none touches the checkpoint after its caller closed it; one
  whose answer was already in, a batch created, records it then); the sync run's requests end at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Generic, Protocol, TypeVar

import attrs

from adapters.run.clock import Clock, settle
from judgecore.run.vocab import Done, Wait

M = TypeVar("M", bound="Machine")


class Machine(Protocol):
    """What every machine of `judgecore.run` is: `advance(now)` ends its actions with `Wait` or `Done`."""

    def advance(self, now: float) -> tuple[Any, tuple[Any, ...]]: ...

    def on(self, event: Any) -> Any: ...


@attrs.define
class Interpreter(Generic[M]):
    """Drives `machine` to `Done` (`run`). `perform(action)` performs an effect (and returns None) or
    starts an operation: it returns the awaitable that ends in the operation's event. The machine
    between two advances is `machine` (an eager answer's task moves it too)."""

    machine: M
    clock: Clock
    perform: Callable[[Any], Awaitable[Any] | None]
    inline: bool = False
    eager: Callable[[M], M] | None = None
    before: Callable[[M], Awaitable[M]] | None = None
    wake: Callable[[M], float | None] | None = None
    after: Callable[[], Awaitable[None]] | None = None
    #: told before each wait (the progress line)
    waiting: Callable[[M], None] | None = None
    interrupted: Callable[[Collection[asyncio.Future[Any]]], Awaitable[None]] | None = None
    bounded: bool = True
    #: the operations in flight, by the order they were started
    tasks: dict[asyncio.Future[Any], int] = attrs.field(factory=dict)
    _started: int = 0

    async def run(self) -> Done:
        """Advance, perform, wait, until the machine is `Done`; what is still in flight then (a stop, an
        interrupt, an error) is cancelled and waited for (see `bounded`)."""
        try:
            while True:
                if self.before is not None:
                    self.machine = await self.before(self.machine)
                self.machine, actions = self.machine.advance(self.clock.now())
                last = actions[-1]
                for action in actions[:-1]:
                    operation = self.perform(action)
                    if operation is None:
                        continue
                    if self.inline:
                        self.machine = self.machine.on(await operation)
                    else:
                        self._start(operation)
                if self.after is not None:
                    await self.after()
                if isinstance(last, Done):
                    return last
                assert isinstance(last, Wait), last
                await self._wait(last.until)
        except asyncio.CancelledError:  # Ctrl-C (asyncio.run cancels the run) or the CLI's SIGTERM
            if self.interrupted is not None and (pending := [t for t in self.tasks if not t.done()]):
                await self.interrupted(pending)
            raise
        finally:
            await self._close()

    def _start(self, operation: Awaitable[Any]) -> None:
        self._started += 1
        task = asyncio.ensure_future(self._take(operation) if self.eager is not None else operation)
        self.tasks[task] = self._started

    async def _take(self, operation: Awaitable[Any]) -> None:
        """An eager operation: its answer goes to the machine, and what that makes is performed, here."""
        event = await operation
        assert self.eager is not None
        self.machine = self.eager(self.machine.on(event))

    async def _wait(self, until: float | None) -> None:
        """Until an operation answers or the clock reaches `until` (None: an answer only); then feed
        what answered (unless eager), in the order the operations were started."""
        clock = self.clock
        if self.wake is not None and (wake := self.wake(self.machine)) is not None and wake > clock.now():
            until = wake if until is None else min(until, wake)  # the machine asked again then
        if until is None and not self.tasks:
            if self.inline:  # its answer is in already
                return
            raise RuntimeError(f"{type(self.machine).__name__} waits for an answer with nothing in flight")
        if self.waiting is not None:
            self.waiting(self.machine)
        await first_done(self.tasks, until, clock)
        for task in sorted((t for t in self.tasks if t.done()), key=self.tasks.__getitem__):
            del self.tasks[task]
            event = task.result()  # what failed in an operation (a store error) fails the run
            if self.eager is None:
                self.machine = self.machine.on(event)

    async def _close(self) -> None:
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if not tasks:
            return
        if self.bounded:
            await settle(tasks, self.clock)
        else:
            await asyncio.gather(*tasks, return_exceptions=True)


async def first_done(tasks: Collection[asyncio.Future[Any]], until: float | None, clock: Clock) -> None:
    """Until one of `tasks` is done or `clock` reaches `until` (None: a task only)."""
    waiters: set[asyncio.Future[Any]] = set(tasks)
    sleeper = None if until is None else asyncio.ensure_future(clock.sleep(until - clock.now()))
    if sleeper is not None:
        waiters.add(sleeper)
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if sleeper is not None and not sleeper.done():
            sleeper.cancel()


__all__ = ["Interpreter", "Machine", "first_done"]
