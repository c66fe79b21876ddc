"""The immutable columns a job's items and requests are kept in (`judgecore.job.columns`): each reads back
exactly what it was given, compares like the tuple it replaces, and keeps a few bytes per value."""

from __future__ import annotations

import pickle
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecore.job.columns import Sparse, Taken, taken
from judgecore.job.ints import Ints, counted
from judgecore.job.texts import Texts

# any strings, lone surrogates and the empty string included (an item id may be any JSON string)
_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)


@given(st.lists(_TEXT, max_size=40), st.data())
def test_texts_read_back_what_they_were_given_and_compare_like_the_tuple(
    values: list[str], data: st.DataObject
) -> None:
    t = Texts(values)
    assert list(t) == values
    assert [t[k] for k in range(len(values))] == values
    assert [t[-k] for k in range(1, len(values) + 1)] == [values[-k] for k in range(1, len(values) + 1)]
    assert t == tuple(values) and tuple(values) == t and t == values
    assert hash(t) == hash(tuple(values))  # equal to the tuple, so hashed alike
    s = data.draw(st.slices(len(values) + 2))
    assert list(t[s]) == values[s] and isinstance(t[s], Texts)
    probe = data.draw(_TEXT)
    assert (probe in t) == (probe in values)
    assert pickle.loads(pickle.dumps(t)) == t
    assert Texts.of(t) is t
    where = data.draw(st.lists(st.integers(0, len(values) - 1), max_size=10)) if values else []
    assert list(t.at(where)) == [values[k] for k in where] == list(Taken(t, Ints(where)))


def test_a_texts_raises_index_error_past_either_end_and_cannot_be_changed() -> None:
    t = Texts(["a", "", "bc"])
    for k in (3, -4):
        with pytest.raises(IndexError):
            t[k]
    assert t.index("bc") == 2
    with pytest.raises(ValueError):
        t.index("b")  # a part of a value, not a value
    with pytest.raises(AttributeError):
        t._text = "x"  # type: ignore[misc]
    assert Texts(["ab", "c"]) != Texts(["a", "bc"])  # the same characters, other values


def test_a_column_of_ids_costs_its_characters_and_four_bytes_each() -> None:
    ids = [f"item-{i}" for i in range(100_000)]
    t = Texts(ids)
    held = sys.getsizeof(t._text) + sys.getsizeof(t._bounds._data)
    chars = sum(map(len, ids))
    assert held < chars + 4 * len(ids) + 1_000
    as_tuple = sys.getsizeof(tuple(ids)) + sum(map(sys.getsizeof, ids))
    assert held * 4 < as_tuple  # 14 bytes an id against 67


_INT64 = st.one_of(  # each width's edges: 2 bytes below 2**15, 4 below 2**31, 8 for the rest
    st.integers(-2, 2**15 + 1), st.integers(-(2**31) - 1, 2**31), st.integers(-(2**63), 2**63 - 1)
)


@given(st.lists(_INT64, max_size=30), st.data())
def test_ints_read_back_any_64_bit_values_in_two_or_four_bytes_when_they_fit(
    values: list[int], data: st.DataObject
) -> None:
    n = Ints(values)
    assert n.tolist() == values and list(n) == values
    fits = all(-(2**31) <= v < 2**31 for v in values)
    small = all(0 <= v < 2**15 for v in values)
    assert n.view.itemsize == (2 if small else 4 if fits else 8)
    s = data.draw(st.slices(len(values) + 1))
    assert n[s] == Ints(values[s]) and n[s].tolist() == values[s]
    assert pickle.loads(pickle.dumps(n)) == n


def test_ints_made_from_8_byte_native_encoding_are_the_same_values() -> None:
    from array import array

    wide = array("q", [1, -2, 2**40])
    assert Ints(wide.tobytes()).tolist() == [1, -2, 2**40]
    assert Ints(array("q", [1, 2]).tobytes()) == Ints([1, 2])  # narrowed: equal to the same values


@given(st.lists(st.integers(-3, 40), max_size=12), st.integers(0, 10**6))
def test_counted_keeps_values_that_count_up_by_one_as_a_range_and_any_other_as_ints(
    values: list[int], start: int
) -> None:
    run = list(range(start, start + len(values)))
    for seq in (values, run):
        column = counted(seq)
        assert list(column) == seq and counted(column) == column
        assert isinstance(column, range) == (seq == list(range(seq[0], seq[0] + len(seq))) if seq else True)
        assert column == counted(Ints(seq)) == counted(tuple(seq))  # equal values: equal columns
    assert counted(range(start, start + 9, 3)) == Ints(range(start, start + 9, 3))


def test_the_line_numbers_of_a_file_with_no_blank_line_cost_no_bytes_per_item() -> None:
    from judgecore.job.parsing import parse_items

    lines = [b'{"id": "q%d", "prompt": "p"}\n' % k for k in range(5000)]
    assert parse_items(lines).lines == range(1, 5001)
    with_blank = parse_items([*lines[:10], b"\n", *lines[10:]]).lines
    assert isinstance(with_blank, Ints) and with_blank[9:12] == Ints([10, 12, 13])


def test_taken_is_a_lazy_view_equal_to_the_values_at_its_positions() -> None:
    cids = Texts(["a", "b", "c", "d"])
    view = taken(cids, Ints([3, 1]))
    assert isinstance(view, Taken)
    assert list(view) == ["d", "b"] and view == ["d", "b"] and view[1] == "b" and list(view[1:]) == ["b"]
    assert taken(cids, range(4)) is cids  # all of it, in order: the column itself
    sizes = taken(Ints([10, 20, 30]), Ints([2, 0]))
    assert list(sizes) == [30, 10] and sum(sizes) == 40


@given(st.lists(st.one_of(st.none(), st.integers(1, 10**6)), max_size=30), st.data())
def test_a_sparse_column_reads_back_what_it_was_given_and_compares_like_the_tuple(
    values: list[int | None], data: st.DataObject
) -> None:
    c = Sparse(values)
    assert list(c) == values and [c[k] for k in range(len(values))] == values
    assert [c[-k] for k in range(1, len(values) + 1)] == [values[-k] for k in range(1, len(values) + 1)]
    assert c == tuple(values) and tuple(values) == c and hash(c) == hash(tuple(values))
    assert c.count(None) == values.count(None)
    s = data.draw(st.slices(len(values) + 2))
    assert list(c[s]) == values[s]
    assert pickle.loads(pickle.dumps(c)) == c
    for k in (len(values), -len(values) - 1):
        with pytest.raises(IndexError):
            c[k]


def test_a_sparse_column_keeps_a_slot_only_for_the_values_given() -> None:
    c = Sparse([None] * 100_000 + [b"{}"])
    assert len(c) == 100_001 and len(c._values) == 1 and c[100_000] == b"{}" and c[5] is None


_GROWING = st.lists(
    st.one_of(
        st.integers(0, 2**15 + 5), st.integers(2**16 - 3, 2**16 + 3), st.integers(2**31 - 2, 2**32 + 2)
    ),
    max_size=30,
)


@given(st.one_of(_GROWING, st.lists(_INT64, max_size=30)), st.data())
def test_an_ints_built_a_few_values_at_a_time_widens_as_it_must_and_equals_the_ints_of_its_values(
    values: list[int], data: st.DataObject
) -> None:
    from array import array

    from judgecore.job.ints import IntsBuilder

    builder, k = IntsBuilder(), 0
    while k < len(values):
        step = data.draw(st.integers(1, 5))
        if step == 1:
            builder.append(values[k])
        else:
            builder.extend(values[k : k + step])
        k += step
    assert len(builder) == len(values)
    built = builder.build()
    assert built == Ints(values) and built.tolist() == values  # the same bytes and width as made at once
    if all(0 <= v < 2**16 for v in values):
        assert Ints(array("H", values)) == Ints(values)
    if all(0 <= v < 2**32 for v in values):
        assert Ints(array("I", values)) == Ints(values)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), max_size=12), st.integers(1, 70_000))
def test_line_numbers_built_a_run_at_a_time_are_the_column_counted_makes_of_them(
    runs: list[tuple[int, int]], first: int
) -> None:
    from judgecore.job.ints import LinesBuilder

    builder, lines, at = LinesBuilder(), [], first
    for gap, count in runs:  # each run of `count` lines after `gap` blank ones
        at += gap
        if count == 1:
            builder.append(at)
        else:
            builder.add_run(at, count)
        lines += range(at, at + count)
        at += count
    column = builder.build()
    assert column == counted(lines) and list(column) == lines
    assert isinstance(column, range) == isinstance(counted(lines), range)


@given(st.lists(st.one_of(st.none(), st.integers(1, 10**6)), max_size=30), st.data())
def test_a_sparse_column_built_a_few_values_at_a_time_equals_the_one_made_at_once(
    values: list[int | None], data: st.DataObject
) -> None:
    from judgecore.job.columns import SparseBuilder

    builder: SparseBuilder[int] = SparseBuilder()
    k = 0
    while k < len(values):
        step = data.draw(st.integers(1, 4))
        part = values[k : k + step]
        if step == 1 and part[0] is not None:
            builder.put(k, part[0])
        elif step > 1:
            builder.put_many(
                [k + j for j, v in enumerate(part) if v is not None], [v for v in part if v is not None]
            )
        k += step
    start = data.draw(st.integers(0, len(values)))
    stop = data.draw(st.integers(start, len(values)))
    assert builder.window(start, stop) == values[start:stop]
    built = builder.build(len(values))
    assert built == Sparse(values) and list(built) == values
    assert (built._at, built._values) == (Sparse(values)._at, Sparse(values)._values)  # as narrow


def test_a_parse_holds_little_more_than_its_columns_at_its_peak() -> None:
    """The columns of a parse are kept narrow as it goes (issue 42): its peak is about its result, not
    8 bytes an item for each column until the end (before: 3.4x the result for a run's parse, 5.4x
    for a dry run's, at 100,000 items)."""
    import gc
    import tracemalloc

    from judgecore.job.parsing import parse_items

    n = 100_000
    lines = [b'{"id": "item-%d", "prompt": "Grade answer %d."}\n' % (k, k) for k in range(n)]
    for run, most in ((True, 2.5), (False, 3.0)):  # a run's parse, then a dry run's
        gc.collect()
        tracemalloc.start()
        try:
            items = parse_items(lines, hold_messages=False, digests=run, job="m" + "a" * 16, lazy_ids=not run)
            kept, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(items) == n and items.lines == range(1, n + 1)
        assert peak <= most * kept, (run, peak / kept)
        del items
