"""What the tests of the deadline's switch share: a clock that runs faster than the wall's (so a
15-minute deadline, its margins and its 5-minute minimum batch window pass in seconds), the job they
run through the Python API, and the child process the kill -9 test kills.

The simulator and the run read the same `ScaledClock` (the same base instant and wall-clock origin):
a child process given `base` and `origin` shares the test process's simulated time.

    python -m tests.integration.switching BASE_URL STATE ITEMS OUT SPEED BASE ORIGIN DEADLINE_S|-
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import attrs

BASE = 1_800_000_000.0
SPEED = 100.0
RUBRIC = "You are a strict grader. Output 'Score: N' then one sentence of rationale."


@attrs.define
class ScaledClock:
    """Simulated epoch seconds: `base` plus `speed` times the wall seconds since `origin`."""

    speed: float = SPEED
    base: float = BASE
    origin: float = attrs.field(factory=time.time)

    def now(self) -> float:
        return self.base + (time.time() - self.origin) * self.speed

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.speed)


def settings(deadline: float | None, **changes: Any) -> Any:
    """The job's knobs: the batch route (threshold 1, the tier given), sub-batches of 4 requests,
    polled every 30 simulated seconds; the deadline `deadline` seconds after the start (None: none)."""
    from adapters.run.settings import JobSettings
    from judgecore.job.when import When

    base = {
        "sync_threshold": 1,
        "otpm": 400_000,
        "max_batch_requests": 4,
        "poll_interval": 30.0,
        "deadline": When(seconds=deadline) if deadline is not None else None,
    }
    return JobSettings(**(base | changes))


async def run_job(
    base_url: str,
    state: Path,
    items: Path,
    out: Path,
    clock: ScaledClock,
    deadline: float | None,
    progress: Any = None,
) -> Any:
    """The job through `ajudge`, its client the real SDK over HTTP to `base_url`."""
    import anthropic

    from adapters.run.job import ajudge
    from adapters.run.progress import PlainProgress

    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=2)
    async with client:
        return await ajudge(
            items,
            rubric=RUBRIC,
            state_dir=state,
            settings=settings(deadline),
            client=client,
            out=out,
            clock=clock,
            progress=progress or PlainProgress(),
            environ={},
        )


def main(argv: list[str]) -> int:
    url, state, items, out, speed, base, origin, deadline = argv
    clock = ScaledClock(speed=float(speed), base=float(base), origin=float(origin))
    when = None if deadline == "-" else float(deadline)
    result = asyncio.run(run_job(url, Path(state), Path(items), Path(out), clock, when))
    return int(result.exit_code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
