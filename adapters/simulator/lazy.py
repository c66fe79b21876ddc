"""Lazy batches (`Scenario.lazy_batches`): the simulator keeps a batch's requests on disk and makes its
result lines a piece at a time as a client reads them, so its memory does not grow with the job.

Theory of operation. A create decides each request's outcome as a batch decides it (validation, model,
markers, the seeded mix by custom_id and attempt), counts the outcomes, and writes the requests to a
spill directory packed (`pack`: each distinct `params` less `messages` once, then a row a request with
its custom_id, attempt, messages and outcome; zlib, level 1); each custom_id's submission count is a
row of a SQLite table there. The batch in memory keeps only its size and its counts. When it ends,
nothing is read back unless it was cut short (an expiry or a cancel: those processed by then are
counted again). Each fetch of its results reads the packed requests back and yields the lines in the
batch's seeded order (no line is kept). A fetch's prompt cache is its own: the first request of each
shape writes the cache, the rest read it. A plain request (no marker, no pairwise answers, and a
scenario without drawn refusals, biases or unreadable answers) is answered from `VARIANTS` answers of
its shape, chosen by custom_id and seed, with its own message id and input tokens; any other is
answered as an eager batch answers it.
"""

from __future__ import annotations

import array
import hashlib
import shutil
import sqlite3
import tempfile
import weakref
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import orjson

from judgecore.values import frozen

from . import answers
from .cache import PromptCache

#: Answers drawn per request shape; a request's is picked by its custom_id and the seed.
VARIANTS: Final = 64
#: Lines per write of a streamed results body.
LINES_PER_CHUNK: Final = 512


class Spill:
    """A directory of compressed create bodies and a table of submission counts, removed with the
    simulator (or at exit)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="judgecore-sim-"))
        self._db = sqlite3.connect(self.dir / "submissions.db", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("CREATE TABLE subs (cid TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID")
        self._finalizer = weakref.finalize(self, _remove, self._db, self.dir)

    def submit(self, custom_ids: Sequence[str]) -> array.array[int]:
        """Counts one more submission of each custom_id; each one's attempt number (1 = first)."""
        up = "INSERT INTO subs VALUES (?, 1) ON CONFLICT(cid) DO UPDATE SET n = n + 1 RETURNING n"
        self._db.execute("BEGIN")
        try:
            got = array.array("I", (self._db.execute(up, (cid,)).fetchone()[0] for cid in custom_ids))
        finally:
            self._db.execute("COMMIT")
        return got

    def put(self, seq: int, packed: bytes) -> None:
        self._path(seq).write_bytes(zlib.compress(packed, 1))

    def get(self, seq: int) -> Packed:
        """The batch as `pack` made it."""
        got = orjson.loads(zlib.decompress(self._path(seq).read_bytes()))
        return Packed(got["shapes"], got["rows"])

    def close(self) -> None:
        self._finalizer()

    def _path(self, seq: int) -> Path:
        return self.dir / f"{seq}.z"


Outcome = Callable[[object, str, int], "str | dict[str, Any]"]


@frozen
class Packed:
    """A batch's requests as kept: each distinct `params` less `messages` once (`shapes`), and a row a
    request, `[custom_id, attempt, shape index, messages, outcome]` (shape -1: the params themselves,
    which were not an object with messages); the outcome is `Outcome`'s, decided at the create."""

    shapes: list[dict[str, Any]]
    rows: list[list[Any]]

    def params(self, row: list[Any]) -> Any:
        return row[3] if row[2] < 0 else {**self.shapes[row[2]], "messages": row[3]}


def pack(requests: list[Any], attempts: Sequence[int], outcome: Outcome) -> tuple[bytes, Counter[str]]:
    """`requests` (a create's, validated) as `Packed` keeps them, serialized, and the tally of their
    outcomes were every one processed."""
    shapes: list[dict[str, Any]] = []
    index: dict[bytes, int] = {}
    rows: list[list[Any]] = []
    tally: Counter[str] = Counter()
    for item, attempt in zip(requests, attempts, strict=True):
        params, cid = item["params"], item["custom_id"]
        kind = outcome(params, cid, attempt)
        tally["succeeded" if isinstance(kind, str) else kind["type"]] += 1
        if isinstance(params, dict) and "messages" in params:
            shape = {k: v for k, v in params.items() if k != "messages"}
            if shapes and shapes[-1] == shape:
                at = len(shapes) - 1
            else:
                at = index.setdefault(orjson.dumps(shape), len(shapes))
                if at == len(shapes):
                    shapes.append(shape)
            rows.append([cid, attempt, at, params["messages"], kind])
        else:
            rows.append([cid, attempt, -1, params, kind])
    return orjson.dumps({"shapes": shapes, "rows": rows}), tally


def _remove(db: sqlite3.Connection, path: Path) -> None:
    db.close()
    shutil.rmtree(path, ignore_errors=True)


def message_tokens(messages: object) -> int:
    """The input tokens of `messages` alone, framing included (as `answers.prompt_blocks` counts them)."""
    if not isinstance(messages, list):
        return 0
    total = 3 * len(messages)
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, str):
            total += answers.tokens_of_text(content)
        elif isinstance(content, list):
            total += sum(answers.block_tokens(b) for b in content)
    return total


def plain_text(messages: object) -> bool:
    """Messages the variants can answer: the last user text names no marker and no pairwise answers."""
    text = answers.last_user_text({"messages": messages})
    return "[[sim:" not in text and "Assistant A's Answer]" not in text


_ID: Final = "\x00id\x00"
_TOKENS: Final = 987_654_321_987


class _Shape:
    """The requests of one shape once the fetch's cache holds their prefix: `VARIANTS` result lines as
    templates (split where the custom_id, message id and input tokens go), and the input tokens above
    the messages'."""

    def __init__(self) -> None:
        self.seen = 0
        self.templates: list[tuple[bytes, bytes, bytes, bytes]] = []
        self.base_input = 0

    def line(
        self,
        params: dict[str, Any],
        cid: str,
        seed: int,
        batch_id: str,
        cache: PromptCache,
        now: float,
        message: Callable[..., dict[str, Any]],
    ) -> bytes:
        messages = params["messages"]
        if self.seen < 2:  # the first writes the cache, the second reads it: its usage is the shape's
            self.seen += 1
            plan = cache.plan(params, now)
            cache.commit(plan, now)
            made = message(params, plan.usage(), False, "batch", batch_id, cid)
            if self.seen == 2:
                self.base_input = plan.input_tokens - message_tokens(messages)
                usage = {**made["usage"], "input_tokens": _TOKENS}
                for k in range(VARIANTS):
                    probe = {**params, "messages": [{"role": "user", "content": f"variant {k}"}]}
                    m = message(probe, plan.usage(), False, "batch", batch_id, "variant", k)
                    m["id"] = _ID
                    m["usage"] = {**usage, "output_tokens": m["usage"]["output_tokens"],
                                  "output_tokens_details": m["usage"]["output_tokens_details"]}  # fmt: skip
                    whole = orjson.dumps({"custom_id": _ID, "result": {"type": "succeeded", "message": m}})
                    head, at_id, rest = whole.split(orjson.dumps(_ID)[1:-1])
                    at_tokens, tail = rest.split(str(_TOKENS).encode())
                    self.templates.append((head, at_id, at_tokens, tail))
            return orjson.dumps({"custom_id": cid, "result": {"type": "succeeded", "message": made}})
        ident = hashlib.blake2b(f"{seed}\x1f{batch_id}\x1f{cid}".encode(), digest_size=16).digest()
        head, at_id, at_tokens, tail = self.templates[ident[0] % VARIANTS]
        mid = ("msg_01" + ident[1:13].hex()).encode()
        tokens = self.base_input + message_tokens(messages)
        return b"%b%b%b%b%b%d%b" % (head, cid.encode(), at_id, mid, at_tokens, tokens, tail)


def result_lines(
    packed: Packed,
    order: Sequence[int],
    processed: Callable[[int], bool],
    cut_kind: str,
    *,
    seed: int,
    batch_id: str,
    cache: PromptCache,
    message: Callable[..., dict[str, Any]],
    now: float,
    variants_ok: bool,
    limit: int | None = None,
) -> Iterator[bytes]:
    """The batch's result lines in `order`, `LINES_PER_CHUNK` to a piece (the first `limit` only).

    `message(params, usage, truncate, tier, *salt, refuse=)` makes an answer (the simulator's)."""
    shapes: dict[int, _Shape] = {}
    lines: list[bytes] = []
    for count, i in enumerate(order):
        if limit is not None and count >= limit:
            break
        row = packed.rows[i]
        cid, kind = row[0], row[4]
        if not processed(i):
            line = orjson.dumps({"custom_id": cid, "result": {"type": cut_kind}})
        elif isinstance(kind, dict):
            line = orjson.dumps({"custom_id": cid, "result": kind})
        elif kind == "succeeded" and variants_ok and row[2] >= 0 and plain_text(row[3]):
            shape = shapes.get(row[2])
            if shape is None:
                shape = shapes[row[2]] = _Shape()
            line = shape.line(packed.params(row), cid, seed, batch_id, cache, now, message)
        else:
            params = packed.params(row)
            plan = cache.plan(params, now)
            cache.commit(plan, now)
            made = message(
                params, plan.usage(), kind == "max_tokens", "batch", batch_id, cid, refuse=kind == "refusal"
            )
            line = orjson.dumps({"custom_id": cid, "result": {"type": "succeeded", "message": made}})
        lines.append(line + b"\n")
        if len(lines) == LINES_PER_CHUNK:
            yield b"".join(lines)
            lines.clear()
    if lines:
        yield b"".join(lines)
