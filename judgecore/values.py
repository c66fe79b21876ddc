"""`frozen`: the project's decorator for its immutable values, `attrs.frozen` made cheaper to create.

`attrs.frozen` compiles a `__repr__`, an `__eq__` and a `__hash__` for every class from generated
source; that compile is most of what creating a class costs, and a command's start-up creates every
value class it imports. `frozen` asks attrs for the rest (init, slots, ordering, pickling) and gives
the class those three methods built from closures over its fields instead, each doing what attrs'
would:

- `__repr__` prints `ClassName(field=value, ...)`, the fields in order, leaving out those declared
  `repr=False`, a field's own `repr=callable` honoured, and `...` for a value already being printed
  further up the same repr;
- `__eq__` is NotImplemented for another class, else each `eq` field compared with `==` in order,
  stopping at the first unequal (a NaN field is unequal to itself, as under attrs); `__ne__` its negation;
- `__hash__` hashes the same tuple attrs' does (the class's name hashed, then the `eq` fields not
  declared `hash=False`), so a value hashes to the same number and a set of values iterates in the same
  order as before.

A class that defines its own `__repr__` (or `__eq__`, `__hash__`) keeps it, as under attrs; a class
with `order=True` or a field with an `eq=` key function keeps attrs' compiled `__eq__` and `__hash__`.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

import attrs

_C = TypeVar("_C", bound=type)

_printing = threading.local()


def _repr_of(fields: tuple[tuple[str, Callable[[Any], str], bool], ...]) -> Callable[[object], str]:
    """A `__repr__` printing `fields` (name, how to print it, whether `__init__` sets it) as attrs does."""

    def __repr__(self: object) -> str:
        try:
            seen: set[int] = _printing.seen
        except AttributeError:
            seen = _printing.seen = set()
        if id(self) in seen:
            return "..."
        seen.add(id(self))
        try:
            parts = [
                f"{name}={show(getattr(self, name) if init else getattr(self, name, attrs.NOTHING))}"
                for name, show, init in fields
            ]
            return f"{self.__class__.__qualname__.rsplit('>.', 1)[-1]}({', '.join(parts)})"
        finally:
            seen.discard(id(self))

    return __repr__


def _with_repr(cls: _C) -> _C:
    fields = tuple(
        (field.name, repr if field.repr is True else field.repr, field.init)
        for field in attrs.fields(cls)
        if field.repr is not False
    )
    cls.__repr__ = _repr_of(fields)  # type: ignore[assignment]
    return cls


def _eq_of(names: tuple[str, ...]) -> Callable[[object, object], bool]:
    """An `__eq__` comparing the fields `names` as attrs' does (`==` each, in order; no identity shortcut)."""
    if not names:

        def __eq__(self: object, other: object) -> bool:
            return True if other.__class__ is self.__class__ else NotImplemented

        return __eq__
    get = operator.attrgetter(*names)
    if len(names) == 1:

        def __eq__(self: object, other: object) -> bool:
            return get(self) == get(other) if other.__class__ is self.__class__ else NotImplemented

        return __eq__
    same = operator.eq

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(map(same, get(self), get(other)))

    return __eq__


def __ne__(self: object, other: object) -> bool:
    """attrs' `__ne__`: the negation of `__eq__`, NotImplemented passed on."""
    equal = self.__eq__(other)
    return NotImplemented if equal is NotImplemented else not equal


def _hash_of(type_hash: int, names: tuple[str, ...]) -> Callable[[object], int]:
    """A `__hash__` of `(type_hash, *fields)`, the tuple attrs' generated `__hash__` hashes."""
    if not names:
        return lambda self: hash((type_hash,))
    if len(names) == 1:
        (name,) = names
        return lambda self: hash((type_hash, getattr(self, name)))
    get = operator.attrgetter(*names)
    return lambda self: hash((type_hash, *get(self)))


def _shared_eq(cls: type) -> bool:
    """Whether `cls` (before attrs) can take the shared `__eq__` and `__hash__`: it defines neither, and
    no field of it declares an `eq=` or `order=` key function."""
    if {"__eq__", "__ne__", "__hash__"} & cls.__dict__.keys():
        return False
    for value in cls.__dict__.values():
        if type(value).__name__ == "_CountingAttr" and (
            value.eq_key is not None or value.order_key is not None
        ):
            return False
    return True


def _with_eq(cls: _C) -> _C:
    fields = attrs.fields(cls)
    compared = tuple(field.name for field in fields if field.eq)
    hashed = tuple(field.name for field in fields if field.hash is True or (field.hash is None and field.eq))
    # attrs' type hash: the hash of the name it gives the generated `__hash__`'s file
    type_hash = hash(f"<attrs generated hash {cls.__module__}.{getattr(cls, '__qualname__', cls.__name__)}>")
    cls.__eq__ = _eq_of(compared)  # type: ignore[assignment]
    cls.__ne__ = __ne__  # type: ignore[assignment]
    cls.__hash__ = _hash_of(type_hash, hashed)  # type: ignore[assignment]
    return cls


@overload
def frozen(maybe_cls: _C, /) -> _C: ...
@overload
def frozen(
    maybe_cls: None = None,
    /,
    *,
    kw_only: bool = False,
    order: bool = False,
    eq: bool = True,
    repr: bool = True,
) -> Callable[[_C], _C]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(attrs.field,))
def frozen(
    maybe_cls: _C | None = None,
    /,
    *,
    kw_only: bool = False,
    order: bool = False,
    eq: bool = True,
    repr: bool = True,
) -> _C | Callable[[_C], _C]:
    """`attrs.frozen` with the same keywords the project uses, its `__repr__` from `_repr_of`."""

    def wrap(cls: _C) -> _C:
        own_repr = "__repr__" in cls.__dict__
        shared_eq = eq and not order and _shared_eq(cls)
        made = attrs.frozen(cls, kw_only=kw_only, order=order, eq=eq and not shared_eq, repr=False)
        if shared_eq:
            made = _with_eq(made)
        return _with_repr(made) if repr and not own_repr else made

    return wrap if maybe_cls is None else wrap(maybe_cls)
