"""A whole judge job: parse, checkpoint, probe, route, run the chosen path, write the output.

This is the shell's top level and the Python API (`judge`, `ajudge`); the CLI is a thin layer over it.
It decides nothing itself: routing, chunking, classification and resume are the core's; it performs
them in the order the checkpoint promises require (bind the job before anything is sent; the probe's
answer is recorded as that item's result; the output is written from the checkpoint, atomically).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import random
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from adapters.clock import Clock, RealClock
from adapters.events import Emit, Notice, discard
from adapters.paths import out_problem, state_problem
from adapters.store import Store
from judgecore import (
    DEFAULT_PRICES,
    Item,
    PollPolicy,
    Request,
    RequestTemplate,
    RequestTooLargeError,
    Route,
    RoutePolicy,
    Status,
    SubBatch,
    assign_custom_ids,
    build_requests,
    chunk,
    output_line,
    output_record,
    parse_item,
    plan,
    route,
)
from judgecore.items import Path as RoutePath
from judgecore.models import max_tokens_problem
from judgecore.planning import Plan
from judgecore.ratelimit import RateLimitReading
from judgecore.verdicts import VerdictSpec

if TYPE_CHECKING:
    from adapters.sync import SyncSettings

# The SDK-facing modules (adapters.batch, adapters.sync and their API ports) are imported where they
# are used: importing the SDK takes about two seconds, which `--help`, `status` and `--dry-run` skip.

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_MAX_TOKENS = 1024

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_PENDING = 3
EXIT_FATAL = 4


@attrs.frozen(kw_only=True)
class JobSettings:
    """Every knob of a run, with the defaults of CONTRACT.md."""

    model: str = DEFAULT_MODEL
    max_tokens: int = DEFAULT_MAX_TOKENS
    force: RoutePath | None = None
    sync_threshold: int = 2000
    otpm: int | None = None
    max_batch_requests: int = 8000
    max_batch_bytes: int = 250_000_000
    poll_interval: float = 60.0
    grace: float = 1800.0
    concurrency: int | None = None
    max_attempts: int = 3
    seed: int | None = None
    #: How answers are read into verdicts (`--verdict FILE`); None: no verdicts.
    verdict: VerdictSpec | None = None
    #: A hard cap in US dollars (`--budget USD`); None: no cap.
    budget: float | None = None

    def __attrs_post_init__(self) -> None:
        max_tokens = max_tokens_problem(self.model, self.max_tokens) if self.max_tokens >= 1 else None
        checks = [
            (bool(self.model.strip()), "--model must be a non-empty model id"),
            (self.max_tokens >= 1, "--max-tokens must be >= 1"),
            (max_tokens is None, f"--max-tokens: {max_tokens}"),
            (self.sync_threshold >= 1, "--sync-threshold must be >= 1"),
            (self.sync_threshold <= 10**9, "--sync-threshold must be at most 1,000,000,000"),
            (self.otpm is None or self.otpm >= 1, "--otpm must be >= 1"),
            (self.otpm is None or self.otpm <= 10**9, "--otpm must be at most 1,000,000,000"),
            (1 <= self.max_batch_requests <= 100_000, "--max-batch-requests must be in 1..100000"),
            (1_000 <= self.max_batch_bytes <= 256_000_000, "--max-batch-bytes must be in 1000..256000000"),
            (math.isfinite(self.poll_interval), "--poll-interval must be a finite number of seconds"),
            (self.poll_interval > 0, "--poll-interval must be > 0"),
            (self.poll_interval <= 86_400, "--poll-interval must be at most 86400 seconds (a day)"),
            (math.isfinite(self.grace), "--grace must be a finite number of seconds"),
            (self.grace >= 0, "--grace must be >= 0"),
            (self.grace <= 604_800, "--grace must be at most 604800 seconds (a week)"),
            (self.concurrency is None or self.concurrency >= 1, "--concurrency must be >= 1"),
            (self.concurrency is None or self.concurrency <= 10_000, "--concurrency must be at most 10000"),
            (self.max_attempts >= 1, "--max-attempts must be >= 1"),
            (
                self.budget is None or (math.isfinite(self.budget) and self.budget > 0),
                "--budget must be a finite amount of US dollars > 0",
            ),
            (
                self.budget is None or self.model in DEFAULT_PRICES,
                f"--budget needs the model's prices, and judgecore has none for {self.model!r}",
            ),
            (self.max_attempts <= 100, "--max-attempts must be at most 100"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    @property
    def route_policy(self) -> RoutePolicy:
        return RoutePolicy(base_threshold=self.sync_threshold)

    def manifest(self, rubric: str | None) -> dict[str, Any]:
        """What makes two runs the same job: anything that changes what a request asks."""
        digest = hashlib.sha256(rubric.encode()).hexdigest()[:32] if rubric else None
        manifest: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "rubric_sha256": digest,
        }
        schema = self.verdict.schema_digest if self.verdict is not None else None
        if schema is not None:  # only when set, so checkpoints made before verdicts existed still match
            manifest["verdict_schema_sha256"] = schema
        return manifest

    def template(self, rubric: str | None, path: RoutePath) -> RequestTemplate:
        """The request template of one route (a verdict schema adds its `output_config`)."""
        oc = self.verdict.output_config() if self.verdict is not None else None
        return RequestTemplate.build(
            model=self.model, max_tokens=self.max_tokens, rubric=rubric, path=path, output_config=oc
        )


@attrs.frozen(kw_only=True)
class JudgeResult:
    """What a run ended with. `records` maps item id -> its output object (CONTRACT.md's shape)."""

    exit_code: int
    route: Route | None
    counts: Mapping[str, int]
    records: Mapping[str, dict[str, Any]]
    fatal: str | None = None
    stuck_batches: tuple[str, ...] = ()
    output_path: Path | None = None
    cache_hit_rate: float | None = None
    plan: Plan | None = None
    #: US dollars: the job's answers so far (earlier runs included), the same answers all-sync, and the
    #: dry-run estimate of the whole job on its route; None where the model has no price.
    spend_usd: float | None = None
    all_sync_usd: float | None = None
    estimate_usd: float | None = None


class UsageError(Exception):
    """Bad usage or bad input, detected before anything was sent (exit 2)."""


def load_items(path: Path) -> tuple[Item, ...]:
    """Parse a JSONL input file; `UsageError` with `FILE:LINE: reason` on the first bad line."""
    from judgecore import DuplicateIdError, InputError, parse_items

    try:
        with path.open("rb") as f:
            return parse_items(f)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (InputError, DuplicateIdError) as exc:
        raise UsageError(f"{path}:{exc}".replace(f"{path}:line ", f"{path}:")) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc})") from None


def items_from_objects(objects: Iterable[Mapping[str, Any] | Item]) -> tuple[Item, ...]:
    """Items from Python objects shaped like input lines (or `Item`s), validated as the CLI would."""
    from judgecore import DuplicateIdError, InputError, assign_custom_ids

    out: list[Item] = []
    try:
        for n, obj in enumerate(objects, start=1):
            if isinstance(obj, Item):
                out.append(obj)
                continue
            item = parse_item(n, orjson.dumps(dict(obj)))
            if item is not None:
                out.append(item)
        assign_custom_ids((i.id for i in out), (i.line for i in out))
    except (InputError, DuplicateIdError) as exc:
        raise UsageError(str(exc)) from None
    return tuple(out)


def write_output_atomic(path: Path, lines: Iterable[bytes]) -> None:
    """Write JSONL to a temp file in the same directory, fsync, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for line in lines:
                f.write(line)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def collect_records(
    store: Store, items: Sequence[Item], verdict: VerdictSpec | None = None
) -> dict[str, dict[str, Any]]:
    """Every item's output object, from the checkpoint, keyed by item id (input order kept).

    An item with no outcome yet is reported on the job's route (sync before one is decided); one that
    sits in a live batch names it. `verdict` reads each succeeded answer's verdict.
    """
    custom_ids = assign_custom_ids((i.id for i in items), (i.line for i in items))
    wanted = set(custom_ids)
    latest = {cid: rest for cid, *rest in store.latest() if cid in wanted}
    default_route = (store.get_meta("route") or {}).get("path", "sync")
    waiting = store.waiting_batches()
    records: dict[str, dict[str, Any]] = {}
    for item, custom_id in zip(items, custom_ids, strict=True):
        outcome, route_used, batch_id, attempts = latest.get(custom_id, (None, None, None, 0))
        records[item.id] = output_record(
            item,
            custom_id,
            outcome,
            route=route_used or default_route,  # type: ignore[arg-type]
            batch_id=batch_id,
            attempts=attempts,
            verdict_spec=verdict,
            waiting_in=waiting.get(custom_id) if outcome is None or not outcome.final else None,
        )
    return records


def exit_code_for(records: Mapping[str, Mapping[str, Any]], fatal: str | None) -> int:
    if fatal:
        return EXIT_FATAL
    if any(r["status"] == "pending" for r in records.values()):
        return EXIT_PENDING
    return EXIT_OK


async def ajudge(
    items: Sequence[Item] | Iterable[Mapping[str, Any]],
    *,
    rubric: str | None,
    state_dir: Path | str,
    settings: JobSettings = JobSettings(),
    client: Any = None,
    out: Path | str | None = None,
    dry_run: bool = False,
    clock: Clock | None = None,
    progress: Emit = discard,
    environ: Mapping[str, str] | None = None,
) -> JudgeResult:
    """Run (or resume) a judge job; see `judge` for the arguments."""
    emit = progress
    items = items if isinstance(items, tuple) else items_from_objects(items)  # type: ignore[arg-type]
    for item in items:
        if item.max_tokens is not None and (problem := max_tokens_problem(settings.model, item.max_tokens)):
            raise UsageError(f"line {item.line}: item {item.id!r}: {problem}")
    state_dir = Path(state_dir)
    clock = clock or RealClock()
    environ = os.environ if environ is None else environ
    rng = random.Random(settings.seed)
    policy = settings.route_policy

    if dry_run:
        return _dry_run(items, rubric=rubric, settings=settings, state_dir=state_dir)

    if not items:
        raise UsageError("the input has no items")
    problem = state_problem(state_dir, create=True) or (
        out_problem(Path(out), state=state_dir) if out is not None else None
    )
    if problem:
        raise UsageError(problem)
    try:
        sync_settings = _sync_settings(settings, environ)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    built: dict[RoutePath, tuple[RequestTemplate, tuple[Request, ...]]] = {}

    def requests_for(path: RoutePath) -> tuple[RequestTemplate, tuple[Request, ...]]:
        """The template and requests of one route, built once (the rubric's cache marker differs)."""
        if path not in built:
            t = settings.template(rubric, path)
            built[path] = (t, build_requests(items, t))
        return built[path]

    if settings.force != "sync":
        _sub_batches(items, requests_for("batch")[1], settings)  # an item too large: exit 2 now
    store = Store.open(state_dir)
    try:
        from adapters.store import ContentConflictError, StateMismatchError

        probe_template, probe_requests = requests_for("sync")
        try:
            store.bind_job(
                settings.manifest(rubric),
                ((r.custom_id, i.id, i.digest) for i, r in zip(items, probe_requests, strict=True)),
            )
        except (StateMismatchError, ContentConflictError) as exc:
            raise UsageError(str(exc)) from None
        _record_for_summary(store, items, probe_requests, settings)

        client = client or _default_client(environ)
        chosen, fatal, warmed = await _decide_route(
            store, items, probe_requests, probe_template, settings, policy, client, clock, emit
        )
        stuck: tuple[str, ...] = ()
        hit_rate = None
        _record_estimate(store, items, *requests_for(chosen.path), chosen, rubric, settings)
        if fatal is None:
            template, requests = requests_for(chosen.path)
            fatal, stuck, hit_rate = await _run_path(
                chosen,
                store,
                requests,
                template,
                settings,
                sync_settings,
                client,
                clock,
                emit,
                rng,
                warmed=warmed,
            )
        records = collect_records(store, items, settings.verdict)
        if out is not None:
            write_output_atomic(Path(out), (output_line(r) for r in records.values()))
        counts = _count(records)
        from adapters.summary import spend_from_store

        money = spend_from_store(store)
        return JudgeResult(
            exit_code=exit_code_for(records, fatal),
            route=chosen,
            counts=counts,
            records=records,
            fatal=fatal,
            stuck_batches=stuck,
            output_path=Path(out) if out is not None else None,
            cache_hit_rate=hit_rate,
            spend_usd=money.spend_usd,
            all_sync_usd=money.all_sync_usd,
            estimate_usd=money.estimate_usd,
        )
    finally:
        store.close()


def judge(
    items: Sequence[Item] | Iterable[Mapping[str, Any]],
    *,
    rubric: str | None,
    state_dir: Path | str,
    settings: JobSettings = JobSettings(),
    client: Any = None,
    out: Path | str | None = None,
    dry_run: bool = False,
    clock: Clock | None = None,
    progress: Emit = discard,
    environ: Mapping[str, str] | None = None,
) -> JudgeResult:
    """Judge `items` (objects shaped like input lines: `{"id", "prompt" | "messages", ...}`).

    Runs the whole job, or resumes it from `state_dir`, and returns a `JudgeResult` whose `records`
    map each item id to its output object. `client` is an `anthropic.AsyncAnthropic` (built from
    the environment when None); `out`, when given, also writes the output JSONL atomically.
    `progress` receives the run's events (`adapters.events`) as they happen, e.g. `print` or
    `adapters.progress.PlainProgress()`.
    Raises `UsageError` on bad input or a state dir of another job, before anything is sent; inside
    a running event loop (a notebook, an async app), use `await ajudge(...)` instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop running: judge() starts its own
    else:
        raise UsageError("judge() was called inside a running event loop; use `await ajudge(...)` there")
    return asyncio.run(
        ajudge(
            items,
            rubric=rubric,
            state_dir=state_dir,
            settings=settings,
            client=client,
            out=out,
            dry_run=dry_run,
            clock=clock,
            progress=progress,
            environ=environ,
        )
    )


def _count(records: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    counts = {"succeeded": 0, "miss": 0, "quarantined": 0, "pending": 0}
    for r in records.values():
        counts[r["status"]] += 1
    return counts


def _default_client(environ: Mapping[str, str]) -> Any:
    import anthropic

    if not environ.get("ANTHROPIC_API_KEY") and not environ.get("ANTHROPIC_AUTH_TOKEN"):
        raise UsageError("ANTHROPIC_API_KEY is not set (nothing was sent); `judgecore demo` needs no key")
    # Our own loops own every retry (see adapters/sync_api.py and adapters/batch_api.py); the SDK's
    # retries are set per call there, so the client default does not matter for correctness.
    return anthropic.AsyncAnthropic(max_retries=0)


def _stored_route(store: Store) -> Route | None:
    raw = store.get_meta("route")
    return Route(**raw) if raw else None


async def _decide_route(
    store: Store,
    items: Sequence[Item],
    requests: Sequence[Request],
    template: RequestTemplate,
    settings: JobSettings,
    policy: RoutePolicy,
    client: Any,
    clock: Clock,
    emit: Emit,
) -> tuple[Route, str | None, bool]:
    """The job's route: kept from an earlier run of this state dir, or decided now (probing if needed).

    Also says whether a probe answered in this run (it wrote the prompt cache: no warm-up needed).
    """
    stored = _stored_route(store)
    n = len(requests)
    if stored is not None and (settings.force is None or settings.force == stored.path):
        if stored.n != n:
            stored = attrs.evolve(stored, n=n)
        return stored, None, False
    fatal = None
    warmed = False
    if settings.force is not None:
        chosen = route(n, policy=policy, force=settings.force, otpm=settings.otpm, otpm_source="flag")
    elif settings.otpm is not None:
        chosen = route(n, policy=policy, otpm=settings.otpm, otpm_source="flag")
    else:
        otpm, fatal, warmed = await _probe(store, requests, template, settings, client, clock, emit)
        chosen = route(n, policy=policy, otpm=otpm) if otpm else route(n, policy=policy)
    emit(Notice(level="info", message=f"route: {chosen.path} ({chosen.reason})"))
    store.set_meta("route", attrs.asdict(chosen))
    return chosen, fatal, warmed


async def _probe(
    store: Store,
    requests: Sequence[Request],
    template: RequestTemplate,
    settings: JobSettings,
    client: Any,
    clock: Clock,
    emit: Emit,
) -> tuple[int | None, str | None, bool]:
    """Send the first unfinished item alone (the run machine limited to it, its answer recorded); return
    the OTPM it revealed, a fatal reason (or None), and whether it was answered (it wrote the cache)."""
    reading = store.get_meta("rate_limits")
    if reading and reading.get("output_tokens_limit"):
        return int(reading["output_tokens_limit"]), None, False
    from adapters.sync import probe
    from adapters.sync_api import AnthropicMessagesApi

    done = store.job_state().final
    first = next((r for r in requests if r.custom_id not in done), None)
    if first is None:
        return None, None, False
    sync_settings = _sync_settings(settings, os.environ)
    result = await probe(
        store=store,
        api=AnthropicMessagesApi(client, timeout=sync_settings.request_timeout),
        request=first,
        template=template,
        clock=clock,
        settings=sync_settings,
        emit=emit,
    )
    rl, outcome = result.reading, result.outcome
    store.set_meta("rate_limits", rl.to_json())
    if result.fatal is not None or outcome is None:
        return None, result.fatal, False
    otpm = rl.otpm
    what = "answered" if outcome.final else f"came back {outcome.reason}; it will be sent again"
    tier = f"output tokens/min limit {otpm:,}" if otpm else "no tier reading, so 400,000 OTPM is assumed"
    emit(Notice(level="info", message=f"probe: {first.item_id} {what}; {tier}"))
    return (int(otpm) if otpm else None), None, outcome.status is Status.SUCCEEDED


async def _run_path(
    chosen: Route,
    store: Store,
    requests: Sequence[Request],
    template: RequestTemplate,
    settings: JobSettings,
    sync_settings: SyncSettings,
    client: Any,
    clock: Clock,
    emit: Emit,
    rng: random.Random,
    *,
    warmed: bool = False,
) -> tuple[str | None, tuple[str, ...], float | None]:
    """Run the routed path; live batches of an earlier run are always polled, whatever the route now."""
    state = store.job_state()
    fatal: str | None = None
    stuck: tuple[str, ...] = ()
    hit_rate = None
    batch_requests: Sequence[Request] = requests
    if chosen.path == "sync":
        batch_requests = [r for r in requests if r.custom_id in state.in_flight]
    if batch_requests:
        from adapters.batch import BatchSettings, run_batch
        from adapters.batch_api import AnthropicBatchApi

        bset = BatchSettings(
            max_batch_requests=settings.max_batch_requests,
            max_batch_bytes=settings.max_batch_bytes,
            poll=PollPolicy(interval=settings.poll_interval, grace=settings.grace),
            max_attempts=settings.max_attempts,
        )
        res = await run_batch(
            store=store,
            requests=batch_requests,
            template=template,
            api=AnthropicBatchApi(client),
            clock=clock,
            settings=bset,
            emit=emit,
            rng=rng,
        )
        fatal = res.fatal
        stuck = tuple(res.stuck)
    if chosen.path == "sync" and fatal is None:
        from adapters.sync import run_sync
        from adapters.sync_api import AnthropicMessagesApi

        reading = _reading_from_json(store.get_meta("rate_limits"))
        if reading is None and settings.otpm is not None:
            reading = RateLimitReading.for_otpm(settings.otpm)
        sres = await run_sync(
            store=store,
            requests=requests,
            template=template,
            api=AnthropicMessagesApi(client, timeout=sync_settings.request_timeout),
            clock=clock,
            settings=sync_settings,
            emit=emit,
            rng=rng,
            reading=reading,
            warm_up=not warmed,
        )
        fatal = sres.fatal
        hit_rate = sres.cache_hit_rate
    return fatal, stuck, hit_rate


def _sync_settings(settings: JobSettings, environ: Mapping[str, str]) -> SyncSettings:
    """The sync path's knobs: defaults, then JUDGECORE_* variables, then the job's own flags."""
    from adapters.sync import SyncSettings

    overrides: dict[str, Any] = {"max_attempts": settings.max_attempts}
    if settings.concurrency:
        overrides["concurrency"] = settings.concurrency
    return SyncSettings.from_env(environ, **overrides)


def _record_for_summary(
    store: Store, items: Sequence[Item], requests: Sequence[Request], settings: JobSettings
) -> None:
    """What `judgecore summary` needs from the checkpoint alone: each item's metadata and the verdict
    spec of this run (a pattern may change between runs; the latest is what `summary` applies)."""
    store.record_metadata((r.custom_id, i.metadata_json) for i, r in zip(items, requests, strict=True))
    store.set_meta("verdict", settings.verdict.to_json() if settings.verdict is not None else None)


def _record_estimate(
    store: Store,
    items: Sequence[Item],
    template: RequestTemplate,
    requests: Sequence[Request],
    chosen: Route,
    rubric: str | None,
    settings: JobSettings,
) -> None:
    """Keep the dry-run's estimate of the whole job on its route, for `status` and `summary` to show
    beside what was spent."""
    subs = _sub_batches(items, requests, settings) if chosen.path == "batch" else ()
    p = plan(
        requests,
        route=chosen,
        sub_batches=subs,
        template=template,
        rubric=rubric,
        max_batch_requests=settings.max_batch_requests,
        max_batch_bytes=settings.max_batch_bytes,
        prices=DEFAULT_PRICES,
    )
    store.set_meta(
        "estimate", {"estimated_cost_usd": p.estimated_cost_usd, "all_sync_cost_usd": p.all_sync_cost_usd}
    )


def _reading_from_json(raw: Mapping[str, Any] | None) -> RateLimitReading | None:
    return RateLimitReading.from_json(raw) if raw else None


def _sub_batches(
    items: Sequence[Item], requests: Sequence[Request], settings: JobSettings
) -> tuple[SubBatch, ...]:
    """The job's sub-batches; an item too large for any of them (it could never run) is a
    `UsageError` naming its line, raised before anything is sent."""
    try:
        return chunk(requests, max_requests=settings.max_batch_requests, max_bytes=settings.max_batch_bytes)
    except RequestTooLargeError as exc:
        line = next((i.line for i in items if i.id == exc.item_id), "?")
        raise UsageError(f"line {line}: {exc}") from None


def _dry_run(
    items: Sequence[Item], *, rubric: str | None, settings: JobSettings, state_dir: Path
) -> JudgeResult:
    """The plan, with no request sent and nothing written: OTPM from the flag, a past probe, or assumed."""
    if not items:
        raise UsageError("the input has no items")
    policy = settings.route_policy
    otpm, source = settings.otpm, "flag"
    if otpm is None and Store.exists(state_dir):
        store = Store.open(state_dir)
        try:
            reading = store.get_meta("rate_limits") or {}
        finally:
            store.close()
        otpm, source = reading.get("output_tokens_limit"), "read"
    chosen = route(len(items), policy=policy, force=settings.force, otpm=otpm, otpm_source=source)  # type: ignore[arg-type]
    template = settings.template(rubric, chosen.path)
    requests = build_requests(items, template)
    subs = _sub_batches(items, requests, settings) if chosen.path == "batch" else ()
    p = plan(
        requests,
        route=chosen,
        sub_batches=subs,
        template=template,
        rubric=rubric,
        max_batch_requests=settings.max_batch_requests,
        max_batch_bytes=settings.max_batch_bytes,
        prices=DEFAULT_PRICES,
    )
    return JudgeResult(exit_code=EXIT_OK, route=chosen, counts={}, records={}, plan=p)


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "JobSettings",
    "JudgeResult",
    "UsageError",
    "ajudge",
    "judge",
    "load_items",
]
