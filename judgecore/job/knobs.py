"""Knobs: every number a run can be given, by a flag or a `JUDGECORE_*` environment variable, in one
table (`KNOBS`): the setting it sets, its flag, its variable, its type and its range.

The CLI's flag types, the environment's parsing and the settings' own checks (`JobSettings`,
`SyncSettings`) are all read from this table, so a value out of range is refused alike whichever way
it came: exit 2, naming the flag or the variable, before anything is sent.

Decisions, all pure (the environment is an argument, a mapping of names to text):
- `Knob.parse(text)`: the value a flag's or a variable's text gives, or a `KnobError` saying why not.
- `Knob.problem(value)`: why a value is out of the knob's range (one line), or None.
- `env_values(environ)`: every knob set in `environ`, by its setting's name; a `KnobError` naming the
  variable for a bad one.
- `unknown_env(environ)`: a warning for each `JUDGECORE_*` name judgecore does not read, with the
  nearest name it does (a typo is otherwise ignored in silence; `judgecore.job.near.closest` finds it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal

from judgecore.job.near import closest
from judgecore.values import frozen

#: The prefix of judgecore's environment variables.
ENV_PREFIX = "JUDGECORE_"

#: The most samples per item and judge (`judgecore.job.designs.MAX_SAMPLES`).
MAX_SAMPLES = 20


class KnobError(ValueError):
    """A knob's value that cannot be right: one line naming what was given and what it must be."""


@frozen(kw_only=True)
class Knob:
    """One knob: the setting it sets (`name`), how it is given (`flag`, `env`), its type and range.

    The range is `lo..hi` (either end may be open-ended: None); `lo_open` leaves `lo` itself out (a
    duration that must be more than 0). A `text` knob has no range."""

    name: str
    kind: Literal["int", "float", "text"]
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    flag: str | None = None
    env: str | None = None
    #: what a number of it counts, for messages ("seconds", "US dollars"); "" for a plain count
    unit: str = ""
    #: what it does, one line (for docs and messages)
    meaning: str = ""

    @property
    def label(self) -> str:
        """How the knob is named to the user: its flag, else its variable."""
        return self.flag or self.env or self.name

    def _low(self) -> str:
        return f"{'>' if self.lo_open else '>='} {_num(self.lo)}"

    @property
    def range_text(self) -> str:
        """The range as words: `>= 1 and at most 10,000`, `> 0`, `at most 3,600`."""
        if self.lo is not None and self.hi is not None:
            return f"{self._low()} and at most {_num(self.hi)}"
        if self.lo is not None:
            return self._low()
        return f"at most {_num(self.hi)}" if self.hi is not None else "any value"

    def problem(self, value: Any) -> str | None:
        """Why `value` (already of the knob's type) is out of its range, one line naming the bound it
        crosses first; None when it fits."""
        if self.kind == "text" or value is None:
            return None
        unit = f" {self.unit}" if self.unit else ""
        what = "a whole number " if self.kind == "int" else ""
        if self.kind == "float" and not math.isfinite(value):
            return f"must be a finite number{' of ' + self.unit if self.unit else ''} ({self.range_text}), got {value!r}"
        shown = f"{value:,}" if self.kind == "int" else repr(value)
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            high = f" and at most {_num(self.hi)}" if self.hi is not None else ""
            return f"must be {what}{self._low()}{high}{unit}, got {shown}"
        if self.hi is not None and value > self.hi:
            return f"must be {what}at most {_num(self.hi)}{unit}, got {shown}"
        return None

    def parse(self, text: str) -> Any:
        """The value `text` gives (surrounding blanks ignored), or a `KnobError` saying what it must be."""
        raw = text.strip()
        if self.kind == "text":
            return raw
        try:
            value: int | float = int(raw) if self.kind == "int" else float(raw)
        except ValueError:
            what = (
                "a whole number"
                if self.kind == "int"
                else f"a number{' of ' + self.unit if self.unit else ''}"
            )
            raise KnobError(f"expected {what} ({self.range_text}), got {text!r}") from None
        if (problem := self.problem(value)) is not None:
            raise KnobError(problem)
        return value


def _num(x: float | None) -> str:
    """A range end as written in a message: `1`, `0.5`, `86,400`."""
    if x is None:
        return ""
    return f"{int(x):,}" if float(x).is_integer() else str(x)


_SECONDS = "seconds"

#: Every knob of a run. A row with both a flag and a variable is one setting by two names (the flag
#: wins). Ranges: what makes sense for a job, not only what the code survives (`--concurrency 0`
#: would send nothing, `--max-attempts 1000` is a typo).
KNOBS: tuple[Knob, ...] = (
    Knob(name="max_tokens", kind="int", lo=1, hi=1_000_000, flag="--max-tokens", meaning="per answer"),
    Knob(
        name="sync_threshold",
        kind="int",
        lo=1,
        hi=1_000_000_000,
        flag="--sync-threshold",
        meaning="requests at 400,000 OTPM at and above which a job goes to batches",
    ),
    Knob(
        name="otpm",
        kind="int",
        lo=1,
        hi=1_000_000_000,
        flag="--otpm",
        meaning="the tier's output tokens per minute",
    ),
    Knob(
        name="max_batch_requests",
        kind="int",
        lo=1,
        hi=100_000,
        flag="--max-batch-requests",
        meaning="requests per sub-batch",
    ),
    Knob(
        name="max_batch_bytes",
        kind="int",
        lo=1_000,
        hi=256_000_000,
        flag="--max-batch-bytes",
        meaning="bytes per sub-batch create body",
    ),
    Knob(
        name="poll_interval",
        kind="float",
        lo=0,
        hi=86_400,
        lo_open=True,
        flag="--poll-interval",
        unit=_SECONDS,
        meaning="between polls of a live batch",
    ),
    Knob(
        name="grace",
        kind="float",
        lo=0,
        hi=604_800,
        flag="--grace",
        unit=_SECONDS,
        meaning="how long past expires_at a batch is waited for",
    ),
    Knob(
        name="concurrency",
        kind="int",
        lo=1,
        hi=10_000,
        flag="--concurrency",
        env="JUDGECORE_MAX_CONCURRENCY",
        meaning="sync requests in flight",
    ),
    Knob(
        name="max_attempts",
        kind="int",
        lo=1,
        hi=100,
        flag="--max-attempts",
        meaning="sends per item per run before it stays pending",
    ),
    Knob(
        name="budget",
        kind="float",
        lo=0,
        lo_open=True,
        flag="--budget",
        unit="US dollars",
        meaning="a hard cap on the job's spend",
    ),
    Knob(
        name="samples",
        kind="int",
        lo=1,
        hi=MAX_SAMPLES,
        flag="--samples",
        meaning="requests per item and judge",
    ),
    Knob(
        name="max_rate_limited",
        kind="int",
        lo=1,
        hi=10_000,
        env="JUDGECORE_MAX_RATE_LIMITED",
        meaning="429 answers per item per run before it stays pending",
    ),
    Knob(
        name="backoff_base",
        kind="float",
        lo=0,
        hi=3_600,
        lo_open=True,
        env="JUDGECORE_BACKOFF_BASE",
        unit=_SECONDS,
        meaning="where full-jitter backoff starts (it doubles)",
    ),
    Knob(
        name="backoff_cap",
        kind="float",
        lo=0,
        hi=86_400,
        lo_open=True,
        env="JUDGECORE_BACKOFF_CAP",
        unit=_SECONDS,
        meaning="the most a backoff window grows to (at least the base)",
    ),
    Knob(
        name="pacing_headroom",
        kind="float",
        lo=0,
        hi=1,
        lo_open=True,
        env="JUDGECORE_PACING_HEADROOM",
        meaning="share of each per-minute limit the pacer aims at",
    ),
    Knob(
        name="pacing_burst",
        kind="float",
        lo=0,
        hi=3_600,
        lo_open=True,
        env="JUDGECORE_PACING_BURST",
        unit=_SECONDS,
        meaning="seconds of limit the pacer may spend at once",
    ),
    Knob(
        name="request_timeout",
        kind="float",
        lo=0,
        hi=86_400,
        lo_open=True,
        env="JUDGECORE_REQUEST_TIMEOUT",
        unit=_SECONDS,
        meaning="per sync request",
    ),
    Knob(
        name="progress_interval",
        kind="float",
        lo=0,
        hi=3_600,
        env="JUDGECORE_PROGRESS_INTERVAL",
        unit=_SECONDS,
        meaning="between sync progress updates (0: at every step)",
    ),
    Knob(
        name="fs_type",
        kind="text",
        env="JUDGECORE_FS_TYPE",
        meaning="the state dir's filesystem type, where the mount table does not show it (nfs, ...)",
    ),
)

BY_NAME: Mapping[str, Knob] = MappingProxyType({k.name: k for k in KNOBS})
BY_FLAG: Mapping[str, Knob] = MappingProxyType({k.flag: k for k in KNOBS if k.flag})
BY_ENV: Mapping[str, Knob] = MappingProxyType({k.env: k for k in KNOBS if k.env})

#: `JUDGECORE_*` names read by judgecore's own tools rather than by a run: not warned about.
OTHER_ENV = frozenset({"JUDGECORE_HYPOTHESIS_PROFILE"})  # the test suite's hypothesis profile


def check(settings: Mapping[str, Any]) -> str | None:
    """The first knob of `settings` (setting name -> value; None: not set) out of its range, as one
    line naming its flag or variable; None when every one fits."""
    for name, value in settings.items():
        knob = BY_NAME.get(name)
        if knob is not None and (problem := knob.problem(value)) is not None:
            return f"{knob.label} {problem}"
    return None


def env_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """Every knob `environ` sets, by setting name (a blank value is no value); a `KnobError` naming the
    variable (and the flag that sets the same) for one that cannot be right."""
    out: dict[str, Any] = {}
    for env, knob in BY_ENV.items():
        raw = environ.get(env)
        if raw is None or not raw.strip():
            continue
        try:
            out[knob.name] = knob.parse(raw)
        except KnobError as exc:
            also = f" (as {knob.flag})" if knob.flag else ""
            raise KnobError(f"{env}={raw!r}: {exc}{also}") from None
    return out


def unknown_env(environ: Mapping[str, str]) -> tuple[str, ...]:
    """One warning for each `JUDGECORE_*` name in `environ` that judgecore does not read, naming the
    closest name it does read when there is one."""

    known = (*BY_ENV, *sorted(OTHER_ENV))
    out = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in BY_ENV or name in OTHER_ENV:
            continue
        near = closest(name, known, cutoff=0.8)
        hint = f"; did you mean {near}?" if near else f" (judgecore reads {', '.join(BY_ENV)})"
        out.append(f"{name} is not a judgecore variable and is ignored{hint}")
    return tuple(out)


__all__ = [
    "BY_ENV",
    "BY_FLAG",
    "BY_NAME",
    "ENV_PREFIX",
    "KNOBS",
    "Knob",
    "KnobError",
    "check",
    "env_values",
    "unknown_env",
]
