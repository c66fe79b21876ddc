"""Fixtures for the simulator tests: a manual clock and a simulator factory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adapters.simulator.clock import ManualClock
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_sim(clock: ManualClock) -> Callable[..., Simulator]:
    def make(**knobs: Any) -> Simulator:
        return Simulator(Scenario(**knobs), clock=clock)

    return make
