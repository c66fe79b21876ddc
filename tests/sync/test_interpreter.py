"""The one interpreter loop (`adapters.run.interpreter`) over a small machine of the shared vocabulary:
it waits on `Wait` through the clock, feeds answers back in the order their operations started, and
ends at `Done`."""

from __future__ import annotations

import asyncio

import attrs
import pytest

from adapters.run.clock import FakeClock
from adapters.run.interpreter import Interpreter
from judgecore.run.vocab import Done, Say, Wait


@attrs.frozen
class Ask:
    """An operation: answered with `Told(name)` after `seconds`."""

    name: str
    seconds: float


@attrs.frozen
class Told:
    name: str


@attrs.frozen
class Countdown:
    """Asks `names` at once, waits until `until` once they are all answered, then is done."""

    names: tuple[str, ...]
    until: float
    asked: bool = False
    heard: tuple[str, ...] = ()

    def advance(self, now: float) -> tuple[Countdown, tuple[object, ...]]:
        if not self.asked:
            asks = tuple(Ask(n, 10.0 - i) for i, n in enumerate(self.names))
            return attrs.evolve(self, asked=True), (Say("info", "asking"), *asks, Wait(None))
        if len(self.heard) < len(self.names):
            return self, (Wait(None),)
        if now < self.until:
            return self, (Wait(self.until),)
        return self, (Done(0, None),)

    def on(self, event: Told) -> Countdown:
        return attrs.evolve(self, heard=(*self.heard, event.name))


def test_answers_are_fed_back_and_a_wait_sleeps_on_the_clock_until_done() -> None:
    """Operations run concurrently; the loop sleeps through the clock to the machine's `until`."""
    clock = FakeClock()
    start = clock.now()
    said: list[str] = []

    async def ask(a: Ask) -> Told:
        await clock.sleep(a.seconds)
        return Told(a.name)

    def perform(action: object) -> object:
        if isinstance(action, Say):
            said.append(action.text)
            return None
        assert isinstance(action, Ask)
        return ask(action)

    loop = Interpreter(Countdown(("a", "b", "c"), until=start + 100.0), clock, perform)  # type: ignore[arg-type]
    done = asyncio.run(loop.run())
    assert Done(0, None) == done
    assert ["asking"] == said
    assert ("c", "b", "a") == loop.machine.heard  # the shortest answered first
    assert start + 100.0 == clock.now()
    assert {} == loop.tasks


def test_a_wait_for_an_answer_with_nothing_in_flight_is_a_bug_not_a_hang() -> None:
    """A machine that waits for an answer it never asked for stops the loop with an error."""
    clock = FakeClock()
    loop = Interpreter(Countdown(("a",), until=0.0, asked=True), clock, lambda a: None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="nothing in flight"):
        asyncio.run(loop.run())
