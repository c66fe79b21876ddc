"""custom_id: the one key that ties an item to its requests, results and checkpoint rows.

A custom_id is `<readable prefix>-<digest>`: the prefix is the item id with every character outside
`[a-zA-Z0-9_-]` folded to `_` (cut so the whole fits in 64), the digest is 120 bits of SHA-256 over a
versioned domain tag and the item id's UTF-8 bytes, in lowercase base32. It depends on nothing but the
item id, so it is the same in every process, on every Python version and in every judgecore release
that keeps the `v1` tag.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable

from judgecore.errors import DuplicateIdError

CUSTOM_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DOMAIN = b"judgecore/custom_id/v1\x00"
_DIGEST_BYTES = 15  # 120 bits: 24 base32 characters, no padding
_DIGEST_CHARS = 24
_MAX_PREFIX = 64 - 1 - _DIGEST_CHARS
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")


def _digest(item_id: str) -> str:
    raw = hashlib.sha256(_DOMAIN + item_id.encode("utf-8", "surrogatepass")).digest()
    return base64.b32encode(raw[:_DIGEST_BYTES]).decode("ascii").lower()


def custom_id_for(item_id: str) -> str:
    """The deterministic custom_id of an item id (any string); always matches `CUSTOM_ID_RE`."""
    prefix = _UNSAFE.sub("_", item_id)[:_MAX_PREFIX].strip("_")
    digest = _digest(item_id)
    return f"{prefix}-{digest}" if prefix else digest


def assign_custom_ids(item_ids: Iterable[str], lines: Iterable[int] | None = None) -> tuple[str, ...]:
    """custom_ids for a whole job, in order; raises `DuplicateIdError` on a repeated id or a collision.

    `lines` gives each id's line number in the input, for the error message (1-based positions otherwise).
    """
    ids = tuple(item_ids)
    line_nos = tuple(lines) if lines is not None else tuple(range(1, len(ids) + 1))
    seen_ids: dict[str, int] = {}
    seen_cids: dict[str, tuple[str, int]] = {}
    out: list[str] = []
    for item_id, line in zip(ids, line_nos, strict=True):
        if item_id in seen_ids:
            raise DuplicateIdError(item_id, seen_ids[item_id], line)
        seen_ids[item_id] = line
        cid = custom_id_for(item_id)
        if cid in seen_cids:
            raise DuplicateIdError(item_id, seen_cids[cid][1], line, custom_id=cid)
        seen_cids[cid] = (item_id, line)
        out.append(cid)
    return tuple(out)
