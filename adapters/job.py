"""A whole judge job: parse, checkpoint, probe, route, run the chosen path, write the output.

This is the shell's top level and the Python API (`judge`, `ajudge`); the CLI is a thin layer over it.
It decides nothing itself: the job's plan, routing (and whether a stored route is kept), chunking,
classification and resume are the core's; it performs them in the order the checkpoint promises
require (bind the job before anything is sent; the probe's answer is recorded as that item's result;
the output is written from the checkpoint, atomically, in one streaming pass). A dry run goes through
the same steps on a store opened read-only, and stops where the run would first send.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import hashlib
import math
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never

import attrs
import orjson

from adapters.paths import out_problem, state_problem
from adapters.store import TALLY, Store
from adapters.usage import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL,
    EXIT_FATAL,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_USAGE,
    UsageError,
)
from judgecore.chunking import MAX_BYTES, MAX_REQUESTS, chunk
from judgecore.errors import DuplicateIdError, InputError, RequestTooLargeError
from judgecore.ids import check_unique
from judgecore.items import Item, Items, Request, RoutePath, parse_item
from judgecore.models import (
    Deprecated,
    Retired,
    Thinking,
    default_max_tokens,
    max_tokens_problem,
    standing,
    thinking_problem,
    thinking_room_problem,
)
from judgecore.models import price_for as _table_price
from judgecore.outcomes import ACCOUNT_REFUSED
from judgecore.planning import DEFAULT_PRICES, JobPlan, ModelPrice, Plan, plan, plan_job
from judgecore.report import record_for  # per output line: not imported in the loop
from judgecore.routing import DecideRoute, KeepRoute, Route, RoutePolicy, keep_or_redecide, route

if TYPE_CHECKING:
    import random

    from adapters.clock import Clock
    from adapters.events import Emit
    from adapters.readers import InputKind
    from adapters.sync import SyncSettings
    from judgecore.resume import JobState
    from judgecore.spend import Budget
    from judgecore.verdicts import VerdictSpec

# Only what a dry run needs is imported here. The SDK-facing modules (adapters.batch, adapters.sync
# and their API ports; importing the SDK takes about two seconds), the event loop, the run machines
# and the output's formatting are imported where a run uses them: `--help`, `status` and `--dry-run`
# skip them.


@attrs.frozen(kw_only=True)
class JobSettings:
    """Every knob of a run, with the defaults of CONTRACT.md."""

    model: str = DEFAULT_MODEL
    #: `--thinking adaptive|off|N` (a `Thinking`, or the flag's text, or N as an int); None: the
    #: request omits `thinking` and the model does what it does by default.
    thinking: Thinking | None = attrs.field(default=None, converter=attrs.converters.optional(Thinking.parse))
    #: Default: 1,024, or room for thinking (16,000) where the model thinks (`default_max_tokens`).
    max_tokens: int = attrs.field(
        default=attrs.Factory(lambda self: default_max_tokens(self.model, self.thinking), takes_self=True)
    )
    force: RoutePath | None = None
    sync_threshold: int = 2000
    otpm: int | None = None
    max_batch_requests: int = MAX_REQUESTS
    max_batch_bytes: int = MAX_BYTES
    poll_interval: float = 60.0
    grace: float = 1800.0
    concurrency: int | None = None
    max_attempts: int = 3
    seed: int | None = None
    #: How answers are read into verdicts (`--verdict FILE`); None: no verdicts.
    verdict: VerdictSpec | None = None
    #: A hard cap in US dollars (`--budget USD`); None: no cap.
    budget: float | None = None
    #: The date deprecations and retirements are judged on; None: today's UTC date, read by the shell
    #: when the job is planned. Never part of the manifest.
    today: datetime.date | None = attrs.field(default=None, eq=False)

    def __attrs_post_init__(self) -> None:
        max_tokens = max_tokens_problem(self.model, self.max_tokens) if self.max_tokens >= 1 else None
        thinking = (
            thinking_problem(self.model, self.thinking, self.max_tokens)
            if self.thinking is not None
            else None
        )
        checks = [
            (bool(self.model.strip()), "--model must be a non-empty model id"),
            (self.max_tokens >= 1, "--max-tokens must be >= 1"),
            (max_tokens is None, f"--max-tokens: {max_tokens}"),
            (thinking is None, f"--thinking: {thinking}"),
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
                self.budget is None or _table_price(self.model) is not None,
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
        if self.thinking is not None:  # likewise: only when set
            manifest["thinking"] = self.thinking.param()
        return manifest

    def on_date(self) -> datetime.date:
        """The date the job's model is judged on: `today`, or the shell's UTC date now."""
        return self.today or datetime.datetime.now(datetime.UTC).date()

    def warnings(self) -> tuple[str, ...]:
        """What the user should know before anything is sent (a deprecated model, too little room for
        thinking); a retired model is a `UsageError` instead (exit 2, naming the replacement)."""
        out: list[str] = []
        match standing(self.model, self.on_date()):
            case Retired() as retired:
                raise UsageError(f"--model: {retired}")
            case Deprecated() as deprecated:
                out.append(str(deprecated))
            case None:
                pass
        room = thinking_room_problem(self.model, self.thinking, self.max_tokens)
        if room is not None:
            out.append(room)
        return tuple(out)


@attrs.frozen
class Fatal:
    """Why a run stopped early (exit 4): a fatal API configuration, or an account state (the API
    refused the account: on hold, a spend limit, billing; nothing quarantined). One line for the user."""

    reason: str

    @property
    def account(self) -> bool:
        """The API refused the account (`judgecore.outcomes.stop_line`): the items stay pending."""
        return self.reason.startswith(ACCOUNT_REFUSED)

    def __str__(self) -> str:
        return self.reason


@attrs.frozen(kw_only=True)
class JudgeResult:
    """What a run ended with. `records` maps item id -> its output object (CONTRACT.md's shape); it is
    empty when the run was asked not to keep them (`keep_records=False`: the output file has them)."""

    exit_code: int
    route: Route | None
    counts: Mapping[str, int]
    # never in the repr: asyncio formats a finished task's result, and 90,000 records took seconds
    records: Mapping[str, dict[str, Any]] = attrs.field(repr=lambda r: f"<{len(r):,} records>")
    fatal: Fatal | None = None
    stuck_batches: tuple[str, ...] = ()
    output_path: Path | None = None
    cache_hit_rate: float | None = None
    plan: Plan | None = None
    #: US dollars: the job's answers so far (earlier runs included), the same answers all-sync, and the
    #: dry-run estimate of the whole job on its route; None where the model has no price.
    spend_usd: float | None = None
    all_sync_usd: float | None = None
    estimate_usd: float | None = None

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame, one row per item in input order (the `data` extra)."""
        from adapters.writers import records_frame

        return records_frame(self.records.values())


def input_error(source: Path | str | None, line: int | None, reason: str) -> UsageError:
    """The one place `FILE:LINE: reason` is assembled (`line N: reason` with no file)."""
    if line is None:
        return UsageError(f"{source}: {reason}" if source is not None else reason)
    return UsageError(f"{source}:{line}: {reason}" if source is not None else f"line {line}: {reason}")


@contextlib.contextmanager
def _bulk_allocation() -> Iterator[None]:
    """No cyclic garbage collection while a job's items and requests are built: they are hundreds of
    thousands of acyclic objects, and each collection pass would walk all those made so far (about a
    third of the time of parsing 100,000 lines)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_items(
    path: Path,
    *,
    hold_messages: bool = True,
    digests: bool = True,
    job: str | None = None,
    kind: InputKind | None = None,
) -> Items:
    """Parse an input file (JSONL, CSV, Parquet, a saved dataset, an inspect_ai log: `kind`, else by
    its name; see `adapters.readers`); `UsageError` with `FILE:LINE: reason` on the first bad row.

    `hold_messages=False` (the CLI's run): the items keep each message's size and digest, not the
    messages; the run reads them from `path` again to keep them in its checkpoint
    (`adapters.messages.InputMessages`), so no run holds its whole input in memory. `digests=False`
    as well (a dry run on a fresh state dir): only the sizes are kept. `job`: the job key of the
    custom_ids (`adapters.store.ids_job_for`)."""
    from adapters.readers import input_kind, input_lines
    from judgecore import parse_items

    kind = kind or input_kind(path)
    try:
        with contextlib.closing(input_lines(path, kind)) as lines, _bulk_allocation():
            items = parse_items(lines, hold_messages=hold_messages, digests=digests, job=job)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (InputError, DuplicateIdError) as exc:
        raise input_error(path, exc.line, exc.reason) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc})") from None
    if not items:
        raise UsageError(f"{path}: the input has no items")
    if hold_messages:
        return items
    from adapters.messages import InputMessages

    return items.with_message_column(InputMessages(path, len(items), kind=kind))


def items_from_objects(objects: Iterable[Mapping[str, Any] | Item]) -> tuple[Item, ...]:
    """Items from Python objects shaped like input lines (or `Item`s), or from the rows of a pandas
    DataFrame (`adapters.readers.row_object`), validated as the CLI would."""
    from adapters.readers import frame_lines, is_frame

    out: list[Item] = []
    try:
        rows: Iterable[Mapping[str, Any] | Item | bytes] = (
            frame_lines(objects) if is_frame(objects) else objects
        )
        for n, obj in enumerate(rows, start=1):
            if isinstance(obj, Item):
                out.append(obj)
                continue
            item = parse_item(n, obj if isinstance(obj, bytes) else orjson.dumps(dict(obj)))
            if item is not None:
                out.append(item)
        check_unique([i.id for i in out], [i.custom_id for i in out], [i.line for i in out])
    except (InputError, DuplicateIdError) as exc:
        raise input_error(None, exc.line, exc.reason) from None
    return tuple(out)


def write_output_atomic(path: Path, lines: Iterable[bytes]) -> None:
    """Write JSONL to a temp file in the same directory, fsync, then rename over `path`."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as f:
            for line in lines:
                f.write(line)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def iter_records(
    store: Store, items: Sequence[Item], verdict: VerdictSpec | None = None
) -> Iterator[dict[str, Any]]:
    """Every item's output object from the checkpoint, in input order, streamed in one pass.

    The checkpoint lists a job's items in the order they were first bound, which is the input's on
    every rerun of the same file; a row out of that order (items added or moved in the input) waits
    in a small buffer until its item comes. An item with no outcome yet is reported on the job's
    route (sync before one is decided); one that sits in a live batch names it. `verdict` reads each
    succeeded answer's verdict.
    """
    default_route = (store.get_meta("route") or {}).get("path", "sync")
    waiting = store.waiting_batches()
    cols = Items.of(items)  # its columns: the messages (perhaps in the checkpoint only) are not read
    wanted = set(cols.custom_ids)
    early: dict[str, tuple[Any, ...]] = {}
    rows = store.latest()
    for item_id, cid, metadata_json in zip(cols.ids, cols.custom_ids, cols.metadata_json, strict=True):
        row = early.pop(cid, None)
        while row is None:
            got = next(rows, None)
            if got is None:
                row = (None, None, None, 0)
            elif got[0] == cid:
                row = tuple(got[1:])
            elif got[0] in wanted:
                early[got[0]] = tuple(got[1:])
        yield stored_record(
            item_id,
            cid,
            metadata_json,
            row,
            default_route=default_route,
            waiting=waiting,
            verdict=verdict,
        )


def stored_record(
    item_id: str,
    custom_id: str,
    metadata_json: bytes | None,
    row: Sequence[Any],
    *,
    default_route: str,
    waiting: Mapping[str, str],
    verdict: VerdictSpec | None,
) -> dict[str, Any]:
    """One output object from the checkpoint's row for an item (`Store.latest()`'s outcome, route,
    batch id and attempts); an item not final yet names the live batch it waits in, if any."""
    outcome, route_used, batch_id, attempts = row
    return record_for(
        item_id,
        custom_id,
        metadata_json,
        outcome,
        route=route_used or default_route,
        batch_id=batch_id,
        attempts=attempts,
        verdict_spec=verdict,
        waiting_in=waiting.get(custom_id) if outcome is None or not outcome.final else None,
    )


def collect_records(
    store: Store, items: Sequence[Item], verdict: VerdictSpec | None = None
) -> dict[str, dict[str, Any]]:
    """Every item's output object, from the checkpoint, keyed by item id (input order kept)."""
    return {r["id"]: r for r in iter_records(store, items, verdict)}


@attrs.frozen(kw_only=True)
class _Written:
    counts: Mapping[str, int]
    records: Mapping[str, dict[str, Any]]


def _write_output(
    store: Store,
    items: Sequence[Item],
    out: Path | None,
    *,
    keep: bool,
    verdict: VerdictSpec | None = None,
    reuse: bool = False,
) -> _Written:
    """Stream the checkpoint into the output file (when `out`), counting statuses; keep the records
    in memory only when asked (the Python API returns them; the CLI has the file).

    With `reuse` (a job whose items were all final before this run) an output file that is exactly
    the one the last run wrote from this checkpoint is left as it is: same path, size and mtime, no
    outcome recorded since, the items in the same order, the same verdict spec (see `_output_stamp`).
    """
    if reuse and not keep and out is not None:
        kept = store.get_meta("output") or {}
        if kept.get("stamp") is not None and kept["stamp"] == _output_stamp(store, items, out, verdict):
            return _Written(counts=kept["counts"], records={})
    counts = dict.fromkeys(TALLY, 0)
    records: dict[str, dict[str, Any]] = {}

    def rows() -> Iterator[dict[str, Any]]:
        for r in iter_records(store, items, verdict):
            counts[r["status"]] += 1
            if keep:
                records[r["id"]] = r
            yield r

    if out is not None:
        from adapters.writers import write_records

        write_records(out, rows())  # in the format of its extension
        store.set_meta("output", {"stamp": _output_stamp(store, items, out, verdict), "counts": counts})
    else:
        for _ in rows():
            pass
    return _Written(counts=counts, records=records)


def _output_stamp(
    store: Store, items: Sequence[Item], out: Path, verdict: VerdictSpec | None
) -> dict[str, Any] | None:
    """What an output file written from this checkpoint depends on, and the file as it stands; None
    when there is no file."""
    try:
        st = out.stat()
    except OSError:
        return None
    order = hashlib.blake2b("\n".join(Items.of(items).custom_ids).encode(), digest_size=16).hexdigest()
    return {
        "out": str(out.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "rows": store.last_outcome_row(),
        "order": order,
        "verdict": verdict.to_json() if verdict is not None else None,
    }


def exit_code_for(counts: Mapping[str, int], fatal: Fatal | None) -> int:
    if fatal is not None:
        return EXIT_FATAL
    if counts.get("pending"):
        return EXIT_PENDING
    return EXIT_OK


def _job_of(
    items: Sequence[Item] | Iterable[Mapping[str, Any]],
    *,
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
) -> JobPlan:
    """The job's items, checked against the settings, with the custom_ids of the job `state_dir`
    holds (or of a new one), and its plan, built once (a run and a dry run)."""
    if not isinstance(items, Items):  # a tuple may hold dicts as well as `Item`s: each is checked
        items = items_from_objects(items)  # type: ignore[arg-type]
    from adapters.messages import boxed
    from adapters.store import ids_job_for

    items = Items.of(items)
    if items.job is None or Store.exists(state_dir):  # the CLI derived a new dir's key already
        try:
            items = items.for_job(ids_job_for(state_dir, settings.manifest(rubric)))
        except DuplicateIdError as exc:
            raise input_error(None, exc.line, exc.reason) from None
    items = boxed(items)  # a run hands the messages to its checkpoint (adapters.messages)
    if not items:
        raise UsageError("the input has no items")
    warnings = settings.warnings()  # a retired model: exit 2 here, before anything is sent
    for k, mt in enumerate(items.max_tokens):
        if mt is not None and (problem := max_tokens_problem(settings.model, mt)):
            raise input_error(None, items.lines[k], f"item {items.ids[k]!r}: {problem}")
        if (
            mt is not None
            and settings.thinking is not None
            and (problem := thinking_problem(settings.model, settings.thinking, mt))
        ):
            raise input_error(None, items.lines[k], f"item {items.ids[k]!r}: {problem}")
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    with _bulk_allocation():
        return _plan_job(items, rubric=rubric, settings=settings)


def judge_dry_run(
    items: Sequence[Item] | Iterable[Mapping[str, Any]],
    *,
    rubric: str | None,
    state_dir: Path | str,
    settings: JobSettings = JobSettings(),
) -> JudgeResult:
    """What `judge(..., dry_run=True)` returns (the plan, nothing sent, nothing written), without an
    event loop: a dry run awaits nothing, so `judgecore run --dry-run` does not import asyncio."""
    job = _job_of(items, rubric=rubric, settings=settings, state_dir=Path(state_dir))
    return _dry_run(job, rubric=rubric, settings=settings, state_dir=Path(state_dir))


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
    progress: Emit | None = None,
    environ: Mapping[str, str] | None = None,
    keep_records: bool = True,
    invocation: Mapping[str, Any] | None = None,
) -> JudgeResult:
    """Run (or resume) a judge job; see `judge` for the arguments. `invocation`: how the CLI started
    it, kept in the checkpoint once the job is bound (`judgecore run --state DIR` alone resumes it)."""
    state_dir = Path(state_dir)
    job = _job_of(items, rubric=rubric, settings=settings, state_dir=state_dir)
    if dry_run:
        return _dry_run(job, rubric=rubric, settings=settings, state_dir=state_dir)
    from adapters.events import discard

    # The job's items and requests live as long as the run: kept out of every collection pass of the
    # run (which would walk them all again and again), and given back at the end.
    frozen_here = gc.get_freeze_count() == 0
    if frozen_here:
        gc.freeze()
    try:
        return await _run(
            job,
            rubric=rubric,
            state_dir=state_dir,
            settings=settings,
            client=client,
            out=out,
            clock=clock,
            emit=progress if progress is not None else discard,
            environ=environ,
            keep_records=keep_records,
            invocation=invocation,
        )
    finally:
        if frozen_here:
            gc.unfreeze()


async def _run(
    job: JobPlan,
    *,
    rubric: str | None,
    state_dir: Path,
    settings: JobSettings,
    client: Any,
    out: Path | str | None,
    clock: Clock | None,
    emit: Emit,
    environ: Mapping[str, str] | None,
    keep_records: bool,
    invocation: Mapping[str, Any] | None = None,
) -> JudgeResult:
    """The run itself: bind the job, keep or decide its route, run it, write the output."""
    import random

    from adapters.clock import RealClock
    from adapters.events import Notice

    items = job.items
    clock = clock or RealClock()
    environ = os.environ if environ is None else environ
    rng = random.Random(settings.seed)
    from adapters.writers import output_problem

    problem = state_problem(state_dir, create=True) or (
        (out_problem(Path(out), state=state_dir) or output_problem(Path(out))) if out is not None else None
    )
    if problem:
        raise UsageError(problem)
    from adapters.statelock import StateLockedError

    try:
        store = Store.open(state_dir, exclusive="run")  # one run per state dir, until it closes
    except StateLockedError as exc:
        raise UsageError(str(exc)) from None
    try:
        from adapters.store import ContentConflictError, StateMismatchError

        try:
            store.bind_job(settings.manifest(rubric), items.bindings(), ids_job=items.job)
        except (StateMismatchError, ContentConflictError) as exc:
            raise UsageError(str(exc)) from None
        if invocation is not None:
            store.set_meta("invocation", dict(invocation))
        _record_for_summary(store, job, settings)
        history = _History.read(store)
        ran = _Ran()
        finished = job.finished(history.state)
        if finished:
            # Nothing to send or wait for: no client, no SDK import, no route to decide.
            chosen, fatal = history.stored, None
            emit(Notice(level="info", message="every item is final already: nothing to send"))
        else:
            try:
                sync_settings = _sync_settings(settings, environ)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            client = client or _default_client(environ)
            from adapters.messages import InputChangedError, hand_to_checkpoint

            try:
                hand_to_checkpoint(store, job)  # the run reads back what it sends: none held in memory
            except InputChangedError as exc:
                raise UsageError(str(exc)) from None
            choice = await _choose_route(
                store, job, history, settings, sync_settings, client, clock, emit, rng
            )
            _record_estimate(store, job, choice.route, rubric, settings)
            if choice.fatal is None:
                ran = await _run_route(choice, store, job, settings, sync_settings, client, clock, emit, rng)
            chosen, fatal = choice.route, choice.fatal or ran.fatal
        written = _write_output(
            store,
            items,
            Path(out) if out is not None else None,
            keep=keep_records,
            verdict=settings.verdict,
            reuse=finished,
        )
        from adapters.summary import spend_from_store

        money = spend_from_store(store)
        return JudgeResult(
            exit_code=exit_code_for(written.counts, fatal),
            route=chosen,
            counts=written.counts,
            records=written.records,
            fatal=fatal,
            stuck_batches=ran.stuck,
            output_path=Path(out) if out is not None else None,
            cache_hit_rate=ran.cache_hit_rate,
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
    progress: Emit | None = None,
    environ: Mapping[str, str] | None = None,
) -> JudgeResult:
    """Judge `items` (objects shaped like input lines: `{"id", "prompt" | "messages", ...}`).

    Runs the whole job, or resumes it from `state_dir`, and returns a `JudgeResult` whose `records`
    map each item id to its output object. `client` is an `anthropic.AsyncAnthropic` (built from
    the environment when None); `out`, when given, also writes the output JSONL atomically.
    `progress` receives the run's events (`adapters.events`) as they happen, e.g. `print` or
    `adapters.progress.PlainProgress()` (None: they are dropped).
    Raises `UsageError` on bad input or a state dir of another job, before anything is sent; inside
    a running event loop (a notebook, an async app), use `await ajudge(...)` instead.
    """
    import asyncio

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


def _default_client(environ: Mapping[str, str]) -> Any:
    import anthropic

    if not environ.get("ANTHROPIC_API_KEY") and not environ.get("ANTHROPIC_AUTH_TOKEN"):
        raise UsageError("ANTHROPIC_API_KEY is not set (nothing was sent); `judgecore demo` needs no key")
    # Our own loops own every retry (see adapters/sync_api.py and adapters/batch_api.py); the SDK's
    # retries are set per call there, so the client default does not matter for correctness.
    return anthropic.AsyncAnthropic(max_retries=0)


def _plan_job(items: Sequence[Item], *, rubric: str | None, settings: JobSettings) -> JobPlan:
    """The job's plan, once; an item too large for any sub-batch (when batches are possible) is a
    `UsageError` naming its line, before anything is sent."""
    try:
        return plan_job(
            items,
            model=settings.model,
            max_tokens=settings.max_tokens,
            rubric=rubric,
            max_batch_bytes=None if settings.force == "sync" else settings.max_batch_bytes,
            output_config=settings.verdict.output_config() if settings.verdict is not None else None,
            thinking=settings.thinking,
        )
    except RequestTooLargeError as exc:
        raise input_error(None, exc.line, exc.reason) from None


# -- the route ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class _History:
    """What the checkpoint says about a job before this run acts: its stored route, the tier last
    read, and where its items stand."""

    stored: Route | None
    otpm_read: int | None
    state: JobState
    any_batch: bool

    @property
    def answered(self) -> bool:
        """Something of the job was answered (a final outcome) or may be (a batch was created)."""
        return bool(self.state.final) or self.any_batch

    @classmethod
    def read(cls, store: Store) -> _History:
        raw = store.get_meta("route")
        reading = store.get_meta("rate_limits") or {}
        limit = reading.get("output_tokens_limit")
        return cls(
            stored=Route(**raw) if raw else None,
            otpm_read=int(limit) if limit else None,
            state=store.job_state(),
            any_batch=bool(store.sub_batches()),
        )


@attrs.frozen(kw_only=True)
class _RouteChoice:
    """The route this run takes; a fatal error met while deciding it (the probe's); and whether the
    probe was answered in this run (it wrote the prompt cache, so the sync path needs no warm-up)."""

    route: Route
    in_flight: frozenset[str] = frozenset()
    fatal: Fatal | None = None
    warmed: bool = False
    contacted: bool = False
    spent: str | None = None


@attrs.frozen(kw_only=True)
class _Probed:
    """What the probe found: the tier, a fatal stop, whether its answer wrote the prompt cache, whether
    the API answered it at all (the run has had its first contact), and the custom_id whose per-run
    send budget the probe spent (it stays pending: this run does not send it again)."""

    otpm: int | None
    fatal: Fatal | None = None
    warmed: bool = False
    contacted: bool = False
    spent: str | None = None


async def _choose_route(
    store: Store,
    job: JobPlan,
    history: _History,
    settings: JobSettings,
    sync_settings: SyncSettings,
    client: Any,
    clock: Clock,
    emit: Emit,
    rng: random.Random,
) -> _RouteChoice:
    """Keep the job's stored route, or decide it now (`judgecore.routing.keep_or_redecide`), probing
    the tier when neither a force nor `--otpm` says it; a decided route is recorded."""
    from adapters.events import Notice

    n = len(job.requests)
    decision = keep_or_redecide(history.stored, n=n, force=settings.force, answered=history.answered)
    match decision:
        case KeepRoute(route=kept):
            return _RouteChoice(route=kept, in_flight=history.state.in_flight)
        case DecideRoute(why=why):
            pass
        case _:  # pragma: no cover
            assert_never(decision)
    if history.stored is not None:
        emit(Notice(level="info", message=f"route decided again: {why}"))
    probed = _Probed(otpm=None)
    if settings.force is None and settings.otpm is None:
        probed = await _probe(store, job, history, settings, sync_settings, clock, client, emit, rng)
    chosen = _route_now(n, settings, probed.otpm)
    emit(Notice(level="info", message=f"route: {chosen.path} ({chosen.reason})"))
    store.set_meta("route", attrs.asdict(chosen))
    return _RouteChoice(
        route=chosen,
        in_flight=history.state.in_flight,
        fatal=probed.fatal,
        warmed=probed.warmed,
        contacted=probed.contacted,
        spent=probed.spent,
    )


def _route_now(n: int, settings: JobSettings, otpm_read: int | None) -> Route:
    """A route decided in this run (the run and the dry run alike): forced, from `--otpm`, or from
    the tier read (by this run's probe or an earlier one); with none of them, on the assumed tier."""
    policy = settings.route_policy
    if settings.force is not None:
        return route(n, policy=policy, force=settings.force, otpm=settings.otpm, otpm_source="flag")
    if settings.otpm is not None:
        return route(n, policy=policy, otpm=settings.otpm, otpm_source="flag")
    return route(n, policy=policy, otpm=otpm_read)


async def _probe(
    store: Store,
    job: JobPlan,
    history: _History,
    settings: JobSettings,
    sync_settings: SyncSettings,
    clock: Clock,
    client: Any,
    emit: Emit,
    rng: random.Random,
) -> _Probed:
    """Send the first unfinished item alone: the sync run machine limited to it (retry-after, backoff,
    `--max-attempts`, the breaker), its answer recorded; the tier its rate-limit headers reveal (a
    reading kept from an earlier run is used instead when there is one)."""
    if history.otpm_read is not None:
        return _Probed(otpm=history.otpm_read)
    final = history.state.final
    first_id = next((c for c in job.requests.custom_ids if c not in final), None)
    if first_id is None:
        return _Probed(otpm=None)
    from adapters.events import Notice
    from adapters.messages import hydrate
    from adapters.sync import probe
    from adapters.sync_api import AnthropicMessagesApi
    from judgecore.outcomes import Status

    first = hydrate(store, job.requests.select([first_id]))[0]
    result = await probe(
        store=store,
        api=AnthropicMessagesApi(client, timeout=sync_settings.request_timeout),
        request=first,
        template=job.sync_template,
        clock=clock,
        settings=sync_settings,
        emit=emit,
        rng=rng,
        budget=_budget_now(store, settings),
        price=_price(settings),
    )
    rl, outcome = result.reading, result.outcome
    store.set_meta("rate_limits", rl.to_json())
    if result.fatal is not None or outcome is None:
        return _Probed(otpm=None, fatal=Fatal(result.fatal) if result.fatal else None)
    otpm = rl.otpm
    what = "answered" if outcome.final else f"came back {outcome.reason}; it will be sent again"
    tier = f"output tokens/min limit {otpm:,}" if otpm else "no tier reading, so 400,000 OTPM is assumed"
    emit(Notice(level="info", message=f"probe: {first.item_id} {what}; {tier}"))
    return _Probed(
        otpm=int(otpm) if otpm else None,
        warmed=outcome.status is Status.SUCCEEDED,
        contacted=True,
        spent=first.custom_id if outcome.status is Status.RETRY else None,
    )


# -- the run -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class _Ran:
    """What running the route did: a fatal stop, batches left stuck, the sync path's cache hit rate."""

    fatal: Fatal | None = None
    stuck: tuple[str, ...] = ()
    cache_hit_rate: float | None = None


async def _run_route(
    choice: _RouteChoice,
    store: Store,
    job: JobPlan,
    settings: JobSettings,
    sync_settings: SyncSettings,
    client: Any,
    clock: Clock,
    emit: Emit,
    rng: random.Random,
) -> _Ran:
    """Run the chosen route; live batches of an earlier run are always polled, whatever the route now."""
    path = choice.route.path
    batch_requests = job.requests
    if path == "sync":
        batch_requests = job.requests.only(choice.in_flight)
    ran = _Ran()
    if batch_requests:
        from adapters.batch import BatchSettings, run_batch
        from adapters.batch_api import AnthropicBatchApi
        from judgecore.polling import PollPolicy

        bset = BatchSettings(
            max_batch_requests=settings.max_batch_requests,
            max_batch_bytes=settings.max_batch_bytes,
            poll=PollPolicy(interval=settings.poll_interval, grace=settings.grace),
            max_attempts=settings.max_attempts,
        )
        res = await run_batch(
            store=store,
            requests=batch_requests,
            template=job.batch_template,
            api=AnthropicBatchApi(client),
            clock=clock,
            settings=bset,
            emit=emit,
            rng=rng,
            total=len(job.requests),
            budget=_budget_now(store, settings),
            price=_price(settings),
        )
        ran = _Ran(fatal=Fatal(res.fatal) if res.fatal else None, stuck=tuple(res.stuck))
    if path == "sync" and ran.fatal is None:
        from adapters.messages import hydrate
        from adapters.sync import run_sync
        from adapters.sync_api import AnthropicMessagesApi
        from judgecore.ratelimit import RateLimitReading

        raw = store.get_meta("rate_limits")
        reading = RateLimitReading.from_json(raw) if raw else None
        if reading is None and settings.otpm is not None:
            reading = RateLimitReading.for_otpm(settings.otpm)
        sres = await run_sync(
            store=store,
            requests=tuple(hydrate(store, job.requests.only(set(job.requests.custom_ids) - {choice.spent}))),
            template=job.sync_template,
            api=AnthropicMessagesApi(client, timeout=sync_settings.request_timeout),
            clock=clock,
            settings=sync_settings,
            emit=emit,
            rng=rng,
            reading=reading,
            warm_up=not choice.warmed,
            contacted=choice.contacted,
            budget=_budget_now(store, settings),
            price=_price(settings),
        )
        ran = attrs.evolve(
            ran, fatal=Fatal(sres.fatal) if sres.fatal else None, cache_hit_rate=sres.cache_hit_rate
        )
    return ran


def _budget_now(store: Store, settings: JobSettings) -> Budget | None:
    """The `--budget` cap as it stands now: the job's spend so far in the checkpoint (earlier runs and
    this run's earlier phases, the probe included) against the cap; None without a cap."""
    if settings.budget is None:
        return None
    from adapters.summary import budget_from_store

    return budget_from_store(store, settings.budget)


def _price(settings: JobSettings) -> ModelPrice | None:
    """The model's prices when a budget needs them (`JobSettings` refuses a budget without them)."""
    from judgecore.spend import price_for

    return price_for(settings.model) if settings.budget is not None else None


def _sync_settings(settings: JobSettings, environ: Mapping[str, str]) -> SyncSettings:
    """The sync path's knobs: defaults, then JUDGECORE_* variables, then the job's own flags."""
    from adapters.sync import SyncSettings

    overrides: dict[str, Any] = {"max_attempts": settings.max_attempts}
    if settings.concurrency:
        overrides["concurrency"] = settings.concurrency
    return SyncSettings.from_env(environ, **overrides)


def _record_for_summary(store: Store, job: JobPlan, settings: JobSettings) -> None:
    """What `judgecore summary` needs from the checkpoint alone: each item's metadata and the verdict
    spec of this run (a pattern may change between runs; the latest is what `summary` applies)."""
    store.record_metadata(zip(job.items.custom_ids, job.items.metadata_json, strict=True))
    store.set_meta("verdict", settings.verdict.to_json() if settings.verdict is not None else None)


def _record_estimate(
    store: Store, job: JobPlan, chosen: Route, rubric: str | None, settings: JobSettings
) -> None:
    """Keep the dry-run's estimate of the whole job on its route, for `status` and `summary` to show
    beside what was spent."""
    p = _plan_of(job, job.requests, chosen, rubric, settings)
    store.set_meta(
        "estimate", {"estimated_cost_usd": p.estimated_cost_usd, "all_sync_cost_usd": p.all_sync_cost_usd}
    )


def _plan_of(
    job: JobPlan,
    requests: Sequence[Request],
    chosen: Route,
    rubric: str | None,
    settings: JobSettings,
    *,
    final: int = 0,
    live: int = 0,
) -> Plan:
    """The plan of sending `requests` of `job` on `chosen` (chunked into sub-batches on the batch
    route), with `final` and `live` items counted, not sent: what the dry run prints and a run's
    estimate."""
    subs = (
        chunk(requests, max_requests=settings.max_batch_requests, max_bytes=settings.max_batch_bytes)
        if chosen.path == "batch"
        else ()
    )
    return plan(
        requests,
        route=chosen,
        sub_batches=subs,
        template=job.template(chosen.path),
        rubric=rubric,
        max_batch_requests=settings.max_batch_requests,
        max_batch_bytes=settings.max_batch_bytes,
        prices=DEFAULT_PRICES,
        final=final,
        live=live,
        thinking=settings.thinking,
        warnings=settings.warnings(),
    )


# -- the dry run -------------------------------------------------------------------------------


def _dry_run(job: JobPlan, *, rubric: str | None, settings: JobSettings, state_dir: Path) -> JudgeResult:
    """The plan of what the run would do, with nothing sent and nothing written.

    On an existing state dir (opened read-only) it is checked as the run checks it (another job's
    manifest, an item changed under its id: exit 2), its route is kept or decided again as the run
    would (`keep_or_redecide`), and only what is left is planned: items final or live in a batch
    are counted, not sent. A route to decide takes its tier from `--otpm`, a reading from an earlier
    run, or the assumed 400,000 (a dry run never probes).
    """
    history = None
    if Store.exists(state_dir):
        from adapters.store import ContentConflictError, StateMismatchError

        store = Store.open_readonly(state_dir)
        try:
            store.check_job(settings.manifest(rubric), job.items.bindings(), ids_job=job.items.job)
            history = _History.read(store)
        except (StateMismatchError, ContentConflictError) as exc:
            raise UsageError(str(exc)) from None
        finally:
            store.close()
    n = len(job.requests)
    decision = keep_or_redecide(
        history.stored if history else None,
        n=n,
        force=settings.force,
        answered=history.answered if history else False,
    )
    if isinstance(decision, KeepRoute):
        chosen = decision.route
    else:
        chosen = _route_now(n, settings, history.otpm_read if history else None)
    left: Sequence[Request] = job.requests
    n_final = n_live = 0
    if history is not None:
        final, live = history.state.final, history.state.in_flight
        cids = job.requests.custom_ids
        n_final = sum(1 for c in cids if c in final)
        n_live = sum(1 for c in cids if c in live and c not in final)
        left = job.requests.only(frozenset(c for c in cids if c not in final and c not in live))
    p = _plan_of(job, left, chosen, rubric, settings, final=n_final, live=n_live)
    return JudgeResult(exit_code=EXIT_OK, route=chosen, counts={}, records={}, plan=p)


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "EXIT_FATAL",
    "EXIT_OK",
    "EXIT_PENDING",
    "EXIT_USAGE",
    "Fatal",
    "JobSettings",
    "JudgeResult",
    "UsageError",
    "ajudge",
    "collect_records",
    "input_error",
    "iter_records",
    "judge",
    "judge_dry_run",
    "load_items",
    "write_output_atomic",
]
