"""What `run`'s flags hold, read and checked so that every error names its flag or file: the job's
settings, the rubric, the template and the verdict spec."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.files.readers import read_verdict_file
from adapters.run.settings import JobSettings
from adapters.usage import UsageError
from judgecore.job.designs import FIRST, SECOND, DesignError, template_fields
from judgecore.job.knobs import KnobError, env_values, unknown_env


def _settings(ns: argparse.Namespace) -> JobSettings:

    force = "sync" if ns.force_sync else "batch" if ns.force_batch else None
    extra: dict[str, Any] = {} if ns.max_tokens is None else {"max_tokens": ns.max_tokens}
    return JobSettings(
        model=ns.model,
        thinking=ns.thinking,
        **extra,
        force=force,
        sync_threshold=ns.sync_threshold,
        otpm=ns.otpm,
        max_batch_requests=ns.max_batch_requests,
        max_batch_bytes=ns.max_batch_bytes,
        poll_interval=ns.poll_interval,
        grace=ns.grace,
        concurrency=ns.concurrency,
        max_attempts=ns.max_attempts,
        verdict=_verdict_spec(ns.verdict),
        budget=ns.budget,
        template=_read_template(ns.template, pairwise=ns.pairwise is not None),
        samples=ns.samples,
        pairwise=tuple(ns.pairwise) if ns.pairwise else None,
        judges=tuple(ns.judges or ()),
        allow_unknown_model=bool(ns.allow_unknown_model),
        deadline=getattr(ns, "deadline", None),
        keep_files=bool(getattr(ns, "keep_files", False)),
    )


def check_environment(environ: Mapping[str, str], *, values: bool) -> None:
    """The `JUDGECORE_*` variables, read before anything else: a name judgecore does not read is a
    warning with the nearest one it does (a typo is not ignored in silence); with `values`, one whose
    value is out of its range is a `UsageError` naming it, as its flag would be (the one table of
    knobs, `judgecore.job.knobs`). Nothing is loaded when no such variable is set."""
    if not any(name.startswith("JUDGECORE_") for name in environ):
        return

    for line in unknown_env(environ):
        print(f"warning: {line}", file=sys.stderr)
    if values:
        try:
            env_values(environ)
        except KnobError as exc:
            raise UsageError(f"{exc} (nothing was sent)") from None


def _read_flag_file(path: Path, flag: str) -> str:
    """The UTF-8 text of the file a flag names; what goes wrong is one `UsageError` naming both."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc} ({flag})") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc}) ({flag})") from None


def _read_rubric(path: Path | None) -> str | None:
    if path is None:
        return None
    text = _read_flag_file(path, "--rubric")
    if not text.strip():
        raise UsageError(f"{path}: the rubric is empty")
    return text


#: `run` flags never remembered: what this one command does, not how the job was started


def _read_template(path: Path | None, *, pairwise: bool = False) -> str | None:
    """The text of `--template FILE`, checked here so that every error names the file."""
    if path is None:
        return None
    text = _read_flag_file(path, "--template")

    try:
        names = template_fields(text)
    except DesignError as exc:
        raise UsageError(f"{path}: {exc} (--template)") from None
    if pairwise and not {FIRST, SECOND} <= set(names):
        missing = " and ".join(f"{{{n}}}" for n in (FIRST, SECOND) if n not in names)
        raise UsageError(
            f"{path}: with --pairwise, the template names the two answers {{first}} and {{second}} "
            f"({missing} missing) (--template)"
        )
    return text


def _verdict_spec(path: Path | None) -> Any:
    if path is None:
        return None

    return read_verdict_file(path)
