"""What the report reads from a checkpoint besides the summary: provenance, spend per model, examples.

Everything here comes from the checkpoint (the rubric, the manifest, the remembered invocation, the
items' kept messages and answers) and from the installed packages' versions; the input file is read only
to take its digest, and only when it is still where the job read it. The API key is never in the
checkpoint, so it cannot reach the report.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.metadata
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from adapters.checkpoint.store import Store
from adapters.cli.parser import build_parser
from adapters.files.paths import kept_path
from adapters.usage import PYTHON_RESUME
from judgecore.summary.examples import ExampleGroup, choose_examples, excerpt, prompt_of


@attrs.frozen(kw_only=True)
class Example:
    custom_id: str
    item_id: str
    prompt: str
    text: str
    verdict: Any
    status: str
    error_class: str | None
    #: the answers the item's verdict folds (a design's samples, judges or orders); `text` is one of them
    answers: int = 1


@attrs.frozen(kw_only=True)
class Provenance:
    generated: str
    first_answer: str | None
    last_answer: str | None
    judgecore_version: str
    sdk_version: str
    models: tuple[str, ...]
    manifest: Mapping[str, Any]
    rubric: str | None
    verdict_spec: Mapping[str, Any] | None
    settings: tuple[tuple[str, Any], ...]
    input_path: str | None
    input_sha256: str | None
    items_sha256: str
    reproduce: str | None
    resume: str


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _when(at: float | None) -> str | None:
    if at is None:
        return None
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _file_sha256(path: str | None) -> str | None:
    if not path:
        return None
    try:
        with Path(path).open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


#: Flags that shape what a request asks, shown as the job's settings (operational flags are not).
_SHAPING = (
    "model",
    "max_tokens",
    "thinking",
    "template",
    "samples",
    "pairwise",
    "judge",
    "rubric",
    "verdict",
)
_SKIP = frozenset({"command", "state", "input", "out", "json", "dry_run"})


def _reproduce(invocation: Mapping[str, Any] | None, state: Path) -> str | None:
    """The command line that starts this job again (a new `--state` to run it afresh)."""
    if not invocation:
        return None
    args = ["judgecore", "run", str(kept_path(state, str(invocation.get("input")))), "--state", str(state)]
    if invocation.get("out"):
        args += ["--out", str(kept_path(state, invocation["out"]))]
    options = _run_options()
    for dest, value in sorted((invocation.get("flags") or {}).items()):
        if dest in _SKIP or value is None or value is False or value == []:
            continue
        # the flag as `run` spells it (`--judge`, whose dest is `judges`), and how it takes a list:
        # repeated (`--judge A --judge B`) or as one value (`--pairwise A,B`)
        flag, repeated = options.get(dest, ("--" + dest.replace("_", "-"), True))
        if value is True:
            args.append(flag)
        elif isinstance(value, list) and repeated:
            for v in value:
                args += [flag, str(v)]
        elif isinstance(value, list):
            args += [flag, ",".join(map(str, value))]
        else:
            args += [flag, str(value)]
    return shlex.join(args)


def _run_options() -> dict[str, tuple[str, bool]]:
    """`run`'s options by dest: the long option string, and whether the flag is repeated per value."""

    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["run"]  # type: ignore[union-attr]
    out: dict[str, tuple[str, bool]] = {}
    for action in run._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs:
            out[action.dest] = (longs[0], isinstance(action, argparse._AppendAction))
    return out


def provenance(store: Store, state: Path, records: Sequence[Mapping[str, Any]], now: float) -> Provenance:
    manifest = store.manifest or {}
    invocation = store.invocation
    flags = (invocation or {}).get("flags") or {}
    times = [t[0] for t in store.timeline()]
    # Who judged: every model an answer names, and a panel's judges (an item's record names the model
    # of one of its requests only; the manifest keeps the panel as asked).
    judges = [str(j) for j in manifest.get("judges") or ()]
    named = {
        m
        for r in records
        if (m := str(r.get("model") or ""))
        and not any(m == j or m.startswith(j + "-") for j in judges)  # a dated id of a judge's alias
    }
    models = tuple(judges + sorted(named)) or (str(manifest.get("model")),)
    settings = [(k, manifest[k]) for k in manifest if not k.endswith("sha256")]
    settings += [
        (k, flags[k]) for k in _SHAPING if k not in manifest and flags.get(k) not in (None, False, [])
    ]
    input_path = (
        str(kept_path(state, invocation["input"])) if invocation and invocation.get("input") else None
    )
    return Provenance(
        generated=_when(now) or "",
        first_answer=_when(min(times)) if times else None,
        last_answer=_when(max(times)) if times else None,
        judgecore_version=_version("judgecore"),
        sdk_version=_version("anthropic"),
        models=models,
        manifest=manifest,
        rubric=store.rubric,
        verdict_spec=store.verdict,
        settings=tuple(settings),
        input_path=input_path,
        input_sha256=_file_sha256(input_path),
        items_sha256=store.items_digest(),
        reproduce=_reproduce(invocation, state),
        resume=resume_command(state, started_by_cli=bool(invocation)),
    )


def examples(
    store: Store, records: Sequence[Mapping[str, Any]], score_field: str | None
) -> tuple[tuple[ExampleGroup, tuple[Example, ...]], ...]:
    """A few items per score value and failure class, seeded by the job's own key (the same checkpoint
    always shows the same ones), each with its prompt as sent, the judge's text and the verdict."""
    seed = str(store.ids_job or orjson.dumps(store.manifest or {}).decode())
    groups = choose_examples(records, score_field=score_field, seed=seed)
    by_id = {r["custom_id"]: r for r in records}
    out = []
    for g in groups:
        shown = []
        for cid in g.custom_ids:
            r = by_id[cid]
            try:
                (raw,) = store.messages_of([cid])
                messages = orjson.loads(raw)
                prompt = prompt_of(messages if isinstance(messages, list) else [])
            except (KeyError, orjson.JSONDecodeError):
                prompt = ""
            shown.append(
                Example(
                    custom_id=cid,
                    item_id=str(r.get("id")),
                    prompt=excerpt(prompt),
                    text=excerpt(r.get("text"), 900),
                    verdict=r.get("verdict"),
                    status=str(r.get("status")),
                    error_class=(r.get("error") or {}).get("class"),
                    answers=answers_of(r),
                )
            )
        out.append((g, tuple(shown)))
    return tuple(out)


def resume_command(state: Path, *, started_by_cli: bool = True) -> str:
    """The command that resumes the job in `state` as it was started, as the report prints it; for a
    job started from the Python API, the call that does."""
    if not started_by_cli:
        return PYTHON_RESUME.format(state=shlex.quote(str(state)))
    return shlex.join(["judgecore", "run", "--state", str(state)])


def answers_of(record: Mapping[str, Any]) -> int:
    """How many answers an item's verdict folds: its samples (a panel's included), else a pairwise
    verdict's orders, else its one answer."""
    samples = record.get("samples")
    if isinstance(samples, list) and samples:
        return len(samples)
    verdict = record.get("verdict")
    if isinstance(verdict, Mapping) and isinstance(verdict.get("orders"), list) and verdict["orders"]:
        return len(verdict["orders"])
    return 1
