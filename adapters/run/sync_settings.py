"""The sync path's settings: every knob of a sync run, from defaults, JUDGECORE_* variables and flags."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from adapters.run.settings import JobSettings
from judgecore.decide.backoff import BackoffPolicy
from judgecore.decide.ratelimit import PacingPolicy, RateLimitReading, concurrency_for
from judgecore.job.knobs import BY_ENV, BY_NAME, env_values
from judgecore.job.knobs import check as check_knobs
from judgecore.run.sync import SyncPolicy

#: The sync path's fields that are knobs of the table (each has a range; the flag or variable names it)
_FIELDS = (
    "concurrency",
    "max_attempts",
    "max_rate_limited",
    "backoff_base",
    "backoff_cap",
    "pacing_headroom",
    "pacing_burst",
    "request_timeout",
    "progress_interval",
)
assert all(name in BY_NAME for name in _FIELDS)

#: Environment overrides read by `SyncSettings.from_env` (variable -> field), from the one table of
#: knobs (`judgecore.job.knobs`: type and range). Listed in docs/knobs.md. `max_attempts` has none:
#: `--max-attempts` (default 3) is its one name, shared with the batch path.
ENV_VARS: Mapping[str, str] = MappingProxyType(
    {env: knob.name for env, knob in BY_ENV.items() if knob.name in _FIELDS}
)


#: Where a served model's concurrency starts without `--concurrency` (the contract's default).
SERVED_CONCURRENCY = 32


@attrs.frozen(kw_only=True)
class SyncSettings:
    """Knobs of the sync path; each has a default, and all but `max_attempts` a JUDGECORE_* override.
    `concurrency` None means from the tier; `request_timeout` None means the SDK's (600 s read)."""

    concurrency: int | None = None
    max_attempts: int = 3
    max_rate_limited: int = 10
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    pacing_headroom: float = 0.95
    pacing_burst: float = 2.0
    request_timeout: float | None = None
    progress_interval: float = 0.5
    #: the run's deadline (epoch seconds; None: none), see `SyncPolicy.deadline`
    deadline: float | None = None
    #: a server without rate limits (a served model): the concurrency adapts, starting at
    #: `concurrency` or `SERVED_CONCURRENCY` (`SyncPolicy.adaptive`)
    adaptive: bool = False

    def __attrs_post_init__(self) -> None:
        problem = check_knobs({name: getattr(self, name) for name in _FIELDS})
        if problem is not None:  # each in its range, as the table says (`--concurrency 0` included)
            raise ValueError(problem)
        self.policy(None)  # validates what the table does not (the backoff's base at most its cap)

    def policy(self, reading: RateLimitReading | None, *, warm_up: bool = True) -> SyncPolicy:
        """The run machine's rules, the concurrency ceiling from the tier unless set."""
        return SyncPolicy(
            max_attempts=self.max_attempts,
            max_rate_limited=self.max_rate_limited,
            backoff=BackoffPolicy(base=self.backoff_base, cap=self.backoff_cap),
            pacing=PacingPolicy(headroom=self.pacing_headroom, burst_seconds=self.pacing_burst),
            concurrency=self.concurrency
            or (SERVED_CONCURRENCY if self.adaptive else concurrency_for(reading)),
            adaptive=self.adaptive,
            warm_up=warm_up,
            deadline=self.deadline,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: Any) -> SyncSettings:
        """Defaults, then JUDGECORE_* variables, then `overrides`; a bad value is a ValueError naming it."""
        fields = attrs.fields_dict(cls)
        values: dict[str, Any] = {k: v for k, v in env_values(environ).items() if k in fields}
        values.update(overrides)
        try:
            return cls(**values)
        except ValueError as exc:
            raise ValueError(f"sync settings: {exc}") from None


def sync_settings_for(settings: JobSettings, environ: Mapping[str, str]) -> SyncSettings:
    """The sync path's knobs: defaults, then JUDGECORE_* variables, then the job's own flags; a
    ValueError naming the variable or flag for a value out of its range."""

    overrides: dict[str, Any] = {"max_attempts": settings.max_attempts}
    if settings.concurrency:
        overrides["concurrency"] = settings.concurrency
    if settings.deadline is not None and settings.deadline.at is not None:
        overrides["deadline"] = settings.deadline.at
    return SyncSettings.from_env(environ, **overrides)
