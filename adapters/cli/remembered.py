"""How a job was started, remembered in its checkpoint: a rerun fills in the flags it leaves out
from it, and a flag that would make another job is exit 2, naming the flag."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from adapters.checkpoint.fresh import holds_checkpoint
from adapters.cli.parser import build_parser
from adapters.files.paths import kept_path, path_to_keep
from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan, Learned
from judgecore.run.job._machine import History

_NOT_REMEMBERED = frozenset(
    {
        "command",
        "input",
        "state",
        "out",
        "dry_run",
        "json",
        "count_tokens",
        "replace_verdict",
        "add_items",
        "deadline",
    }
)
#: the manifest's fields, by the flag that sets them (a field that differs names its flag)
_FLAG_OF = {
    "model": "--model",
    "max_tokens": "--max-tokens",
    "rubric_sha256": "--rubric",
    "verdict_schema_sha256": "--verdict",
    "thinking": "--thinking",
    "template_sha256": "--template",
    "samples": "--samples",
    "pairwise": "--pairwise",
    "judges": "--judge",
}


class KeptJob(Protocol):
    """The job a state dir's checkpoint holds, as `run`'s checks read it: `adapters.cli.resumed.
    StoredJob`, which the command's dispatch gives when `--state` holds a checkpoint (and only then:
    a new job's dry run imports neither it nor the store)."""

    def started(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The job's remembered invocation (None: none kept) and its manifest."""
        ...

    def manifest_answered(self, manifest: Mapping[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        """The kept manifest, and whether the job was answered when it differs from `manifest`."""
        ...

    def key_of(self, state_dir: Path | str | None, manifest: Mapping[str, Any]) -> str | None:
        """The job key its custom_ids are derived with."""
        ...

    def check_overlap(self, ns: argparse.Namespace, kept: dict[str, Any] | None, ids: Any) -> None:
        """Exit 2 for an input that shares no item id with the job (a warning for one holding some)."""
        ...

    def dry_figures(
        self, job: JobPlan, *, rubric: str | None, settings: Any, source: str | None
    ) -> tuple[History, Learned, float]:
        """What a dry run's plan starts from: the machine's history, what answers taught, the spend."""
        ...


def _holds_checkpoint(state: Path | None) -> bool:
    """`state` is a state dir holding a checkpoint (a path that cannot be one is told later, by name)."""

    try:
        return state is not None and holds_checkpoint(state)
    except OSError:
        return False


def _run_flags_given(argv: Sequence[str]) -> set[str]:
    """The dests of the `run` options this command line gives (a flag left out is never a default)."""
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["run"]  # type: ignore[union-attr]
    by_option = run._option_string_actions
    given = set()
    for word in argv:
        if word == "--":
            break
        action = by_option.get(word.split("=", 1)[0]) if word.startswith("--") else None
        if action is not None:
            given.add(action.dest)
    return given


def _remembered(ns: argparse.Namespace, argv: Sequence[str], stored: KeptJob | None) -> dict[str, Any] | None:
    """Fill `ns` from how the job in `--state` was started: INPUT, `--out` and every flag this command
    leaves out take the remembered values (never their defaults); the flags it gives apply. Returns the
    job's remembered invocation (None: a new state dir, or one made before judgecore remembered).
    `stored`: the job `--state` holds (None: it holds none)."""
    kept = manifest = None
    if stored is not None:
        kept, manifest = stored.started()
    if kept is None:
        if ns.input is None and getattr(ns, "from_inspect", None) is None:
            if ns.state is None:
                where = "no --state to resume without it"
            elif _holds_checkpoint(ns.state):  # a job started from Python, or by a judgecore before 0.1
                where = (
                    f"--state {ns.state} holds a job started from the Python API (or by an older "
                    "judgecore), which keeps no command line to resume by: give INPUT and the flags again, "
                    "or call judge() again with that state_dir"
                )
            else:
                where = f"--state {ns.state} holds no job to resume"
            raise UsageError(f"INPUT is required, or --from-inspect LOG ({where}); see: judgecore run --help")
        return None
    given = _run_flags_given(argv)
    if given & {"force_sync", "force_batch"}:  # one given anew replaces the remembered other
        given |= {"force_sync", "force_batch"}
    for dest, value in kept["flags"].items():
        if dest not in given and dest not in _NOT_REMEMBERED and hasattr(ns, dest):
            path = dest in ("rubric", "verdict", "from_inspect", "template") and value is not None
            setattr(ns, dest, Path(value) if path else value)
    if getattr(ns, "max_tokens", 0) is None and isinstance(manifest, dict) and "max_tokens" in manifest:
        # started without --max-tokens: resume with the default it had then (a later judgecore's may
        # differ: a panel's rose to 16,000 where a judge thinks), not this version's
        ns.max_tokens = manifest["max_tokens"]
    if ns.input is None and getattr(ns, "from_inspect", None) is None:
        ns.input = kept_path(ns.state, kept["input"])
    if "out" not in given and kept.get("out"):
        ns.out = _remembered_out(ns.state, kept)
    return kept


def _remembered_out(state: Path, kept: dict[str, Any]) -> Path:
    """The output a job resumed from `state` writes: the remembered `--out`, found under the state
    dir's own path when it lies inside it. A dir started before judgecore remembered it so (an absolute
    path, no `state`) may have been moved or copied since: an output in another state dir (the one it
    was copied from) or in a directory that is gone (the one it was moved from) is written inside this
    one, under its name, never to the old place (nor the old dir made again)."""
    out = kept_path(state, kept["out"])
    if "state" in kept or not Path(kept["out"]).is_absolute():
        return out

    old = out.parent
    if old != state.resolve() and (not old.exists() or holds_checkpoint(old)):
        return state / out.name
    return out


def _invocation(ns: argparse.Namespace, out: Path) -> dict[str, Any]:
    """How this run was started, to remember in the checkpoint: every flag's value, and its paths
    absolute, except INPUT and `--out` inside the state dir, kept relative to it (`path_to_keep`:
    a moved or copied state dir finds them under its own path); `state` is the dir's path when it
    ran (what tells this way of keeping them from an older one's)."""
    flags = {}
    for dest, value in vars(ns).items():
        if dest in _NOT_REMEMBERED:
            continue
        flags[dest] = str(value.resolve()) if isinstance(value, Path) else value
    return {
        "input": path_to_keep(ns.state, ns.input),
        "out": path_to_keep(ns.state, out),
        "state": str(ns.state.resolve()),
        "flags": flags,
    }


def _shown(key: str, flag: str, value: Any) -> str:
    """A manifest value as the flag that sets it is written (`answer_a,answer_b`, `adaptive`), and a
    field a job without that flag leaves out as what it means (`1` sample, `no --judge`)."""
    if value is None:
        return "1" if key == "samples" else f"no {flag}"
    if key == "pairwise" and isinstance(value, list):
        return ",".join(map(str, value))
    if key == "judges" and isinstance(value, list):
        return " ".join(f"--judge {j}" for j in value)
    if key == "thinking" and isinstance(value, dict):
        kind = value.get("type")
        if kind == "enabled":
            return str(value.get("budget_tokens"))
        return {"disabled": "off"}.get(str(kind), str(kind))
    return str(value)


def _digest(key: str, value: Any) -> str:
    """A file flag's manifest digest; a verdict file without one is a pattern (no schema is sent)."""
    if value is not None:
        return f"{key} {value}"
    return "a pattern, no schema" if key == "verdict_schema_sha256" else f"{key} none: the file is empty"


def _check_manifest(
    ns: argparse.Namespace, kept: dict[str, Any] | None, manifest: dict[str, Any], stored: KeptJob | None
) -> None:
    """A flag that shapes what a request asks and differs from how the job was started (the job
    `stored`, which `--state` holds; None: it holds none) is exit 2, naming the flag, the old and the
    new value and the two ways out, before anything is read or sent."""
    if stored is None:
        return
    old, answered = stored.manifest_answered(manifest)
    if old is None or old == manifest:
        return
    key = next(k for k in (*_FLAG_OF, *sorted(set(old) | set(manifest))) if old.get(k) != manifest.get(k))
    flag = _FLAG_OF.get(key, key)
    flags = (kept or {}).get("flags", {})
    dest = {"--rubric": "rubric", "--verdict": "verdict", "--template": "template"}.get(flag)
    was = flags.get(dest) if dest else None
    now = getattr(ns, dest, None) if dest else None
    old_v = f"{was} ({_digest(key, old.get(key))})" if was else _shown(key, flag, old.get(key))
    new_v = f"{now} ({_digest(key, manifest.get(key))})" if now else _shown(key, flag, manifest.get(key))
    if not answered:  # nothing of that job to keep (`Store.answered`): this one takes the dir

        def named(v: str) -> str:
            return v if v.startswith(("-", "no ")) else f"{flag} {v}"

        print(
            f"note: the job in {ns.state} was started with {named(old_v)} and never received an answer "
            f"(nothing final, no batch created): {'the plan is' if ns.dry_run else 'it starts again'} "
            f"as this run asks, with {named(new_v)}",
            file=sys.stderr,
        )
        return
    raise UsageError(
        f"{flag}: the job in {ns.state} was started with {old_v}, this run asks {new_v}: that is "
        f"another job. Leave {flag} out to resume the job as it was started, or point --state at a "
        "new directory to start a new job (nothing was sent)"
    )
