"""custom_id: the one key that ties an item to its requests, results and checkpoint rows.

A custom_id is `<readable prefix>-<digest>`: the prefix is the item id with every character outside
`[a-zA-Z0-9_-]` folded to `_` (cut so the whole fits in 64), the digest is 120 bits of SHA-256 over a
versioned domain tag, the job's key, the digest of what the request asks (`content`) and the item
id's UTF-8 bytes, in lowercase base32.

The job's key (`job_key`) is a pure function of the job's manifest (model, max_tokens, rubric digest,
verdict schema, design...): the same job started afresh, in another state dir, on another machine or
from the same rows in another file format, derives the same key, and with each request's content
digest (`judgecore.job.items.raw_digest`: its messages as sent and its max_tokens) the same custom_ids
(the `v3` tag). Two jobs that differ in their manifest, or in what they ask of an item under the same
id, never share a custom_id, so one job can never take another's batch in the workspace-wide listing
for its own, even when two data sets reuse the ids `0`, `1`, `2`. No random nonce enters an id.

Older state dirs keep the ids they have: `job=None` is the `v1` scheme (the digest covers the item id
alone) and a 16-character key drawn with a nonce (`v2`, before 2026-12-03) covers the key and the item
id; a `v3` key starts with `m` (`MANIFEST_KEY_PREFIX`).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice, repeat
from operator import add, eq, sub

from judgecore.job.errors import DuplicateIdError
from judgecore.job.texts import Keyed, Texts

CUSTOM_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DOMAIN = b"judgecore/custom_id/v1\x00"
_JOB_DOMAIN = b"judgecore/custom_id/v2\x00"
_MANIFEST_DOMAIN = b"judgecore/custom_id/v3\x00"
_JOB_KEY_RE = re.compile(r"^[a-z2-7]{16}$")
#: the first character of a `v3` job key (one made from the manifest alone: `job_key`)
MANIFEST_KEY_PREFIX = "m"
_MANIFEST_KEY_RE = re.compile(r"^m[a-z2-7]{16}$")
#: the bytes of a request's content digest in a `v3` custom_id (`judgecore.job.items.DIGEST_BYTES`)
CONTENT_BYTES = 16
_DIGEST_BYTES = 15  # 120 bits: 24 base32 characters, no padding
#: the bytes of each custom_id's digest (`digests_for`)
ID_DIGEST_BYTES = _DIGEST_BYTES
_DIGEST_CHARS = 24
_FIRST_DIGEST_BYTES = slice(0, _DIGEST_BYTES)
_MAX_PREFIX = 64 - 1 - _DIGEST_CHARS
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")
_SHA256_BYTES = 32
#: the bytes a safe id is made of, and the "\n" `custom_ids_for` joins ids with
_SAFE_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-\n"
#: the bytes of an id that is its own prefix whatever its place (no "_" a prefix could lose at an end)

try:  # the interpreter's own SHA-256: the same digests, without OpenSSL's per-hash set-up
    from _sha2 import sha256 as _sha256  # Python 3.12+
except ImportError:  # pragma: no cover - the module's name before 3.12
    try:
        from _sha256 import sha256 as _sha256  # type: ignore[no-redef]
    except ImportError:  # an interpreter built without it
        from hashlib import sha256 as _sha256
_HASH_DIGEST = type(_sha256()).digest
#: `hashlib.sha256`'s digests, from the interpreter's own module: what hashes a job's small values (its
#: key, a rubric's digest) without loading OpenSSL, which `import hashlib` does (about 4 ms at start)
sha256 = _sha256


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


def job_key(manifest_json: bytes, nonce: str | None = None) -> str:
    """A job's key for its custom_ids, from its manifest (canonical JSON bytes) alone: `m` and 80 bits
    of SHA-256 as 16 lowercase base32 characters (the `v3` ids, which cover each request's content).

    `nonce` makes the key of the `v2` scheme (state dirs bound between 2026-12-01 and 2026-12-03, whose
    key was drawn with a random nonce): kept so such a key can be told and its ids re-derived."""
    if nonce is not None:
        if not nonce:
            raise ValueError("a v2 job key needs a non-empty nonce")
        raw = _sha256(b"judgecore/job/v1\x00" + manifest_json + b"\x00" + nonce.encode()).digest()
        return _b32_lower(raw[:10])
    raw = _sha256(b"judgecore/job/v3\x00" + manifest_json).digest()
    return MANIFEST_KEY_PREFIX + _b32_lower(raw[:10])


def covers_content(job: str | None) -> bool:
    """Whether the custom_ids of job `job` cover each request's content digest (a `v3` key)."""
    return job is not None and job.startswith(MANIFEST_KEY_PREFIX) and len(job) == 17


def _domain(job: str | None) -> bytes:
    if job is None:
        return _DOMAIN
    if _MANIFEST_KEY_RE.fullmatch(job):
        return _MANIFEST_DOMAIN + job.encode("ascii") + b"\x00"
    if not _JOB_KEY_RE.fullmatch(job):
        raise ValueError(f"not a job key: {job!r} (from `job_key`)")
    return _JOB_DOMAIN + job.encode("ascii") + b"\x00"


def valid_job_key(job: str | None) -> None:
    """`ValueError` unless `job` is a job key (`job_key`'s) or None."""
    _domain(job)


def _contents_of(job: str | None, contents: bytes | None, n: int) -> bytes | None:
    """The content digests a job's ids are derived with: `contents` for a `v3` key (checked: one
    `CONTENT_BYTES` digest per id), None for an older key (whose ids never covered them)."""
    if not covers_content(job):
        return None
    if contents is None:
        raise ValueError(f"the custom_ids of job {job!r} cover each request's content: give its digests")
    if len(contents) != n * CONTENT_BYTES:
        raise ValueError(f"{n} ids but {len(contents)} content digest bytes")
    return contents


def _digest(item_id: str, job: str | None, content: bytes | None = None) -> str:
    body = item_id.encode("utf-8", "surrogatepass")
    if (kept := _contents_of(job, content, 1)) is not None:
        body = kept + body
    raw = _sha256(_domain(job) + body).digest()
    return _b32_lower(raw[:_DIGEST_BYTES])


def custom_id_for(item_id: str, *, job: str | None = None, content: bytes | None = None) -> str:
    """The deterministic custom_id of an item id (any string) in job `job` (its `job_key`; None: the
    `v1` ids of a state dir bound before job keys), whose request asks what `content` digests
    (`judgecore.job.items.raw_digest`; needed by a `v3` key only); always matches `CUSTOM_ID_RE`."""
    prefix = _UNSAFE.sub("_", item_id)[:_MAX_PREFIX].strip("_")
    digest = _digest(item_id, job, content)
    return f"{prefix}-{digest}" if prefix else digest


def custom_ids_for(
    item_ids: Sequence[str], *, job: str | None = None, contents: bytes | None = None
) -> tuple[str, ...]:
    """`custom_id_for` of many ids at once, with no Python-level step per id in the usual case.

    Every id is hashed by a chain of C-level `map`s (`digests_for`); the digests' base32 is one
    column-wise pass over all of them (see `_b32_dashed`). Ids already safe and short (no character to
    fold, at most `_MAX_PREFIX` long, no `_` to strip at either end: the usual case) are their own
    prefix, joined to their digests by one more `map`; any other id has its prefix made one by one.
    """
    return tuple(custom_ids_of_digests(item_ids, digests_for(item_ids, job=job, contents=contents)))


def digests_for(item_ids: Sequence[str], *, job: str | None = None, contents: bytes | None = None) -> bytes:
    """The digest of each id's custom_id in job `job` (`_DIGEST_BYTES` apiece, one after another):
    what `custom_ids_of_digests` makes the custom_ids of, each hashed by a chain of C-level `map`s.
    `contents`: each request's content digest (`CONTENT_BYTES` apiece), for a `v3` key."""
    kept = _contents_of(job, contents, len(item_ids))
    if not item_ids:
        return b""
    domain = _domain(job)
    joined = "\n".join(item_ids)
    ascii_ = joined.encode("ascii") if joined.isascii() else b"\x00"
    # every id of [a-zA-Z0-9_-] alone (no "\n" in one: the join splits back exactly), checked in C
    if not ascii_.translate(None, _SAFE_BYTES) and ascii_.count(b"\n") == len(item_ids) - 1:
        encoded: Iterable[bytes] = ascii_.split(b"\n")
    else:
        encoded = [i.encode("utf-8", "surrogatepass") for i in item_ids]
    if kept is not None:  # each id after its request's content digest (fixed length: unambiguous)
        cuts = map(
            slice, range(0, len(kept), CONTENT_BYTES), range(CONTENT_BYTES, len(kept) + 1, CONTENT_BYTES)
        )
        encoded = map(bytes.__add__, map(kept.__getitem__, cuts), encoded)
    digests = map(_HASH_DIGEST, map(_sha256, map(domain.__add__, encoded)))
    return b"".join(map(bytes.__getitem__, digests, repeat(_FIRST_DIGEST_BYTES)))


def own_prefixes(item_ids: Sequence[str]) -> bool:
    """Whether each of `item_ids` is its custom_id's prefix as it is: every id of `[a-zA-Z0-9_-]`
    alone, none empty nor longer than `_MAX_PREFIX`, none with a `_` at either end (the usual ids).
    Then a custom_id is its id, `-` and its digest's base32 (`Keyed` keeps them so). Checked in C."""

    return _own_lengths(Texts.of(item_ids)) is not None


def _own_lengths(texts: Texts) -> list[int] | None:
    """The length of each of `texts` when each is its own custom_id's prefix (`own_prefixes`), else
    None."""
    if not len(texts):
        return []
    joined = texts.joined()
    if not joined.isascii() or joined.encode("ascii").translate(None, _SAFE_BYTES[:-1]):
        return None
    lengths = list(texts.lengths())
    if min(lengths) < 1 or max(lengths) > _MAX_PREFIX:
        return None
    if "_" in joined:
        bounds = texts.bounds()
        firsts = map(joined.__getitem__, bounds[:-1])
        lasts = map(joined.__getitem__, map(sub, bounds[1:], repeat(1)))
        if "_" in firsts or "_" in lasts:
            return None
    return lengths


def custom_ids_of_digests(item_ids: Sequence[str], digests: bytes) -> Texts | Keyed:
    """The custom_ids of `item_ids` from their `digests_for`: a `Keyed` column of the ids and the
    digests when each id is its own prefix (`own_prefixes`: 15 bytes an item, no string held), else
    each made (`custom_id_for`'s prefix and the digest's base32) and held (`Texts`)."""
    n = len(item_ids)
    if len(digests) != n * _DIGEST_BYTES:
        raise ValueError(f"{n} ids but {len(digests)} digest bytes")

    if own_prefixes(item_ids):
        return Keyed(Texts.of(item_ids), digests, _DIGEST_BYTES, dashed_base32)
    dashed = dashed_base32(digests)
    sub_ = _UNSAFE.sub
    prefixes = [sub_("_", i)[:_MAX_PREFIX].strip("_") for i in item_ids]
    return Texts([p + d if p else d[1:] for p, d in zip(prefixes, dashed, strict=True)])


def job_custom_ids(
    item_ids: Sequence[str], *, job: str | None = None, contents: bytes | None = None
) -> Texts | Keyed:
    """The custom_ids of `item_ids` in job `job` (`custom_ids_for`'s values) as the column a job keeps:
    usually a `Keyed` one, 15 bytes an item (26 MB less than strings at 720,000 items)."""
    return custom_ids_of_digests(item_ids, digests_for(item_ids, job=job, contents=contents))


def dashed_base32(digests: bytes) -> list[str]:
    """`"-"` and the lowercase base32 of each of `digests` (`_DIGEST_BYTES` apiece), as
    `custom_id_for` ends: the suffix `Keyed` makes each custom_id with."""
    return _b32_dashed(digests, len(digests) // _DIGEST_BYTES, _DIGEST_BYTES)


def custom_id_lengths(item_ids: Texts) -> Iterator[int]:
    """The length of each id's custom_id, told by the ids alone (never by their digests, which a `v3`
    key derives from each request's content): in C when each is its own prefix (`own_prefixes`),
    else from each id's prefix as `custom_id_for` makes it."""
    lengths = _own_lengths(item_ids)
    if lengths is None:
        return map(_custom_id_length, item_ids)
    return map(add, lengths, repeat(1 + _DIGEST_CHARS))


def custom_id_lengths_of(item_ids: Sequence[str]) -> Iterator[int]:
    """`custom_id_lengths` of ids given as they are (a chunk of a parse's): no column made of them."""
    if not item_ids:
        return iter(())
    joined = "".join(item_ids)
    own = joined.isascii() and not joined.encode("ascii").translate(None, _SAFE_BYTES[:-1])
    if own:
        lengths = list(map(len, item_ids))
        own = min(lengths) >= 1 and max(lengths) <= _MAX_PREFIX
    if own and "_" in joined:
        under = repeat("_")
        own = not any(map(str.startswith, item_ids, under)) and not any(map(str.endswith, item_ids, under))
    if not own:
        return map(_custom_id_length, item_ids)
    return map(add, lengths, repeat(1 + _DIGEST_CHARS))


def _custom_id_length(item_id: str) -> int:
    prefix = _UNSAFE.sub("_", item_id)[:_MAX_PREFIX].strip("_")
    return len(prefix) + 1 + _DIGEST_CHARS if prefix else _DIGEST_CHARS


def _b32_dashed(raw: bytes, n: int, stride: int = _SHA256_BYTES) -> list[str]:
    """For each of the `n` digests in `raw` (`stride` bytes apiece: SHA-256's 32, or the kept
    `_DIGEST_BYTES`), `"-"` and the lowercase base32 of its first `_DIGEST_BYTES` bytes, as
    `_b32_lower` gives it: each of the 8 digit columns of each 5-byte group is one `translate` over
    all digests at once (see `_b32_lower`), written into a buffer of `"\n-" + 24 digits` per digest
    that one `split` cuts apart."""
    if not n:
        return []
    width = 2 + _DIGEST_CHARS
    out = bytearray(b"\n-" + bytes(_DIGEST_CHARS)) * n
    for group in range(_DIGEST_BYTES // 5):
        columns = [raw[5 * group + k :: stride] for k in range(5)]
        for digit, pieces in enumerate(_DIGIT_PIECES):
            value = 0
            for column, table in pieces:
                value |= int.from_bytes(columns[column].translate(table), "big")
            out[2 + 8 * group + digit :: width] = value.to_bytes(n, "big").translate(_TO_CHAR)
    return out.decode("ascii").split("\n")[1:]


def assign_custom_ids(
    item_ids: Iterable[str],
    lines: Iterable[int] | None = None,
    *,
    job: str | None = None,
    contents: bytes | None = None,
) -> tuple[str, ...]:
    """custom_ids for a whole job, in order; raises `DuplicateIdError` on a repeated id or a collision.

    `lines` gives each id's line number in the input, for the error message (1-based positions otherwise).
    """
    ids = tuple(item_ids)
    line_nos = tuple(lines) if lines is not None else tuple(range(1, len(ids) + 1))
    cids = custom_ids_for(ids, job=job, contents=contents)
    check_unique(ids, cids, line_nos)
    return cids


#: the buckets `distinct_hashes` splits the hashes into (a power of two)
_HASH_BUCKETS = 64


def distinct_hashes(hashes: Iterable[int]) -> bool:
    """Whether the `hash` of each of a job's custom_ids (`hashes`) is distinct: then so are the ids.
    False may be a collision of hashes only, or of their top 53 bits (the caller checks the ids).

    Equal hashes fall in the same bucket (by their low bits), so each bucket is sorted on its own: a
    job of 720,000 ids holds the buckets' `array`s (8 bytes a hash) and one bucket's sorted list at a
    time (0.5 MB), not a list of all of them (26-34 MB), nor a set of the ids. Each hash is sorted as
    a float: the sort compares floats in C, where a 64-bit int takes the generic comparison (twice
    the time)."""
    mask = _HASH_BUCKETS - 1
    buckets = [array("q") for _ in range(_HASH_BUCKETS)]
    into = [b.append for b in buckets]
    for h in hashes:
        into[h & mask](h)
    for bucket in buckets:
        ordered = sorted(map(float, bucket))
        if any(map(eq, ordered, islice(ordered, 1, None))):
            return False
    return True


def _distinct(values: Sequence[str]) -> bool:
    return distinct_hashes(array("q", map(hash, values))) or len(set(values)) == len(values)


def check_unique(ids: Sequence[str], cids: Sequence[str], lines: Sequence[int]) -> None:
    """Raise `DuplicateIdError` for the first repeated id or custom_id collision, naming both lines."""
    if len(lines) != len(ids):
        raise ValueError(f"{len(ids)} ids but {len(lines)} line numbers")
    if _distinct(cids) and _distinct(ids):  # (a `v3` id covers its content: equal ids may differ)
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
