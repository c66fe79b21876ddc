"""custom_id: the one key that ties an item to its requests, results and checkpoint rows.

A custom_id is `<readable prefix>-<digest>`: the prefix is the item id with every character outside
`[a-zA-Z0-9_-]` folded to `_` (cut so the whole fits in 64), the digest is 120 bits of SHA-256 over a
versioned domain tag, the job's key and the item id's UTF-8 bytes, in lowercase base32.

The job's key (`job_key`) is made once, when a state dir is first bound to a job, from the job's
manifest and a nonce the shell draws; the state dir keeps it, so every later run, in any process, on
any Python version and in any judgecore release that keeps the `v2` tag, derives the same ids. Two jobs
over the same items (a second rubric, a second model, or the same job in a second state dir) never
share a custom_id, so one job can never take another's batch in the workspace-wide listing for its own.

`job=None` is the `v1` scheme of state dirs bound before job keys existed: the digest covers the item
id alone. Such a dir keeps the ids it has.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable, Sequence

from judgecore.errors import DuplicateIdError

CUSTOM_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DOMAIN = b"judgecore/custom_id/v1\x00"
_JOB_DOMAIN = b"judgecore/custom_id/v2\x00"
_JOB_KEY_RE = re.compile(r"^[a-z2-7]{16}$")
_DIGEST_BYTES = 15  # 120 bits: 24 base32 characters, no padding
_DIGEST_CHARS = 24
_MAX_PREFIX = 64 - 1 - _DIGEST_CHARS
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")


_ALPHABET = b"abcdefghijklmnopqrstuvwxyz234567"
_TO_CHAR = bytes(_ALPHABET[x % 32] for x in range(256))


def _table(f: Callable[[int], int]) -> bytes:
    return bytes(f(x) for x in range(256))


# Each 5-byte group b0..b4 gives 8 base32 digits; digit d is the OR of bit fields of one or two bytes.
_DIGIT_PIECES: tuple[tuple[tuple[int, bytes], ...], ...] = (
    ((0, _table(lambda x: x >> 3)),),
    ((0, _table(lambda x: (x & 7) << 2)), (1, _table(lambda x: x >> 6))),
    ((1, _table(lambda x: (x >> 1) & 31)),),
    ((1, _table(lambda x: (x & 1) << 4)), (2, _table(lambda x: x >> 4))),
    ((2, _table(lambda x: (x & 15) << 1)), (3, _table(lambda x: x >> 7))),
    ((3, _table(lambda x: (x >> 2) & 31)),),
    ((3, _table(lambda x: (x & 3) << 3)), (4, _table(lambda x: x >> 5))),
    ((4, _table(lambda x: x & 31)),),
)


def _b32_lower(raw: bytes) -> str:
    """`base64.b32encode(raw).decode().lower()` for `len(raw) % 5 == 0`, a column at a time.

    The stdlib encoder loops in Python over every 5 bytes; here each of the 8 digit columns of all
    groups is one `translate` (and at most one OR of two columns as big integers), all in C.
    """
    groups = len(raw) // 5
    columns = [raw[k::5] for k in range(5)]
    out = bytearray(8 * groups)
    for digit, pieces in enumerate(_DIGIT_PIECES):
        value = 0
        for column, table in pieces:
            value |= int.from_bytes(columns[column].translate(table), "big")
        out[digit::8] = value.to_bytes(groups, "big")
    return out.translate(_TO_CHAR).decode("ascii")


def job_key(manifest_json: bytes, nonce: str) -> str:
    """A job's key for its custom_ids: 80 bits of SHA-256 over its manifest (canonical JSON bytes) and
    a nonce drawn once for its state dir, as 16 lowercase base32 characters."""
    if not nonce:
        raise ValueError("a job key needs a non-empty nonce")
    raw = hashlib.sha256(b"judgecore/job/v1\x00" + manifest_json + b"\x00" + nonce.encode()).digest()
    return base64.b32encode(raw[:10]).decode("ascii").lower()


def _domain(job: str | None) -> bytes:
    if job is None:
        return _DOMAIN
    if not _JOB_KEY_RE.fullmatch(job):
        raise ValueError(f"not a job key: {job!r} (16 base32 characters, from `job_key`)")
    return _JOB_DOMAIN + job.encode("ascii") + b"\x00"


def _digest(item_id: str, job: str | None) -> str:
    raw = hashlib.sha256(_domain(job) + item_id.encode("utf-8", "surrogatepass")).digest()
    return base64.b32encode(raw[:_DIGEST_BYTES]).decode("ascii").lower()


def custom_id_for(item_id: str, *, job: str | None = None) -> str:
    """The deterministic custom_id of an item id (any string) in job `job` (its `job_key`; None: the
    `v1` ids of a state dir bound before job keys); always matches `CUSTOM_ID_RE`."""
    prefix = _UNSAFE.sub("_", item_id)[:_MAX_PREFIX].strip("_")
    digest = _digest(item_id, job)
    return f"{prefix}-{digest}" if prefix else digest


def custom_ids_for(item_ids: Sequence[str], *, job: str | None = None) -> tuple[str, ...]:
    """`custom_id_for` of many ids at once: one base32 pass over all digests (see `_b32_lower`), and
    one scan for unsafe characters over all ids (ids already safe, the usual case, skip the fold)."""
    sha = hashlib.sha256
    domain = _domain(job)
    raw = b"".join(
        [sha(domain + i.encode("utf-8", "surrogatepass")).digest()[:_DIGEST_BYTES] for i in item_ids]
    )
    digests = _b32_lower(raw)
    if _UNSAFE.search("".join(item_ids)) is None:
        prefixes = [i[:_MAX_PREFIX].strip("_") for i in item_ids]
    else:
        sub = _UNSAFE.sub
        prefixes = [sub("_", i)[:_MAX_PREFIX].strip("_") for i in item_ids]
    step = _DIGEST_CHARS
    return tuple(
        [
            f"{p}-{digests[k : k + step]}" if p else digests[k : k + step]
            for p, k in zip(prefixes, range(0, len(digests), step), strict=True)
        ]
    )


def assign_custom_ids(
    item_ids: Iterable[str], lines: Iterable[int] | None = None, *, job: str | None = None
) -> tuple[str, ...]:
    """custom_ids for a whole job, in order; raises `DuplicateIdError` on a repeated id or a collision.

    `lines` gives each id's line number in the input, for the error message (1-based positions otherwise).
    """
    ids = tuple(item_ids)
    line_nos = tuple(lines) if lines is not None else tuple(range(1, len(ids) + 1))
    cids = custom_ids_for(ids, job=job)
    check_unique(ids, cids, line_nos)
    return cids


def check_unique(ids: Sequence[str], cids: Sequence[str], lines: Sequence[int]) -> None:
    """Raise `DuplicateIdError` for the first repeated id or custom_id collision, naming both lines."""
    if len(lines) != len(ids):
        raise ValueError(f"{len(ids)} ids but {len(lines)} line numbers")
    if len(set(cids)) == len(cids):  # a custom_id is a function of its id: no repeated id either
        return
    # A duplicate exists: walk in input order to report the first one, with both lines.
    seen_ids: dict[str, int] = {}
    seen_cids: dict[str, int] = {}
    for item_id, cid, line in zip(ids, cids, lines, strict=True):
        if item_id in seen_ids:
            raise DuplicateIdError(item_id, seen_ids[item_id], line)
        seen_ids[item_id] = line
        if cid in seen_cids:
            raise DuplicateIdError(item_id, seen_cids[cid], line, custom_id=cid)
        seen_cids[cid] = line
    raise AssertionError("unreachable: a duplicate was counted but not found")  # pragma: no cover
