"""Sets of a job's custom_ids held by position (`judgecore.job.idsets`) answer as the frozensets they stand
for: equality, membership, iteration in column order, and the set operators."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from judgecore.job.idsets import Marked, Picked, marked

COLUMN = tuple(f"c{k}" for k in range(8))


@given(st.lists(st.booleans(), min_size=8, max_size=8))
def test_picked_ids_equal_the_frozenset_of_the_same_ids(keep: list[bool]) -> None:
    expected = frozenset(c for c, k in zip(COLUMN, keep, strict=True) if k)
    picked = Picked.where(COLUMN, keep)
    assert expected == picked and picked == expected
    assert [c for c in COLUMN if c in expected] == list(picked), "in column order"
    assert all((c in picked) == (c in expected) for c in (*COLUMN, "other"))
    assert expected | {"x"} == picked | {"x"} and expected - {"c0"} == picked - {"c0"}


def test_every_id_of_a_column_is_picked_by_its_whole_range() -> None:
    picked = Picked(COLUMN, range(len(COLUMN)))
    assert frozenset(COLUMN) == picked and "c7" in picked and "c8" not in picked


@given(st.sets(st.integers(0, 7)), st.sets(st.text(min_size=1, max_size=3)))
def test_marked_ids_are_those_whose_byte_is_set_and_the_extra_ones(at: set[int], extra: set[str]) -> None:
    extra = {x for x in extra if x not in COLUMN}
    ids = COLUMN[::-1]  # the ids in another order than their positions
    positions = tuple(range(len(ids)))[::-1]
    mask = marked(bytes(len(ids)), at)
    expected = frozenset(COLUMN[p] for p in at) | extra
    got = Marked(ids, positions, mask, frozenset(extra))
    assert expected == got and len(expected) == len(got)
    assert all((c in got) == (c in expected) for c in (*COLUMN, *extra, "other"))


def test_marking_returns_new_bytes_and_skips_ids_outside_the_column() -> None:
    before = bytes(4)
    after = marked(before, [1, -1, 3])
    assert (bytes(4), b"\x00\x01\x00\x01") == (before, after)
