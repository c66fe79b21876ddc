"""A run's messages: kept in the checkpoint once the job is bound, then read back for what it sends."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.store import Store
from adapters.files.checkpointed import CheckpointMessages, hand_to_checkpoint
from adapters.files.messages import HeldMessages, InputChangedError, split_messages
from judgecore.decide.planning import JobPlan, plan_job
from judgecore.job.items import Items, MessagesNotHeldError
from judgecore.job.parsing import parse_items


def _items(n: int, *, long: bool = False) -> Items:
    lines = [
        orjson.dumps({"id": f"q{i}", "prompt": f"answer {i} é 東" + ("x" * 3000 if long else "")})
        for i in range(n)
    ]
    return parse_items(lines)


def _plan(items: Items) -> JobPlan:
    return plan_job(items, model="claude-sonnet-4-6", max_tokens=64, rubric="Grade.", max_batch_bytes=None)


def test_the_checkpoint_gives_back_each_requests_own_messages_in_any_order_and_number(tmp_path: Path) -> None:
    """Once handed over, the source holds no messages; any view of the job's requests (more ids than
    one query binds, in any order) reads back exactly the bytes the items held."""
    held = _items(1_203)
    job_input = split_messages(held)
    job = _plan(job_input.items)
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, job.items.bindings())
        hand_to_checkpoint(store, job, job_input.messages)
        assert isinstance(job_input.messages, HeldMessages) and job_input.messages.released
        with pytest.raises(MessagesNotHeldError):
            job.items[0]
        order = list(reversed(job.requests.custom_ids))[::2] + list(job.requests.custom_ids)[:7]
        by_id = dict(zip(held.custom_ids, held.messages(), strict=True))
        assert [by_id[c] for c in order] == list(CheckpointMessages(store, order))
        assert [by_id[c] for c in order] == store.messages_of(order)
    finally:
        store.close()


def test_a_rerun_keeps_only_the_messages_not_kept_yet(tmp_path: Path) -> None:
    """Items added to a job are kept on the next run; those kept already are not written again."""
    small, big = _items(5), _items(9)
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, small.bindings())
        hand_to_checkpoint(store, _plan(small), HeldMessages(small.messages()))
        store.bind_job({"m": 1}, big.bindings())
        assert list(big.custom_ids[5:]) == store.messages_missing()
        hand_to_checkpoint(store, _plan(big), HeldMessages(big.messages()))
        assert [] == store.messages_missing()
        assert list(big.messages()) == store.messages_of(list(big.custom_ids))
    finally:
        store.close()


def test_a_plan_holds_no_messages_and_a_run_s_items_none_either() -> None:
    """The requests never carry messages; `without_messages` keeps the items' digests, so the job
    binds the same, and the plan is otherwise the same value."""
    items = _items(3)
    job = _plan(items)
    lean = job.without_messages()
    assert items.messages_json is not None and lean.items.messages_json is None
    assert list(job.items.bindings()) == list(lean.items.bindings())
    assert (job.requests, job.batch_template) == (lean.requests, lean.batch_template)
    assert lean is lean.without_messages()
    assert not hasattr(job.requests[0], "messages_json")


def test_a_create_body_streamed_from_the_checkpoint_is_the_body_of_the_requests_held(tmp_path: Path) -> None:
    """A create body whose requests' messages are read back a slice at a time as it streams is byte
    for byte the body of the same requests with their messages in memory, and its declared size is
    its length; each pass reads them afresh, a slice at a time."""
    from adapters.files.checkpointed import HYDRATE_SLICE
    from adapters.providers.anthropic.batch_api import CreateBody
    from judgecore.wire.chunking import body_size
    from judgecore.wire.encoding import create_body

    items = _items(2 * HYDRATE_SLICE + 37, long=True)
    job = _plan(items)
    view = job.requests[5:]
    want = create_body(view, job.batch_template, items.messages()[5:])
    store = Store.open(tmp_path / "s")
    reads: list[int] = []
    try:
        store.bind_job({"m": 1}, job.items.bindings())
        hand_to_checkpoint(store, job, HeldMessages(items.messages()))
        read = store.messages_of

        def counted(custom_ids: list[str]) -> list[bytes]:
            reads.append(len(custom_ids))
            return read(custom_ids)

        store.messages_of = counted  # type: ignore[method-assign]
        messages = CheckpointMessages(store, view.custom_ids)
        body = CreateBody(view, job.batch_template, messages, size=body_size(view.sizes))
        assert want == b"".join(body.chunks()) == bytes(body)
        assert len(want) == body.size
        assert max(reads) == HYDRATE_SLICE and sum(reads) == 2 * len(view)
    finally:
        store.close()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_items_parsed_without_their_messages_keep_them_from_the_input_read_again(tmp_path: Path) -> None:
    """The CLI's run parses the input keeping sizes and digests only; handing the job to its
    checkpoint reads the file again, and what it keeps is what parsing with the messages gives."""
    from adapters.files.checkpointed import load_input
    from adapters.files.items_io import load_items

    rows = [{"id": f"q{i}", "messages": [{"role": "user", "content": f"é {i} " * i}]} for i in range(1, 40)]
    path = _write(tmp_path / "in.jsonl", rows)
    held = load_items(path)
    lean = load_input(path)
    assert lean.items.messages_json is None
    assert lean.items.digests is None  # the source holds them, until the checkpoint keeps them
    assert list(held.bindings()) == list(lean.bindings())
    job = _plan(lean.items)
    assert list(_plan(held).requests.sizes) == list(job.requests.sizes)
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, lean.bindings())
        hand_to_checkpoint(store, job, lean.messages)
        assert list(held.messages()) == store.messages_of(list(held.custom_ids))
        with pytest.raises(RuntimeError, match="released"):  # the checkpoint keeps them: none held
            lean.bindings()
    finally:
        store.close()


@pytest.mark.parametrize(
    "change",
    [
        lambda rows: rows[:-1],  # an item gone
        lambda rows: [*rows, {"id": "new", "prompt": "x"}],  # an item more
        lambda rows: [{**rows[0], "prompt": "edited"}, *rows[1:]],  # an item's text changed
        lambda rows: [rows[1], rows[0], *rows[2:]],  # two items swapped
    ],
)
def test_an_input_changed_after_it_was_parsed_keeps_nothing_and_says_so(tmp_path: Path, change) -> None:
    """A file edited between its parse and the read of its messages is refused, naming the file (and
    the line), and the checkpoint keeps none of its messages: nothing can be sent from it."""
    from adapters.files.checkpointed import load_input

    rows = [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(6)]
    path = _write(tmp_path / "in.jsonl", rows)
    job_input = load_input(path)
    job = _plan(job_input.items)
    _write(path, change(rows))
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, job_input.bindings())
        with pytest.raises(InputChangedError, match=str(path)):
            hand_to_checkpoint(store, job, job_input.messages)
        assert 6 == len(store.messages_missing())
    finally:
        store.close()


def test_a_run_of_items_that_do_not_hold_their_messages_is_refused_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    """Items parsed without their messages say nothing of where they are: a run of them is exit 2,
    naming the loader that does (`load_input`); the same file through it plans the same job."""
    from adapters.files.checkpointed import load_input
    from adapters.files.items_io import load_items
    from adapters.run.planning_run import run_job_of
    from adapters.run.settings import JobSettings
    from adapters.usage import UsageError

    path = _write(tmp_path / "in.jsonl", [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(4)])
    settings = JobSettings(model="claude-sonnet-4-6", max_tokens=64)
    with pytest.raises(UsageError, match="load_input"):
        run_job_of(
            load_items(path, hold_messages=False), rubric=None, settings=settings, state_dir=tmp_path / "s"
        )
    job, source = run_job_of(load_input(path), rubric=None, settings=settings, state_dir=tmp_path / "s")
    held, _ = run_job_of(load_items(path), rubric=None, settings=settings, state_dir=tmp_path / "s")
    digests = [d for _, _, d in job.items.bindings(source.digests(job.items))]  # (custom_ids: per dir)
    assert (list(held.requests.message_sizes), digests) == (
        list(job.requests.message_sizes),
        [d for _, _, d in held.items.bindings()],
    )
    assert source == load_input(path).messages


def test_a_path_given_to_the_python_api_is_read_again_for_its_messages_not_held(tmp_path: Path) -> None:
    """`judge(items="in.jsonl")`: the plan holds no messages and the run reads them from the file
    again when it hands them to its checkpoint (its state dir is made by the run, not the parse)."""
    from adapters.files.messages import InputMessages
    from adapters.run.planning_run import run_job_of
    from adapters.run.settings import JobSettings

    path = _write(tmp_path / "in.jsonl", [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(4)])
    settings = JobSettings(model="claude-sonnet-4-6", max_tokens=64)
    job, source = run_job_of(str(path), rubric=None, settings=settings, state_dir=tmp_path / "s")
    assert source == InputMessages(path, "jsonl") and job.items.messages_json is None
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, job.items.bindings(source.digests(job.items)))
        hand_to_checkpoint(store, job, source)
        want = [orjson.dumps([{"role": "user", "content": f"answer {i}"}]) for i in range(4)]
        assert want == store.messages_of(list(job.items.custom_ids))
    finally:
        store.close()


def test_a_run_keeps_no_reference_to_the_digests_it_bound_once_the_checkpoint_keeps_them(
    tmp_path: Path,
) -> None:
    """The digests of a file input (16 bytes an item: 11.5 MB at 720,000) are dropped at the
    hand-off, not only by the source: nothing the run keeps (a spent iterator of the bindings
    included) still refers to them while it polls and harvests."""
    import gc

    import attrs

    from adapters.files.items_io import load_items
    from adapters.files.messages import InputMessages, JobInput
    from adapters.run.clock import FakeClock
    from adapters.run.events import BatchHarvested
    from adapters.run.job import judge
    from adapters.run.settings import JobSettings
    from adapters.simulator.logic import Simulator
    from adapters.simulator.scenario import Scenario
    from adapters.simulator.transport import sim_client

    path = _write(tmp_path / "in.jsonl", [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(30)])
    items = load_items(path, hold_messages=False)
    held = [items.digests]  # the test's one reference: a list, so a referrer it can tell apart
    job_input = JobInput(attrs.evolve(items, digests=None), InputMessages(path, "jsonl", digests=held[0]))
    del items
    others: list[list[str]] = []

    def look(event: object) -> None:
        if isinstance(event, BatchHarvested):
            others.append([type(r).__name__ for r in gc.get_referrers(held[0]) if r is not held])

    settings = JobSettings(model="claude-sonnet-4-6", max_tokens=64, force="batch", max_batch_requests=10)
    clock = FakeClock()
    sim = Simulator(Scenario(seed=4), clock=clock.now)
    result = judge(
        job_input,
        rubric=None,
        state_dir=tmp_path / "s",
        settings=settings,
        client=sim_client(sim, max_retries=0),
        clock=clock,
        progress=look,
    )
    assert 0 == result.exit_code and 30 == len(result.records)
    assert others and all(r == [] for r in others), others


def test_the_digests_lent_for_a_run_s_custom_ids_are_the_ones_held_not_rebuilt(tmp_path: Path) -> None:
    """A run of a file lends its source's digests to derive the custom_ids: the very bytes the source
    holds (a join of their records made an object per item on the way: the peak of a 1,000,000-item
    run, issue 42); a source that does not hold them as one gives the same bytes, joined."""
    from adapters.files.checkpointed import load_input
    from adapters.files.messages import joined_digests

    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(orjson.dumps({"id": f"q{i}", "prompt": f"p {i}"}) + b"\n" for i in range(300)))
    job_input = load_input(path)
    held = job_input.messages.held_digests  # type: ignore[attr-defined]
    assert held is not None and joined_digests(job_input.messages, job_input.items) is held
    expected = b"".join(parse_items(path.read_bytes().splitlines()).raw_digests())
    assert held == expected
    split = split_messages(parse_items(path.read_bytes().splitlines()))
    assert joined_digests(split.messages, split.items) == expected


def _job_key(settings: object, rubric: str | None = None) -> str:
    from adapters.checkpoint.jobkey import ids_job_for

    return ids_job_for(None, settings.manifest(rubric))  # type: ignore[attr-defined]


def test_a_new_job_s_input_is_read_once_what_is_sent_is_what_was_parsed(tmp_path: Path) -> None:
    """A run's parse keeps each message in the new job's checkpoint as it reads the file: the
    file is not read again (an edit after the parse changes nothing the run sends), and what the
    checkpoint keeps is what a parse holding the messages gives, under the same custom_ids."""
    from adapters.files.checkpointed import load_input
    from adapters.files.items_io import load_items
    from adapters.run.settings import JobSettings

    rows = [{"id": f"q{i}", "messages": [{"role": "user", "content": f"é {i} " * i}]} for i in range(1, 300)]
    rows += [{"id": "last", "prompt": "東 plain", "max_tokens": 9}]
    path = _write(tmp_path / "in.jsonl", rows)
    job = _job_key(JobSettings(model="claude-sonnet-4-6", max_tokens=64))
    lean = load_input(path, job=job, state_dir=tmp_path / "s")
    path.write_bytes(b"")  # read once: the run no longer needs the file
    held = load_items(_write(tmp_path / "again.jsonl", rows), job=job)
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, lean.bindings(), ids_job=job)
        hand_to_checkpoint(store, _plan(lean.items), lean.messages)  # nothing left to read: no error
        assert list(held.messages()) == store.messages_of(list(held.custom_ids))
        assert 0 == store.messages_missing_count()
    finally:
        store.close()


def test_a_bad_line_leaves_a_new_state_dir_without_a_checkpoint(tmp_path: Path) -> None:
    """The parse's messages are committed only once the whole input is read: a bad line is exit 2
    naming it, and the new state dir is left holding no checkpoint (nor any message)."""
    from adapters.checkpoint.fresh import holds_checkpoint
    from adapters.files.checkpointed import load_input
    from adapters.run.settings import JobSettings
    from adapters.usage import UsageError

    rows = [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(500)]
    path = _write(tmp_path / "in.jsonl", rows)
    with path.open("ab") as f:
        f.write(b'{"id": "bad"}\n')
    (tmp_path / "s").mkdir()
    job = _job_key(JobSettings(model="claude-sonnet-4-6", max_tokens=64))
    with pytest.raises(UsageError, match=r"in.jsonl:501: .*exactly one of 'prompt' or 'messages'"):
        load_input(path, job=job, state_dir=tmp_path / "s")
    assert not holds_checkpoint(tmp_path / "s")
    with pytest.raises(UsageError, match=r"in.jsonl:501: "):  # a dir the parse made: removed
        load_input(path, job=job, state_dir=tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_a_resumed_job_s_input_adds_only_its_new_items_messages_read_again(tmp_path: Path) -> None:
    """A state dir bound to its job already keeps its messages: a resume's parse keeps none (the
    items added to the job are read from the file again at the hand-off, checked against it)."""
    from adapters.files.checkpointed import load_input
    from adapters.run.settings import JobSettings

    job = _job_key(JobSettings(model="claude-sonnet-4-6", max_tokens=64))
    first = [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(5)]
    path = _write(tmp_path / "in.jsonl", first)
    lean = load_input(path, job=job, state_dir=tmp_path / "s")
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, lean.bindings(), ids_job=job)
        hand_to_checkpoint(store, _plan(lean.items), lean.messages)
    finally:
        store.close()
    more = [*first, {"id": "q5", "prompt": "added"}]
    _write(path, more)
    lean = load_input(path, job=job, state_dir=tmp_path / "s")
    store = Store.open(tmp_path / "s")
    try:
        assert 5 == len(store.messages_of([c for c in lean.items.custom_ids][:5]))
        store.bind_job({"m": 1}, lean.bindings(), ids_job=job)
        assert 1 == store.messages_missing_count()  # the new item's: not kept by the resume's parse
        _write(path, [*first, {"id": "q5", "prompt": "edited since"}])
        with pytest.raises(InputChangedError):  # read again, so checked against the parse
            hand_to_checkpoint(store, _plan(lean.items), lean.messages)
    finally:
        store.close()


def test_a_refused_run_leaves_alone_a_new_state_dir_another_run_holds(tmp_path: Path) -> None:
    """Two runs started on one new state dir: the one refused (the dir is locked) removes nothing of
    the other's, which may still be parsing its input (no job bound yet); alone, the same dir's
    unbound checkpoint is removed."""
    from adapters.checkpoint.fresh import holds_checkpoint
    from adapters.files.checkpointed import discard_unbound

    state = tmp_path / "s"
    holder = Store.open(state, exclusive="run")  # the other run, its job not bound yet
    try:
        discard_unbound(state, made=True)
        assert holds_checkpoint(state)
    finally:
        holder.close()
    discard_unbound(state, made=True)
    assert not state.exists()
