"""The sync path's settings: every knob of a sync run, from defaults, JUDGECORE_* variables and flags."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from judgecore import BackoffPolicy
from judgecore.decide.ratelimit import PacingPolicy, RateLimitReading, concurrency_for
from judgecore.run.sync import SyncPolicy

#: Environment overrides read by `SyncSettings.from_env` (name -> field, kind). Listed in docs/knobs.md.
#: `max_attempts` has none: `--max-attempts` (default 3) is its one name, shared with the batch path.
ENV_VARS: Mapping[str, tuple[str, type]] = {
    "JUDGECORE_MAX_CONCURRENCY": ("concurrency", int),
    "JUDGECORE_MAX_RATE_LIMITED": ("max_rate_limited", int),
    "JUDGECORE_BACKOFF_BASE": ("backoff_base", float),
    "JUDGECORE_BACKOFF_CAP": ("backoff_cap", float),
    "JUDGECORE_PACING_HEADROOM": ("pacing_headroom", float),
    "JUDGECORE_PACING_BURST": ("pacing_burst", float),
    "JUDGECORE_REQUEST_TIMEOUT": ("request_timeout", float),
    "JUDGECORE_PROGRESS_INTERVAL": ("progress_interval", float),
}


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

    def __attrs_post_init__(self) -> None:
        if self.request_timeout is not None and not self.request_timeout > 0:
            raise ValueError(f"request_timeout must be > 0, got {self.request_timeout}")
        self.policy(None)  # validates every other knob

    def policy(self, reading: RateLimitReading | None, *, warm_up: bool = True) -> SyncPolicy:
        """The run machine's rules, the concurrency ceiling from the tier unless set."""
        return SyncPolicy(
            max_attempts=self.max_attempts,
            max_rate_limited=self.max_rate_limited,
            backoff=BackoffPolicy(base=self.backoff_base, cap=self.backoff_cap),
            pacing=PacingPolicy(headroom=self.pacing_headroom, burst_seconds=self.pacing_burst),
            concurrency=self.concurrency or concurrency_for(reading),
            warm_up=warm_up,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: Any) -> SyncSettings:
        """Defaults, then JUDGECORE_* variables, then `overrides`; a bad value is a ValueError naming it."""
        values: dict[str, Any] = {}
        for name, (field, kind) in ENV_VARS.items():
            raw = environ.get(name)
            if raw is None or not raw.strip():
                continue
            try:
                values[field] = kind(raw.strip())
            except ValueError:
                raise ValueError(f"{name}={raw!r}: expected {kind.__name__}") from None
        values.update(overrides)
        try:
            return cls(**values)
        except ValueError as exc:
            raise ValueError(f"sync settings: {exc}") from None
