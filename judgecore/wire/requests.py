"""Requests: what a job sends for its items, as values that hold no messages, and the wire encoder.

A `Request` is an item made ready to send: its custom_id, item id, max_tokens, and `size`, the exact
byte length of its `{"custom_id", "params"}` object as it will be sent in a batch create body. It
carries no messages: they are most of a job's bytes, and the shell keeps them (the input file, the
checkpoint) and hands them to the encoder of what it sends. The shared part of every request (model,
rubric system block) is serialized once in a `RequestTemplate`; `Request.body(template, messages_json)`
joins the pieces, byte for byte what `orjson.dumps({"custom_id": ..., "params": {...}})` would give,
without re-serializing the rubric 100,000 times.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import add
from types import MappingProxyType
from typing import Any, overload

import attrs
import orjson

from judgecore.job.columns import taken
from judgecore.job.ints import Ints, positions_of
from judgecore.job.items import Item, Items, RoutePath
from judgecore.job.texts import Texts, texts_of
from judgecore.values import frozen


def cache_control_for(path: RoutePath) -> dict[str, str]:
    """The rubric's cache marker: 5-minute on the sync path, 1 hour in batches (they outlive 5 minutes)."""
    return {"type": "ephemeral"} if path == "sync" else {"type": "ephemeral", "ttl": "1h"}


def _head(model: str) -> bytes:
    return b'","params":{"model":' + orjson.dumps(model) + b',"max_tokens":'


@frozen
class RequestTemplate:
    """What every request of a job shares, serialized once: model, default max_tokens, rubric block,
    and the optional `output_config` and `thinking` parameters."""

    model: str
    max_tokens: int
    path: RoutePath
    system_json: bytes | None
    output_config_json: bytes | None = None  # a verdict schema's `output_config`, serialized once
    thinking_json: bytes | None = None  # the SDK's `thinking` parameter (`--thinking`), serialized once
    _head: bytes = attrs.field(init=False, repr=False, eq=False)
    _tail_prefix: bytes = attrs.field(init=False, repr=False, eq=False)

    def with_model(self, model: str) -> RequestTemplate:
        """The same template asking `model` (a panel's judge); itself for its own model."""
        return self if model == self.model else attrs.evolve(self, model=model)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_head", _head(self.model))
        system = b',"system":' + self.system_json if self.system_json is not None else b""
        if self.output_config_json is not None:
            system += b',"output_config":' + self.output_config_json
        if self.thinking_json is not None:
            system += b',"thinking":' + self.thinking_json
        object.__setattr__(self, "_tail_prefix", system + b',"messages":')

    @classmethod
    def build(
        cls,
        *,
        model: str,
        max_tokens: int,
        rubric: str | None,
        path: RoutePath,
        output_config: Mapping[str, Any] | None = None,
        thinking: Mapping[str, Any] | None = None,
    ) -> RequestTemplate:
        """The template for one route; the rubric becomes a system block list with its cache marker;
        `output_config` (a verdict schema's structured-output format) and `thinking` (the SDK's
        `thinking` parameter, e.g. `{"type": "adaptive"}`) go on every request."""
        system = None
        if rubric:
            block = {"type": "text", "text": rubric, "cache_control": cache_control_for(path)}
            system = orjson.dumps([block])
        oc = orjson.dumps(dict(output_config)) if output_config is not None else None
        th = orjson.dumps(dict(thinking)) if thinking is not None else None
        return cls(
            model=model,
            max_tokens=max_tokens,
            path=path,
            system_json=system,
            output_config_json=oc,
            thinking_json=th,
        )

    @property
    def fixed_size(self) -> int:
        """Bytes every request body carries besides its custom_id, max_tokens digits and messages."""
        return len(b'{"custom_id":"') + len(self._head) + len(self._tail_prefix) + len(b"}}")

    def params(self, item_max_tokens: int | None, messages_json: bytes) -> dict[str, Any]:
        """The Messages API params of one request, as a dict (the sync path hands it to the SDK)."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": item_max_tokens or self.max_tokens,
        }
        if self.system_json is not None:
            params["system"] = orjson.loads(self.system_json)
        if self.output_config_json is not None:
            params["output_config"] = orjson.loads(self.output_config_json)
        if self.thinking_json is not None:
            params["thinking"] = orjson.loads(self.thinking_json)
        params["messages"] = orjson.loads(messages_json)
        return params


@frozen
class Request:
    """One item ready to send, without its messages: custom_id, max_tokens, its exact size on the
    wire, and the size of its serialized messages (the encoder is given the messages themselves)."""

    custom_id: str
    item_id: str
    max_tokens: int
    size: int
    message_size: int
    #: a panel's judge (`judgecore.job.designs`); None: the template's model
    model: str | None = None

    def pieces(self, template: RequestTemplate, messages_json: bytes) -> tuple[bytes, ...]:
        """The pieces whose concatenation is `body(template, messages_json)` (most are shared with
        every request); `messages_json` is this request's serialized messages."""
        head = template._head if self.model is None or self.model == template.model else _head(self.model)
        return (
            b'{"custom_id":"',
            self.custom_id.encode("ascii"),
            head,
            str(self.max_tokens).encode("ascii"),
            template._tail_prefix,
            messages_json,
            b"}}",
        )

    def body(self, template: RequestTemplate, messages_json: bytes) -> bytes:
        """The exact `{"custom_id":...,"params":{...}}` bytes of this request in a batch create body."""
        return b"".join(self.pieces(template, messages_json))

    def params(self, template: RequestTemplate, messages_json: bytes) -> dict[str, Any]:
        """The Messages API params of this request (for the sync path)."""
        if self.model is not None:
            template = template.with_model(self.model)
        return template.params(self.max_tokens, messages_json)


def _range(self: Requests) -> range:
    return range(len(self._cids))


@frozen(eq=False, repr=False)
class Requests(Sequence[Request]):
    """Requests as columns: a `Sequence[Request]` over the columns of a job's `Items` (shared, not
    copied) and their sizes, in the order of `positions` (a `Request` is built when one is read).

    A slice or a `select` is another view of the same columns, so a job's sub-batches, rounds and
    queues cost a position per request, never an object. Two views are equal when they hold equal
    requests in the same order (a `Requests` is not equal to a tuple: compare `tuple(requests)`).
    """

    _cids: Sequence[str] = attrs.field(converter=texts_of)
    _ids: Sequence[str] = attrs.field(converter=Texts.of)
    _max_tokens: Ints = attrs.field(converter=Ints.of)
    _sizes: Ints = attrs.field(converter=Ints.of)
    _msg_sizes: Ints = attrs.field(converter=Ints.of)
    positions: Sequence[int] = attrs.field(
        default=attrs.Factory(_range, takes_self=True), converter=positions_of
    )
    #: each request's model, for a panel; None: every request asks the template's model
    _models: tuple[str | None, ...] | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def of(cls, requests: Iterable[Request]) -> Requests:
        """The columns of `requests` (already `Requests`: itself)."""
        if isinstance(requests, Requests):
            return requests
        rs = tuple(requests)
        models = tuple(r.model for r in rs)
        return cls(
            tuple(r.custom_id for r in rs),
            tuple(r.item_id for r in rs),
            [r.max_tokens for r in rs],
            [r.size for r in rs],
            [r.message_size for r in rs],
            models=models if any(m is not None for m in models) else None,
        )

    def _view(self, positions: Sequence[int]) -> Requests:
        return attrs.evolve(self, positions=positions)

    def _column(self, column: Sequence[Any]) -> Sequence[Any]:
        return taken(column, self.positions)  # the column itself, or a lazy view: never a copy

    @property
    def custom_ids(self) -> Sequence[str]:
        return self._column(self._cids)

    @property
    def sizes(self) -> Sequence[int]:
        return self._column(self._sizes)

    @property
    def max_tokens(self) -> Sequence[int]:
        return self._column(self._max_tokens)

    @property
    def item_ids(self) -> Sequence[str]:
        return self._column(self._ids)

    @property
    def models(self) -> Sequence[str | None]:
        """Each request's model (a panel's judge; None: the template's), from the column."""
        if self._models is None:
            return [None] * len(self)
        return self._column(self._models)

    @property
    def message_sizes(self) -> Sequence[int]:
        """The byte length of each request's serialized messages."""
        return self._column(self._msg_sizes)

    def one_model(self, model: str) -> bool:
        """Whether every request of this view asks `model` (the template's: no panel's other judge)."""
        if self._models is None:
            return True
        return all(m is None or m == model for m in self.models)

    def bound_inputs(self, position: int) -> tuple[int, int]:
        """`(size, max_tokens)` of the request at `position` of the columns: what bounds its cost."""
        return self._sizes.view[position], self._max_tokens.view[position]

    def select(self, custom_ids: Iterable[str], index: Mapping[str, int] | None = None) -> Requests:
        """The view of these requests, in the order given (`index`: `position_index()`, when kept).

        Without an index, one walk of the columns finds the positions of these ids alone: a probe's
        one id costs a pass, not a dict of the job's every custom_id (127 MB at 720,000 requests), and
        the pass stops at the last of them (a probe's id is the first pending one: 0.15 CPU s saved at
        720,000 requests)."""
        wanted = custom_ids if isinstance(custom_ids, Sequence) else list(custom_ids)
        if index is None:
            keep = frozenset(wanted)
            index = {}
            for c, p in zip(self.custom_ids, self.positions, strict=True):
                if c in keep:
                    index[c] = p
                    if len(index) == len(keep):
                        break
        return self._view(Ints([index[c] for c in wanted]))

    def only(self, keep: Iterable[str] | frozenset[str]) -> Requests:
        """The view of the requests whose custom_id is in `keep`, in this order."""
        keep = keep if isinstance(keep, (set, frozenset)) else frozenset(keep)
        cids = self._cids
        return self._view(Ints([p for p in self.positions if cids[p] in keep]))

    def position_index(self) -> dict[str, int]:
        """custom_id -> its position in the columns, for the requests of this view."""
        return dict(zip(self.custom_ids, self.positions, strict=True))

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, k: int) -> Request: ...
    @overload
    def __getitem__(self, k: slice) -> Requests: ...
    def __getitem__(self, k: int | slice) -> Request | Requests:
        if isinstance(k, slice):
            return self._view(self.positions[k])
        return self.at(self.positions[k])

    def at(self, position: int) -> Request:
        """The request at `position` of the columns (see `position_index`)."""
        p = position
        model = None if self._models is None else self._models[p]
        return Request(
            self._cids[p],
            self._ids[p],
            self._max_tokens.view[p],
            self._sizes.view[p],
            self._msg_sizes.view[p],
            model,
        )

    def __iter__(self) -> Iterator[Request]:
        cols: tuple[Sequence[Any], ...] = (
            self._cids,
            self._ids,
            self._max_tokens,
            self._sizes,
            self._msg_sizes,
        )
        if self._models is not None:
            cols = (*cols, self._models)
        return map(Request, *map(self._column, cols))  # each column read in C, a view's as well

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Requests):
            return NotImplemented
        return self is other or (len(self) == len(other) and all(map(Request.__eq__, self, other)))

    def __hash__(self) -> int:  # equal views hold the same custom_ids in the same order
        return hash(tuple(self.custom_ids))

    def __repr__(self) -> str:
        cids = list(self.custom_ids[:5])
        return f"Requests({len(self)} requests: {cids!r}{' ...' if len(self) > 5 else ''})"


def build_requests(items: Sequence[Item], template: RequestTemplate) -> Requests:
    """Requests for `items`, in order, each with its exact serialized size (see `Request.body`).

    The size is the request's bytes in a batch create body of `template`'s model and rubric; the
    sync path sends the same request with `params(sync_template, ...)` and never reads the size. The
    requests share the items' columns (see `Requests`); they need the messages' sizes only, never
    the messages."""
    cols = Items.of(items)
    default_mt = template.max_tokens
    msg_sizes = cols.message_sizes
    given = cols.max_tokens
    # each size: the fixed bytes, the custom_id, the max_tokens digits and the messages, summed in C
    fixed, cid_lengths = template.fixed_size, cols.custom_ids.lengths()
    if given.count(None) == len(given):  # the usual job: every request asks the default
        mts = Ints(array("q", [default_mt]) * len(given))
        rest = repeat(fixed + len(str(default_mt)))  # its digits are every request's: fixed bytes too
        sizes: Sequence[int] = array("q", map(add, cid_lengths, map(add, msg_sizes.view, rest)))
    else:
        filled = [m or default_mt for m in given]
        mts = Ints(filled)
        with_digits = map(add, cid_lengths, map(len, map(str, filled)))
        sizes = array("q", map(add, with_digits, map(add, msg_sizes.view, repeat(fixed))))
    models = cols.models
    if models is not None:  # a panel: each request's body names its own model
        own = len(orjson.dumps(template.model))
        extra = {m: len(orjson.dumps(m)) - own for m in set(models) if m is not None}
        sizes = [s + extra[m] if m is not None else s for s, m in zip(sizes, models, strict=True)]
    return Requests(cols.custom_ids, cols.ids, mts, sizes, msg_sizes, models=models)


@frozen(eq=False, repr=False)
class RequestIndex(Mapping[str, Request]):
    """The requests of a run by custom_id, over the columns of a `Requests` with no object per request
    (one is built when read). `select` of ids in column order (a round's, always) walks the columns;
    a lookup by id (a budget's bounds) goes through `positions`, made once, read-only."""

    requests: Requests
    #: custom_id -> position in the columns, read-only; empty until `indexed()` (a lookup by id) asks
    positions: Mapping[str, int] = attrs.field(default=MappingProxyType({}))

    @classmethod
    def of(cls, requests: Iterable[Request] | Mapping[str, Request]) -> RequestIndex:
        """The index of `requests` (a `Requests`, any iterable of `Request`, or a mapping of them)."""
        if isinstance(requests, RequestIndex):
            return requests
        if isinstance(requests, Mapping):
            requests = requests.values()
        return cls(Requests.of(requests))

    def indexed(self) -> RequestIndex:
        """The same index with its `positions` made (itself when they are): what a lookup by id needs."""
        if self.positions or not self.requests:
            return self
        return attrs.evolve(self, positions=MappingProxyType(self.requests.position_index()))

    def _positions(self) -> Mapping[str, int]:
        return self.positions if self.positions or not self.requests else self.requests.position_index()

    def __getitem__(self, custom_id: str) -> Request:
        return self.requests.at(self._positions()[custom_id])

    def bound_inputs(self, custom_id: str) -> tuple[int, int]:
        """`(size, max_tokens)` of one request, read from the columns (not its messages)."""
        return self.requests.bound_inputs(self._positions()[custom_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self.requests.custom_ids)

    def __len__(self) -> int:
        return len(self.requests)

    def __contains__(self, custom_id: object) -> bool:
        return custom_id in self._positions()

    def select(self, custom_ids: Sequence[str]) -> Requests:
        """The requests of these custom_ids, in the order given, as a view."""
        view = self.requests.only(frozenset(custom_ids))
        if len(view) == len(custom_ids) and all(map(str.__eq__, view.custom_ids, custom_ids)):
            return view
        return self.requests.select(custom_ids, self._positions())

    def __repr__(self) -> str:
        return f"RequestIndex({len(self)} requests)"


def custom_ids_of(requests: Iterable[Request]) -> tuple[str, ...]:
    """The custom_ids of `requests`, in order (from the column of a `Requests` view, no objects)."""
    if isinstance(requests, Requests):
        return tuple(requests.custom_ids)
    return tuple(r.custom_id for r in requests)


def item_ids_of(requests: Iterable[Request]) -> tuple[str, ...]:
    """The item ids of `requests`, in order (from the column of a `Requests` view, no objects)."""
    if isinstance(requests, Requests):
        return tuple(requests.item_ids)
    return tuple(r.item_id for r in requests)


def sizes_of(requests: Iterable[Request]) -> Sequence[int]:
    """The sizes of `requests`, in order (from the column of a `Requests` view, no objects)."""
    if isinstance(requests, Requests):
        return requests.sizes
    return [r.size for r in requests]
