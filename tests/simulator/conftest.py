"""Fixtures for the simulator tests: a manual clock and a simulator factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adapters.run.clock import FakeClock
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_sim(clock: FakeClock) -> Callable[..., Simulator]:
    def make(**knobs: Any) -> Simulator:
        return Simulator(Scenario(**knobs), clock=clock)

    return make
