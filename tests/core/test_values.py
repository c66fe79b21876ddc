"""The project's `frozen` against `attrs.frozen`: what a user, a snapshot or an error message sees is the same."""

from __future__ import annotations

import copy
import math
import pickle

import attrs
import pytest

from judgecore.decide.breaker import BreakerPolicy
from judgecore.values import frozen


@frozen(kw_only=True)
class Kept:
    """A project value at module level, so that pickle can find its class."""

    x: int
    label: str = "a"
    loose: int = attrs.field(default=0, eq=False)


def _pair(**keywords):
    """The same class made twice, by `attrs.frozen` and by the project's `frozen`."""

    def body():
        class Point:
            x: int
            label: str = "a"
            secret: bytes = attrs.field(default=b"k", repr=False)
            shown: float = attrs.field(default=0.5, repr=lambda value: f"<{value}>")
            loose: int = attrs.field(default=0, eq=False)
            unhashed: int = attrs.field(default=0, hash=False)

        return Point

    return attrs.frozen(body(), **keywords), frozen(**keywords)(body())


@pytest.mark.parametrize("keywords", [{}, {"kw_only": True}, {"order": True}])
def test_repr_is_attrs_text_exactly(keywords):
    theirs, ours = _pair(**keywords)
    value = {"x": 3, "label": "b'q'", "secret": b"s", "shown": 2.0}
    assert repr(theirs(**value)) == repr(ours(**value))
    assert "Point(x=3, label=\"b'q'\", shown=<2.0>, loose=0, unhashed=0)" == repr(ours(**value))


def test_nested_and_recursive_values_print_as_attrs_prints_them():
    theirs, ours = _pair()
    assert repr(theirs(x=theirs(x=1))) == repr(ours(x=ours(x=1)))
    cycle = ours(x=[])
    cycle.x.append(cycle)
    assert "Point(x=[...], label='a', shown=<0.5>, loose=0, unhashed=0)" == repr(cycle)


def test_equality_and_hash_are_attrs_own():
    theirs, ours = _pair()
    assert ours(x=1) == ours(x=1, loose=9)  # an eq=False field is not compared
    assert ours(x=1) != ours(x=2)
    assert ours(x=1) != theirs(x=1)  # another class is never equal
    assert hash(theirs(x=1, unhashed=5)) == hash(
        ours(x=1, unhashed=5)
    )  # the same number: sets keep their order
    assert hash(ours(x=1, unhashed=5)) == hash(ours(x=1, unhashed=6))
    nan = ours(x=math.nan)  # compared field by field, not as a tuple: NaN is unequal even to itself
    assert (nan == nan) == (theirs(x=math.nan) == theirs(x=math.nan))
    assert NotImplemented == ours(x=1).__eq__(object())


def test_a_project_value_pickles_copies_evolves_and_stays_frozen():
    value = Kept(x=1, label="z", loose=4)
    assert value == pickle.loads(pickle.dumps(value))
    assert 4 == pickle.loads(pickle.dumps(value)).loose
    assert value == copy.deepcopy(value)
    assert value == copy.copy(value)
    assert Kept(x=2, label="z") == attrs.evolve(value, x=2)
    assert Kept(x=2, label="z") != value
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        value.x = 5  # type: ignore[misc]
    assert not hasattr(value, "__dict__")  # slotted


def test_a_project_value_class_is_still_attrs_and_prints_as_before():
    assert attrs.has(BreakerPolicy)
    assert repr(BreakerPolicy()).startswith("BreakerPolicy(")
    assert BreakerPolicy() == BreakerPolicy()
    assert {BreakerPolicy(), BreakerPolicy()} == {BreakerPolicy()}
