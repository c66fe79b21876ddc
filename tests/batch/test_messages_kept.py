"""A run's messages: kept in the checkpoint once the job is bound, then read back for what it sends."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from adapters.messages import MessageBox, boxed, hand_to_checkpoint, hydrate
from adapters.store import Store
from judgecore import parse_items
from judgecore.items import MessagesNotHeldError
from judgecore.planning import plan_job


def _job(n: int, *, long: bool = False):
    lines = [
        orjson.dumps({"id": f"q{i}", "prompt": f"answer {i} é 東" + ("x" * 3000 if long else "")})
        for i in range(n)
    ]
    items = boxed(parse_items(lines))
    return plan_job(items, model="claude-sonnet-4-6", max_tokens=64, rubric="Grade.", max_batch_bytes=None)


def test_the_checkpoint_gives_back_each_requests_own_messages_in_any_order_and_number(tmp_path: Path) -> None:
    """Once handed over, the job holds no messages; any view of its requests (more ids than one query
    binds, in any order) reads back exactly the bytes it held."""
    job = _job(1_203)
    held = [r.body(job.batch_template) for r in job.requests]
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, job.items.bindings())
        hand_to_checkpoint(store, job)
        assert job.items.messages_json.released  # type: ignore[attr-defined]
        with pytest.raises(MessagesNotHeldError):
            job.requests[0]
        order = list(reversed(job.requests.custom_ids))[::2] + list(job.requests.custom_ids)[:7]
        view = hydrate(store, job.requests.select(order))
        by_id = dict(zip(job.requests.custom_ids, held, strict=True))
        assert [by_id[c] for c in order] == [r.body(job.batch_template) for r in view]
    finally:
        store.close()


def test_a_rerun_keeps_only_the_messages_not_kept_yet(tmp_path: Path) -> None:
    """Items added to a job are kept on the next run; those kept already are not written again."""
    small, big = _job(5), _job(9)
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, small.items.bindings())
        hand_to_checkpoint(store, small)
        store.bind_job({"m": 1}, big.items.bindings())
        assert list(big.requests.custom_ids[5:]) == store.messages_missing()
        hand_to_checkpoint(store, big)
        assert [] == store.messages_missing()
        assert [r.messages_json for r in _job(9).requests] == store.messages_of(list(big.requests.custom_ids))
    finally:
        store.close()


def test_a_box_is_released_once_and_shared_by_the_items_and_the_requests() -> None:
    job = _job(3)
    box = job.items.messages_json
    assert isinstance(box, MessageBox)
    assert box is job.requests.message_column
    assert boxed(job.items) is job.items  # boxing again keeps the one box
    box.release()
    with pytest.raises(MessagesNotHeldError):
        list(job.items)


def test_a_create_body_streamed_from_the_checkpoint_is_the_body_of_the_requests_held(tmp_path: Path) -> None:
    """A create body whose requests' messages are read back a slice at a time as it streams is byte
    for byte the body of the same requests held in memory, and its declared size is its length."""
    from adapters.batch_api import CreateBody
    from adapters.messages import HYDRATE_SLICE, Hydrating
    from judgecore.chunking import body_size, create_body

    job = _job(2 * HYDRATE_SLICE + 37, long=True)
    view = job.requests[5:]
    want = create_body(view, job.batch_template)
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, job.items.bindings())
        hand_to_checkpoint(store, job)
        body = CreateBody(Hydrating(store, view), job.batch_template, size=body_size(view.sizes))
        assert want == b"".join(body.chunks()) == bytes(body)
        assert len(want) == body.size
    finally:
        store.close()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_items_parsed_without_their_messages_keep_them_from_the_input_read_again(tmp_path: Path) -> None:
    """The CLI's run parses the input keeping sizes and digests only; handing the job to its
    checkpoint reads the file again, and what it keeps is what parsing with the messages gives."""
    from adapters.job import load_items

    rows = [{"id": f"q{i}", "messages": [{"role": "user", "content": f"é {i} " * i}]} for i in range(1, 40)]
    path = _write(tmp_path / "in.jsonl", rows)
    held = load_items(path)
    lean = boxed(load_items(path, hold_messages=False))
    assert list(held.bindings()) == list(lean.bindings())
    job = plan_job(lean, model="claude-sonnet-4-6", max_tokens=64, rubric="Grade.", max_batch_bytes=None)
    want = plan_job(held, model="claude-sonnet-4-6", max_tokens=64, rubric="Grade.", max_batch_bytes=None)
    assert list(want.requests.sizes) == list(job.requests.sizes)
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, lean.bindings())
        hand_to_checkpoint(store, job)
        assert list(held.messages_json) == store.messages_of(list(held.custom_ids))
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
    from adapters.job import load_items
    from adapters.messages import InputChangedError

    rows = [{"id": f"q{i}", "prompt": f"answer {i}"} for i in range(6)]
    path = _write(tmp_path / "in.jsonl", rows)
    items = boxed(load_items(path, hold_messages=False))
    job = plan_job(items, model="claude-sonnet-4-6", max_tokens=64, rubric="Grade.", max_batch_bytes=None)
    _write(path, change(rows))
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"m": 1}, items.bindings())
        with pytest.raises(InputChangedError, match=str(path)):
            hand_to_checkpoint(store, job)
        assert 6 == len(store.messages_missing())
    finally:
        store.close()
