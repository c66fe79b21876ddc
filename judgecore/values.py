"""`frozen`: the project's decorator for its immutable values, `attrs.frozen` made cheaper to create.

`attrs.frozen` compiles a `__repr__` for every class from generated source; that compile is about half
of what creating a class costs, and a command's start-up creates every value class it imports. `frozen`
asks attrs for the rest (init, eq, hash, slots, ordering, pickling) and gives the class a `__repr__`
built from a closure over its fields instead, printing exactly what attrs' would:
`ClassName(field=value, ...)`, the fields in order, leaving out those declared `repr=False`, a field's
own `repr=callable` honoured, and `...` for a value already being printed further up the same repr.
A class that defines its own `__repr__` keeps it, as under attrs.
"""

from __future__ import annotations

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
        made = attrs.frozen(cls, kw_only=kw_only, order=order, eq=eq, repr=False)
        return _with_repr(made) if repr and not own_repr else made

    return wrap if maybe_cls is None else wrap(maybe_cls)
