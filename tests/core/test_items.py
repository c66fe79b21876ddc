"""Items and requests: parsing input lines, and the exact bytes each request puts on the wire."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import item_lists, items, json_values, messages, templates

from judgecore.job.errors import DuplicateIdError, InputError
from judgecore.job.ids import custom_id_for, custom_ids_for
from judgecore.job.items import Item
from judgecore.job.nesting import MAX_DEPTH
from judgecore.job.parsing import MAX_LINE_BYTES, parse_item, parse_items
from judgecore.results.output_line import output_line, output_record
from judgecore.wire.requests import RequestTemplate, build_requests


@given(item_lists(max_size=20), templates)
def test_request_size_is_the_length_of_its_body(its, template):
    for item, req in zip(its, build_requests(its, template), strict=True):
        assert req.size == len(req.body(template, item.messages_json))
        assert req.message_size == len(item.messages_json)


@given(item_lists(max_size=20), templates)
def test_request_body_is_what_orjson_gives_for_custom_id_and_params(its, template):
    for item, req in zip(its, build_requests(its, template), strict=True):
        params = {"model": template.model, "max_tokens": item.max_tokens or template.max_tokens}
        if template.system_json is not None:
            params["system"] = orjson.loads(template.system_json)
        params["messages"] = orjson.loads(item.messages_json)
        body = req.body(template, item.messages_json)
        assert orjson.dumps({"custom_id": custom_id_for(item.id), "params": params}) == body
        assert params == req.params(template, item.messages_json)


@given(item_lists(max_size=20), templates)
def test_requests_keep_input_order_and_ids(its, template):
    reqs = build_requests(its, template)
    assert [i.id for i in its] == [r.item_id for r in reqs]
    assert [custom_id_for(i.id) for i in its] == [r.custom_id for r in reqs]


@pytest.mark.parametrize(
    ("path", "expected"), [("sync", {"type": "ephemeral"}), ("batch", {"type": "ephemeral", "ttl": "1h"})]
)
def test_rubric_is_a_system_block_list_with_the_route_cache_marker(path, expected):
    template = RequestTemplate.build(model="claude-sonnet-4-6", max_tokens=10, rubric="Score it.", path=path)
    system = orjson.loads(template.system_json)
    assert [{"type": "text", "text": "Score it.", "cache_control": expected}] == system


def test_no_rubric_means_no_system_field():
    template = RequestTemplate.build(model="m", max_tokens=10, rubric=None, path="batch")
    item = parse_item(1, '{"id": "a", "prompt": "hi"}')
    (req,) = build_requests([item], template)
    assert "system" not in orjson.loads(req.body(template, item.messages_json))["params"]


# --- parsing --------------------------------------------------------------------------------------


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=200), st.one_of(st.none(), json_values))
def test_prompt_becomes_one_user_turn_and_metadata_is_kept_verbatim(item_id, prompt, metadata):
    obj = {"id": item_id, "prompt": prompt}
    if metadata is not None:
        obj["metadata"] = metadata
    item = parse_item(4, orjson.dumps(obj))
    assert (
        Item(
            id=item_id,
            line=4,
            messages_json=orjson.dumps([{"role": "user", "content": prompt}]),
            metadata_json=None if metadata is None else orjson.dumps(metadata),
        )
        == item
    )


@given(st.text(min_size=1, max_size=40), messages, st.integers(1, 100_000))
def test_messages_and_max_tokens_are_parsed(item_id, msgs, max_tokens):
    line = orjson.dumps({"id": item_id, "messages": msgs, "max_tokens": max_tokens})
    item = parse_item(1, line)
    assert (orjson.dumps(msgs), max_tokens) == (item.messages_json, item.max_tokens)


@given(st.lists(items(), max_size=10))
def test_parse_items_skips_blank_lines_and_numbers_the_rest_by_file_line(its):
    unique = {i.id: i for i in its}
    lines = []
    for item in unique.values():
        lines += ["", "   \t", orjson.dumps({"id": item.id, "messages": orjson.loads(item.messages_json)})]
    parsed = parse_items(lines)
    assert list(unique) == [p.id for p in parsed]
    assert [3 * n for n in range(1, len(unique) + 1)] == [p.line for p in parsed]


BAD_LINES = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"prompt": "x"}', "'id' must be a non-empty string"),
    ('{"id": "", "prompt": "x"}', "'id' must be a non-empty string"),
    ('{"id": 7, "prompt": "x"}', "'id' must be a non-empty string"),
    ('{"id": "a"}', "exactly one of 'prompt' or 'messages'"),
    ('{"id": "a", "prompt": "x", "messages": [{"role": "user", "content": "x"}]}', "exactly one"),
    ('{"id": "a", "prompt": ""}', "'prompt' must be a non-empty string"),
    ('{"id": "a", "messages": []}', "'messages' must be a non-empty list"),
    ('{"id": "a", "messages": [{"role": "system", "content": "x"}]}', "role must be"),
    # an unhashable role was a TypeError traceback (looked up in a frozenset)
    ('{"id": "a", "messages": [{"role": ["user"], "content": "x"}]}', "role must be"),
    ('{"id": "a", "messages": [{"role": {"user": 1}, "content": "x"}]}', "role must be"),
    ('{"id": "a", "messages": [{"role": "user", "content": ""}]}', "content must be"),
    ('{"id": "a", "prompt": "x", "max_tokens": 0}', "'max_tokens' must be a positive integer"),
    ('{"id": "a", "prompt": "x", "max_tokens": -3}', "'max_tokens' must be a positive integer"),
    ('{"id": "a", "prompt": "x", "max_tokens": 1.5}', "'max_tokens' must be a positive integer"),
    ('{"id": "a", "prompt": "x", "max_tokens": "12"}', "'max_tokens' must be a positive integer"),
    ('{"id": "a", "prompt": "x", "max_tokens": true}', "'max_tokens' must be a positive integer"),
    ('{"id": "a", "prompt": "x", "score": 1}', "unknown field(s) score"),
    # messages of the wrong shape (issue 9): each would be sent as is and refused (or worse) after paying
    ('{"id": "a", "messages": [{"role": "user", "content": ["x"]}]}', "content[0] must be an object"),
    ('{"id": "a", "messages": [{"role": "user", "content": [1, 2]}]}', "content[0] must be an object"),
    ('{"id": "a", "messages": [{"role": "user", "content": [{"text": "x"}]}]}', "with a string 'type'"),
    ('{"id": "a", "messages": [{"role": "user", "content": [{"type": 3}]}]}', "with a string 'type'"),
    ('{"id": "a", "messages": [{"role": "user", "content": [{"type": "text"}]}]}', "without a string 'text'"),
    (
        '{"id": "a", "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}',
        "string 'text'",
    ),
    ('{"id": "a", "messages": [{"role": "user", "content": []}]}', "content must be a non-empty"),
    (
        '{"id": "a", "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}, '
        '{"role": "user", "content": []}]}',
        "messages[1].content must be a non-empty",
    ),
    ('{"id": "a", "messages": [{"role": "user", "content": [{"type": ""}]}]}', "with a string 'type'"),
    ('{"id": "a", "messages": [{"role": "user", "content": 7}]}', "content must be a non-empty"),
    ('{"id": "a", "messages": [{"role": "user", "content": "x", "name": "bob"}]}', "unknown key(s) name"),
    ('{"id": "a", "messages": ["hello"]}', "messages[0] must be an object"),
    ('{"id": "a", "messages": {"role": "user", "content": "x"}}', "'messages' must be a non-empty list"),
    ('{"id": "a", "prompt": "x", "metadata": ' + "[" * 64 + "]" * 64 + "}", "nested more than 64 levels"),
    ('{"id": "a", "prompt": "x", "metadata": ' + "[" * 254 + "]" * 254 + "}", "nested more than 64 levels"),
]


@pytest.mark.parametrize(("bad", "reason"), BAD_LINES)
def test_bad_line_is_an_input_error_naming_its_line(bad, reason):
    lines = ['{"id": "ok1", "prompt": "fine"}', "", bad, '{"id": "ok2", "prompt": "fine"}']
    with pytest.raises(InputError) as err:
        parse_items(lines)
    assert 3 == err.value.line
    assert reason in err.value.reason
    assert str(err.value).startswith("line 3: ")


def test_duplicate_ids_name_both_lines():
    lines = ['{"id": "a", "prompt": "x"}', "", '{"id": "b", "prompt": "x"}', '{"id": "a", "prompt": "y"}']
    with pytest.raises(DuplicateIdError) as err:
        parse_items(lines)
    assert ("a", 1, 4) == (err.value.item_id, err.value.first_line, err.value.line)


def test_a_line_over_the_request_size_limit_is_refused_before_parsing():
    with pytest.raises(InputError) as err:
        parse_items([b'{"id": "a", "prompt": "' + b"x" * MAX_LINE_BYTES + b'"}'])
    assert 1 == err.value.line
    assert "over the 32,000,000-byte limit" in err.value.reason


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": "Grade this."}],
        [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}],
        [{"type": "a_block_the_api_adds_next_year", "anything": {"goes": [1, 2]}}],
        [
            {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "b"},
        ],
    ],
)
def test_well_formed_content_blocks_pass_through_untouched(content):
    msgs = [{"role": "user", "content": content}, {"role": "assistant", "content": "ok"}]
    item = parse_item(1, orjson.dumps({"id": "a", "messages": msgs}))
    assert orjson.dumps(msgs) == item.messages_json


def test_nesting_up_to_the_limit_is_accepted_and_one_more_level_is_not():
    """The line's object is level 1, so metadata may nest 63 levels."""
    metadata = _nested(MAX_DEPTH - 1)
    item = parse_item(1, orjson.dumps({"id": "a", "prompt": "x", "metadata": metadata}))
    assert orjson.dumps(metadata) == item.metadata_json
    with pytest.raises(InputError, match="nested more than 64 levels"):
        parse_item(1, orjson.dumps({"id": "a", "prompt": "x", "metadata": [metadata]}))


def _nested(depth: int) -> object:
    value: object = "leaf"
    for k in range(depth):
        value = [value] if k % 2 else {"k": value}
    return value


def _nested_json(depth: int) -> bytes:
    """`orjson.dumps(_nested(depth))`, written out (orjson refuses past 254 levels)."""
    opens = "".join("[" if k % 2 else '{"k":' for k in reversed(range(depth)))
    closes = "".join("]" if k % 2 else "}" for k in range(depth))
    return (opens + '"leaf"' + closes).encode()


any_metadata_json = st.one_of(json_values.map(orjson.dumps), st.integers(0, 300).map(_nested_json))


@given(
    st.text(min_size=1, max_size=20),
    st.one_of(st.text(min_size=1, max_size=50), messages),
    any_metadata_json,
)
def test_whatever_the_parser_accepts_can_be_sent_and_written_out(item_id, prompt_or_messages, metadata):
    """A paid answer can always be delivered: an accepted line's request body and output line both
    serialize, and the output carries the metadata as parsed."""
    key = "prompt" if isinstance(prompt_or_messages, str) else "messages"
    line = orjson.dumps({"id": item_id, key: prompt_or_messages})[:-1] + b',"metadata":' + metadata + b"}"
    try:
        item = parse_item(1, line)
    except InputError as exc:
        assert "nested more than" in exc.reason
        return
    template = RequestTemplate.build(model="m", max_tokens=5, rubric="r", path="batch")
    (req,) = build_requests([item], template)
    body = req.body(template, item.messages_json)
    assert orjson.loads(item.messages_json) == orjson.loads(body)["params"]["messages"]
    record = output_record(item, item.custom_id, None, route="batch", batch_id=None, attempts=0)
    assert orjson.loads(item.metadata_json) == orjson.loads(output_line(record))["metadata"]


@given(item_lists(max_size=20))
def test_each_item_carries_its_custom_id_from_parsing(its):
    lines = [orjson.dumps({"id": i.id, "messages": orjson.loads(i.messages_json)}) for i in its]
    assert [custom_id_for(i.id) for i in its] == [p.custom_id for p in parse_items(lines)]


def test_blank_lines_are_skipped():
    assert () == tuple(parse_items(["", "  ", "\n", b"\t\n"]))


def test_digest_changes_when_content_or_max_tokens_changes():
    a = parse_item(1, '{"id": "a", "prompt": "x"}')
    assert a.digest == parse_item(9, '{"id": "a", "prompt": "x", "metadata": {"k": 1}}').digest
    assert a.digest != parse_item(1, '{"id": "a", "prompt": "y"}').digest
    assert a.digest != parse_item(1, '{"id": "a", "prompt": "x", "max_tokens": 5}').digest


@given(item_lists(max_size=20), st.data())
def test_the_columns_of_items_read_back_as_the_items_one_by_one(its, data):
    """`parse_items` keeps a job as columns (`Items`); read by index, slice or iteration they are the
    items `parse_item` makes of each line, custom_ids included."""
    unique = list({i.id: i for i in its}.values())
    lines = [orjson.dumps({"id": i.id, "messages": orjson.loads(i.messages_json)}) for i in unique]
    parsed = parse_items(lines)
    one_by_one = tuple(parse_item(n, raw) for n, raw in enumerate(lines, start=1))
    assert one_by_one == tuple(parsed)
    assert [i.custom_id for i in one_by_one] == list(parsed.custom_ids)
    k = data.draw(st.integers(0, len(unique)))
    assert one_by_one[k:] == tuple(parsed[k:])
    if unique:
        assert one_by_one[k - 1] == parsed[k - 1]


@given(item_lists(max_size=20))
def test_items_parsed_without_their_messages_have_the_same_sizes_and_digests(its):
    """Parsed keeping only sizes (a dry run) or sizes and digests (a run), a file gives the same ids,
    custom_ids and message sizes as parsed whole, the same digests, and refuses to read a message."""
    unique = list({i.id: i for i in its}.values())
    lines = [
        orjson.dumps({"id": i.id, "messages": orjson.loads(i.messages_json), "max_tokens": i.max_tokens or 7})
        for i in unique
    ]
    whole = parse_items(lines)
    lean = parse_items(lines, hold_messages=False)
    sizes = parse_items(lines, hold_messages=False, digests=False)
    for other in (lean, sizes):
        assert list(whole.custom_ids) == list(other.custom_ids)
        assert [len(m) for m in whole.messages_json] == list(other.message_sizes)
    assert list(whole.bindings()) == list(lean.bindings())
    assert lean == whole.without_messages()
    assert None is lean.messages_json is sizes.messages_json
    if unique:
        with pytest.raises(LookupError):
            lean[0]
        with pytest.raises(LookupError):
            list(sizes)


_GOOD_LINES = [
    '{"id": "p", "prompt": "fine"}',
    '{"id": "m", "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}',
    '{"id": "b", "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image"}]}]}',
    '{"id": "t", "prompt": "x", "max_tokens": 7, "metadata": {"k": [1, {"j": null}]}}',
    '{"id": "n", "prompt": "x", "metadata": null}',
    '{"id": "d", "prompt": "[[[[", "metadata": ' + "[" * 63 + "]" * 63 + "}",
    '{"id": "c", "messages": [{"role": "user", "content": [{"type": "x", "v": '
    + "[" * 60
    + "]" * 60
    + "}]}]}",
    '{"id": "é", "prompt": "ü\\n", "max_tokens": 1}',
]


def _check_parses_as_one_by_one(lines: list[str], block: int, hold: bool, digests: bool) -> None:
    """`parse_items` of `lines` (as text and as bytes, `block` lines validated at a time) gives the
    items `parse_item` makes of each line, or the error `parse_item` raises for the first bad one."""
    from unittest import mock

    import judgecore.job.parsing

    expected: list[Item] = []
    error = None
    for n, raw in enumerate(lines, start=1):
        try:
            expected.append(parse_item(n, raw))
        except InputError as exc:
            error = (exc.line, exc.reason)
            break
    with mock.patch.object(judgecore.job.parsing, "BLOCK_LINES", block):
        for raws in (lines, [raw.encode() for raw in lines]):
            if error is not None:
                with pytest.raises(InputError) as err:
                    parse_items(raws, hold_messages=hold, digests=digests)
                assert error == (err.value.line, err.value.reason)
                continue
            parsed = parse_items(raws, hold_messages=hold, digests=digests)
            assert [len(i.messages_json) for i in expected] == list(parsed.message_sizes)
            assert [i.metadata_json for i in expected] == list(parsed.metadata_json)
            assert [i.custom_id for i in expected] == list(parsed.custom_ids)
            if hold:
                assert tuple(expected) == tuple(parsed)
            elif digests:
                assert list(parse_items(lines).bindings()) == list(parsed.bindings())


_MODES = [(True, True), (False, True), (False, False)]


def _unique(lines: list[str]) -> list[str]:
    return [
        line.replace('"id": "', f'"id": "{n}', 1) if '"id": ""' not in line else line
        for n, line in enumerate(lines)
    ]


@pytest.mark.parametrize(("bad", "reason"), BAD_LINES)
def test_a_bad_line_anywhere_in_a_block_is_named_as_line_by_line(bad, reason):
    """Validated a block of lines at a time, a file with a bad line among good ones raises the error
    `parse_item` gives that line, wherever it sits in its block, whatever the kept columns."""
    del reason
    for at in range(len(_GOOD_LINES) + 1):
        lines = _unique([*_GOOD_LINES[:at], bad, *_GOOD_LINES[at:]])
        for block in (1, 3, 128):
            for hold, digests in _MODES:
                _check_parses_as_one_by_one(lines, block, hold, digests)


@given(
    st.lists(st.sampled_from(_GOOD_LINES), max_size=12),
    st.lists(st.sampled_from([bad for bad, _ in BAD_LINES]), max_size=2),
    st.data(),
)
def test_a_file_parses_as_its_lines_do_one_by_one(good, bad, data):
    """Validated a block of lines at a time, a file gives the items `parse_item` makes of each line,
    or the first bad line's error, whatever the block size and the kept columns."""
    lines = list(good)
    for line in bad:
        lines.insert(data.draw(st.integers(0, len(lines))), line)
    block = data.draw(st.integers(1, 5))
    hold, digests = data.draw(st.sampled_from(_MODES))
    _check_parses_as_one_by_one(_unique(lines), block, hold, digests)


@pytest.mark.parametrize("chunk", [1, 2, 3, 16_384])
def test_ids_parsed_a_chunk_at_a_time_are_the_same_and_a_repeat_across_chunks_names_both_lines(chunk):
    """The parse moves its ids into the columns a chunk at a time: the columns are the same for any
    chunk, and an id repeated in another chunk is still named with both lines."""
    from unittest import mock

    import judgecore.job.parsing

    lines = [f'{{"id": "r{n}", "prompt": "p"}}' for n in range(7)] + ['{"id": "é/ü", "prompt": "p"}']
    whole = parse_items(lines)
    with mock.patch.object(judgecore.job.parsing, "CHUNK_IDS", chunk):
        parsed = parse_items(lines, job="abcdefghijklmnop")
        assert list(parsed.ids) == list(whole.ids)
        assert list(parsed.custom_ids) == list(custom_ids_for(whole.ids, job="abcdefghijklmnop"))
        with pytest.raises(DuplicateIdError) as err:
            parse_items([*lines, '{"id": "r1", "prompt": "again"}'])
    assert (err.value.first_line, err.value.line) == (2, 9)


def test_a_collision_of_hashes_alone_is_no_repeated_id():
    """Distinct ids whose custom_ids' hashes collide (as `distinct_hashes` reports it) parse: the ids
    themselves decide."""
    from unittest import mock

    import judgecore.job.parsing

    lines = ['{"id": "a", "prompt": "p"}', '{"id": "b", "prompt": "p"}']
    with mock.patch.object(judgecore.job.parsing, "distinct_hashes", lambda hashes: False):
        assert list(parse_items(lines).ids) == ["a", "b"]


@pytest.mark.parametrize("chunk", [1, 3, 16_384])
def test_a_parse_whose_custom_ids_are_derived_when_read_gives_the_same_items_and_the_same_errors(chunk):
    """`lazy_ids=True` (a dry run on a fresh state dir) parses the same columns, its custom_ids read
    later are the ones derived at once, and a repeated id is named with both lines as before."""
    from unittest import mock

    import judgecore.job.parsing

    lines = [f'{{"id": "r{n}", "prompt": "p"}}' for n in range(7)] + ['{"id": "é/ü", "prompt": "p"}']
    job = "abcdefghijklmnop"
    with mock.patch.object(judgecore.job.parsing, "CHUNK_IDS", chunk):
        eager = parse_items(lines, hold_messages=False, digests=False, job=job)
        lazy = parse_items(lines, hold_messages=False, digests=False, job=job, lazy_ids=True)
        assert not lazy.custom_ids.made
        assert eager == lazy
        with pytest.raises(DuplicateIdError) as err:
            parse_items([*lines, '{"id": "r1", "prompt": "again"}'], job=job, lazy_ids=True)
    assert (err.value.item_id, err.value.first_line, err.value.line) == ("r1", 2, 9)
