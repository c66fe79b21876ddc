"""The commands that read a checkpoint and send nothing: `status`, `summary` and `export`."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson

from adapters.checkpoint.reads import counts_with_verdicts, spend_by_judge, spend_from_store
from adapters.checkpoint.statelock import running_holder
from adapters.checkpoint.store import Store
from adapters.cli.relaunch import command_line
from adapters.files.inspect_export import export_to_inspect
from adapters.files.paths import existing_state_problem, kept_path, out_problem
from adapters.providers.registry import provider_of
from adapters.report.job_report import job_report, summary_json
from adapters.run.lanes import lane_of, lanes, legacy_batch_lane
from adapters.usage import EXIT_OK, EXIT_PENDING, PYTHON_RESUME, UsageError
from judgecore.decide.deadline import clock_time
from judgecore.job.designs import Design
from judgecore.summary.job_summary import render_summary, unreadable_warning
from judgecore.summary.text import render_markdown


def _existing_state(state: Path) -> None:
    """`--state` for `status` and `cancel`: a directory holding a checkpoint."""

    if problem := existing_state_problem(state):
        raise UsageError(problem)
    if not Store.exists(state):
        raise UsageError(f"--state {state}: no judgecore checkpoint here")


def cmd_status(ns: argparse.Namespace) -> int:

    _existing_state(ns.state)
    store = Store.open(ns.state)
    try:
        subs = store.sub_batches()
        legacy = _legacy_lane(store.manifest or {})
        info = {
            "state": str(ns.state),
            "manifest": store.manifest,
            "route": attrs.asdict(route) if (route := store.route) is not None else None,
            "rate_limits": reading.to_json() if (reading := store.rate_limits) is not None else None,
            "resume": command_line(["run", "--state", str(ns.state)]) if store.invocation else None,
            "counts": _counts_with_verdicts(store),
            "running": running_holder(ns.state),
            "design": design.to_json() if (design := store.design) is not None else None,
            "deadline": store.deadline,
            "switch": store.switch,
            **_spend_json(store),
            "judges": _judges_json(store),
            "sub_batches": [
                {
                    "sub_id": r.sub_id,
                    "round": r.round,
                    "batch_id": r.batch_id,
                    "requests": r.n,
                    "bytes": r.bytes,
                    "state": r.state,
                    "expires_at": r.expires_at,
                    "note": r.note,
                    "lane": r.lane or legacy,
                }
                for r in subs
            ],
        }
    finally:
        store.close()
    c = info["counts"]
    code = EXIT_PENDING if c.get("pending") else EXIT_OK
    if ns.json:
        sys.stdout.write(orjson.dumps(info, option=orjson.OPT_INDENT_2).decode() + "\n")
        return code
    total = sum(c.values())
    route = info["route"] or {}
    design = info["design"]
    per = _per_item(design)
    head = f"{total // per:,} items, {total:,} requests (counted below)" if design else f"{total:,} items"
    lines = [
        f"job in {ns.state}: {head}",
        "  " + ", ".join(f"{k} {v:,}" for k, v in c.items()),
        f"  route: {route.get('path', 'not decided yet')}" + (f" ({route.get('reason')})" if route else ""),
    ]
    model = str((info["manifest"] or {}).get("model", ""))
    if ":" in model:  # another provider's judge than Anthropic's: named with its provider
        lines.append(f"  judge: {model} (provider {model.split(':', 1)[0]})")
    lines.append("  " + _spend_line(info["spend_usd"], info["all_sync_usd"], info["estimate_usd"]))
    lines.extend(_judge_lines(info.get("judges") or {}))
    rl = info["rate_limits"] or {}
    if rl.get("output_tokens_limit"):
        lines.append(f"  tier: {rl['output_tokens_limit']:,} output tokens/min (read from the probe)")
    lines.extend(_sub_batch_lines(info["sub_batches"]))
    if (sw := info["switch"]) is not None:
        lines.append("  " + _switch_line(sw))
    if info["deadline"] is not None and c.get("pending"):
        lines.append("  " + _deadline_line(info["deadline"], time.time()))
    if info["running"]:
        lines.append(f"  running now: {info['running']}; its progress is on its own stderr")
    elif info["resume"] and c.get("pending"):
        lines.append(f"  resume with: {info['resume']}")
    elif c.get("pending"):  # a job started from the Python API: no command line to resume it by
        lines.append(f"  resume: {PYTHON_RESUME.format(state=shlex.quote(str(ns.state)))}")
    print("\n".join(lines))
    return code


def _legacy_lane(manifest: dict[str, Any]) -> str | None:
    """The lane of a sub-batch an earlier version recorded without one: its job's one batch lane."""
    return legacy_batch_lane([str(j) for j in manifest.get("judges") or [manifest.get("model") or "claude"]])


def _sub_batch_lines(subs: list[dict[str, Any]]) -> list[str]:
    """The sub-batches by state; with several lanes, each lane's (its provider's) on its own line. The
    ones still holding requests, one a line (named by lane when there are several)."""
    by_lane: dict[str, dict[str, int]] = {}
    for r in subs:
        states = by_lane.setdefault(r["lane"] or "", {})
        states[r["state"]] = states.get(r["state"], 0) + 1
    several = len(by_lane) > 1
    lines = []
    for lane, states in by_lane.items():
        head = f"  sub-batches on {_lane_words(lane)}: " if several else "  sub-batches: "
        lines.append(head + ", ".join(f"{k} {v}" for k, v in sorted(states.items())))
    for r in subs:
        if r["state"] in ("intent", "live", "ended", "stuck", "canceled"):
            where = f" ({_lane_words(r['lane'] or '')})" if several else ""
            lines.append(
                f"    #{r['sub_id']}{where} {r['batch_id'] or '(create unconfirmed)'} "
                f"{r['requests']:,} requests: {r['state']}"
            )
    return lines


def _lane_words(lane: str) -> str:
    return {"anthropic": "Anthropic", "openai": "OpenAI"}.get(lane, lane or "unknown")


def _judges_json(store: Any) -> dict[str, dict[str, Any]]:
    """A panel across providers: each judge's provider, route and spend (an empty dict for any other
    job, whose one route and spend are the job's)."""

    judges = list((store.manifest or {}).get("judges") or ())
    if len(lanes(judges)) < 2:
        return {}
    path = route.path if (route := store.route) is not None else None
    spent = spend_by_judge(store)
    # the lanes the run sent on their batch route (a dir an earlier version wrote: its one batch lane)
    on_batch = store.batch_lanes
    if on_batch is None:
        on_batch = [lane] if (lane := legacy_batch_lane(judges)) is not None else []
    out: dict[str, dict[str, Any]] = {}
    for judge in judges:  # the manifest's names: a served judge's without its URL
        provider = provider_of(judge).name
        served = provider == "served"
        batch = lane_of(judge) in on_batch
        spend = spent.get(judge)
        out[judge] = {
            "provider": provider,
            "route": None if path is None else path if batch else "sync",
            "spend_usd": None if spend is None else spend.spent,
            "self_hosted": served,
        }
    return out


def _judge_lines(judges: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for judge, j in judges.items():
        paid = "$0 (self-hosted)" if j["self_hosted"] else f"spend {_usd(j['spend_usd'])}"
        lines.append(f"  judge {judge}: {j['provider']}, route {j['route'] or 'not decided yet'}, {paid}")
    return lines


def _deadline_line(at: float, now: float) -> str:
    """The last run's deadline, and the time left to it (or that it has passed)."""

    left = at - now
    if left <= 0:
        return f"deadline of the last run: {clock_time(at)} (passed; a rerun has none unless given one)"
    return f"deadline of the last run: {clock_time(at)} ({_left(left)} left)"


def _switch_line(sw: dict[str, Any]) -> str:
    """The deadline's switch a run made: when, and that the rest goes on the sync route."""

    extra = "" if sw.get("extra_usd") is None else f"; extra cost at most ${sw['extra_usd']:,.2f}"
    return (
        f"switched to the sync route at {clock_time(sw['at'])} (a deadline): its batches canceled, "
        f"the rest sent sync{extra}"
    )


def _left(seconds: float) -> str:
    s = round(seconds)
    return f"{s} s" if s < 120 else f"{round(s / 60)} min" if s < 7200 else f"{s / 3600:.1f} h"


def _per_item(design: dict[str, Any] | None) -> int:
    """Requests per item of a checkpoint's kept design (1 without one)."""
    if not design:
        return 1

    return Design.from_json(design).per_item


def _usd(x: float | None) -> str:
    return "unknown" if x is None else f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


def _spend_line(spend: float | None, all_sync: float | None, estimate: float | None) -> str:
    return (
        f"spend so far {_usd(spend)} (all-sync would have cost {_usd(all_sync)}; estimated {_usd(estimate)})"
    )


def _counts_with_verdicts(store: Any) -> dict[str, int]:

    return counts_with_verdicts(store, store.counts())


def _spend_json(store: Any) -> dict[str, float | None]:

    m = spend_from_store(store)
    return {"spend_usd": m.spend_usd, "all_sync_usd": m.all_sync_usd, "estimate_usd": m.estimate_usd}


def _job_files(state: Path, *, inputs: bool = True) -> tuple[Path, ...]:
    """The files the job in `state` was started with (its input or inspect_ai log, unless `inputs` is
    False; its rubric, template, verdict spec), as its checkpoint recorded them; none for a directory
    with no checkpoint."""

    if not Store.exists(state):
        return ()
    store = Store.open_readonly(state)
    try:
        invocation = store.invocation or {}
    finally:
        store.close()
    flags = invocation.get("flags") or {}
    data = (invocation.get("input"), flags.get("from_inspect")) if inputs else ()
    named = (*data, *(flags.get(k) for k in ("rubric", "template", "verdict")))
    return tuple(kept_path(state, p) for p in named if isinstance(p, str) and p)


def cmd_summary(ns: argparse.Namespace, write_html: Callable[[Path, Any], Any] | None = None) -> int:

    if ns.json and ns.markdown:
        raise UsageError("--json and --markdown: choose one")
    _existing_state(ns.state)
    if ns.html is not None:
        # before anything is read or printed: the page never replaces a file the job reads or keeps
        reads = (*_job_files(ns.state), *((ns.verdict,) if ns.verdict is not None else ()))
        if problem := out_problem(ns.html, inputs=reads, state=ns.state, flag="--html"):
            raise UsageError(problem)
    report = job_report(
        ns.state,
        verdict_path=ns.verdict,
        by=ns.by,
        reference=ns.reference,
        author=ns.author,
        full=ns.html is not None,
        top=ns.top,
    )
    overall = report.summary.overall
    unparsed = dict(overall.classes).get("VERDICT_UNPARSED", 0)
    noun = "items" if report.multi_request else "answers"
    if report.summary.verdict_kind is not None and (
        warning := unreadable_warning(unparsed, overall.scored, noun=noun)
    ):
        print(f"warning: {warning}", file=sys.stderr)
    if ns.json:
        sys.stdout.write(summary_json(report).decode() + "\n")
    elif ns.markdown:
        sys.stdout.write(render_markdown(report.summary, title=f"job in {ns.state}"))
    else:
        sys.stdout.write(render_summary(report.summary, title=f"job in {ns.state}"))
    if ns.html is not None:
        assert write_html is not None, "--html is dispatched with the page's writer (adapters.report.page)"
        write_html(ns.html, report)
        sys.stdout.flush()
        print(f"report: {ns.html}", file=sys.stderr)
    return EXIT_OK


def cmd_export(ns: argparse.Namespace) -> int:

    _existing_state(ns.state)
    # the scored log may replace the log it was read from (as it always could), not the job's other files
    if problem := out_problem(
        ns.to_inspect, inputs=_job_files(ns.state, inputs=False), state=ns.state, flag="--to-inspect"
    ):
        raise UsageError(problem)
    scored, n = export_to_inspect(ns.state, ns.to_inspect, log_path=ns.from_inspect)
    print(f"{ns.to_inspect}: {n:,} sample(s), {scored:,} with a numeric judgecore score", file=sys.stderr)
    return EXIT_OK
