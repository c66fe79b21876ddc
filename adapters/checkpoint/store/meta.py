"""The job's metadata in the checkpoint, one typed field per key: `store.route` is a `Route`,
`store.rate_limits` a `RateLimitReading`, `store.deadline` the epoch seconds of the last run's deadline,
instead of `get_meta("route")` with a string any caller may misspell and a dict every caller decodes.

The stored JSON is unchanged (a state dir written before reads the same): each `Field` names its key
and how its value is encoded and decoded. Assigning None forgets a value; reading a key never written
gives None. `get_meta` and `set_meta` remain as the raw layer the fields stand on (tests write odd values
through them).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

import attrs
import orjson

from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.routing import Route
from judgecore.job.designs import Design

T = TypeVar("T")


def _same(value: Any) -> Any:
    return value


class Field(Generic[T]):
    """One key of the `meta` table as an attribute of the store: read decodes, assignment encodes."""

    def __init__(
        self, key: str, decode: Callable[[Any], T] = _same, encode: Callable[[T], Any] = _same
    ) -> None:
        self.key = key
        self._decode = decode
        self._encode = encode

    @overload
    def __get__(self, store: None, owner: type) -> Field[T]: ...
    @overload
    def __get__(self, store: Meta, owner: type) -> T | None: ...
    def __get__(self, store: Meta | None, owner: type) -> Field[T] | T | None:
        if store is None:
            return self
        raw = store.get_meta(self.key)
        return None if raw is None else self._decode(raw)

    def __set__(self, store: Meta, value: T | None) -> None:
        store.set_meta(self.key, None if value is None else self._encode(value))


class Meta:
    """The job's metadata (a part of `adapters.checkpoint.store.Store`)."""

    _conn: sqlite3.Connection

    def get_meta(self, key: str) -> Any:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return orjson.loads(row[0]) if row else None

    def set_meta(self, key: str, value: Any) -> None:
        with self._tx() as c:  # type: ignore[attr-defined]  # `Connection._tx`, beside it in `Store`
            c.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, orjson.dumps(value).decode()),
            )

    #: the job's manifest: model, rubric digest, the settings that change requests (`bind_job` writes it)
    manifest: Field[dict[str, Any]] = Field("manifest")
    #: the key the job's custom_ids are derived with (`bind_job` writes it; None: `v1` ids)
    ids_job: Field[str] = Field("custom_id_job")
    #: how the job was last started (input, flags), for its rerun command
    invocation: Field[dict[str, Any]] = Field("invocation")
    #: the route the job took (`RecordRoute`)
    route: Field[Route] = Field("route", lambda raw: Route(**raw), attrs.asdict)
    #: the rate limits read from the API's headers (or set by `--otpm`)
    rate_limits: Field[RateLimitReading] = Field(
        "rate_limits", RateLimitReading.from_json, RateLimitReading.to_json
    )
    #: the last run's `--deadline`, epoch seconds (None: that run had none)
    deadline: Field[float] = Field("deadline", lambda raw: raw.get("at"), lambda at: {"at": at})
    #: the rubric's full text (the manifest keeps its digest), for the report
    rubric: Field[str] = Field("rubric", lambda raw: raw.get("text"), lambda text: {"text": text})
    #: the verdict spec's JSON as the last run gave it (`spec_from_json` reads it as each reader needs)
    verdict: Field[dict[str, Any]] = Field("verdict")
    #: a multi-request design (None: one request an item)
    design: Field[Design] = Field("design", Design.from_json, Design.to_json)
    #: the estimate of the whole job on its route: `estimated_cost_usd`, `all_sync_cost_usd`
    estimate: Field[dict[str, Any]] = Field("estimate")
    #: the output file last written: `stamp`, `counts`, `unparsed`
    output: Field[dict[str, Any]] = Field("output")
    #: the inspect_ai log the job's input came from
    inspect_log: Field[str] = Field("inspect_log")
    #: the deadline's switch a run made (`adapters.run.switch`): `at`, `latest_switch`, `reason`,
    #: `extra_usd`; once there, the job's rest goes on the sync route (a rerun finishes the switch)
    switch: Field[dict[str, Any]] = Field("switch")
    #: the record of a run that finished the job, for an exact repeat (`adapters.checkpoint.finished`)
    finished: Field[dict[str, Any]] = Field("finished")
    #: the state dir's batch tag, drawn once: what names its files and batches on a provider that
    #: takes names (`adapters.providers.port.BatchMeta.job`)
    batch_tag: Field[str] = Field("batch_tag")
    #: a panel's lanes that took their batch route (`adapters.run.lanes.batch_lanes`), as the run chose
    #: them: what `status` says each judge's route is
    batch_lanes: Field[list[str]] = Field("batch_lanes")

    def drawn_batch_tag(self) -> str:
        """The state dir's batch tag, drawn (and kept) the first time it is asked for."""
        tag = self.batch_tag
        if tag is None:
            tag = self.batch_tag = os.urandom(6).hex()  # `secrets.token_hex`, without loading hashlib
        return tag

    def upload_of(self, sub_id: int) -> str | None:
        """The file id of a sub-batch's uploaded input (OpenAI's), recorded before its create."""
        file_id = self.get_meta(f"upload:{sub_id}")
        return file_id if isinstance(file_id, str) else None

    def record_upload(self, sub_id: int, file_id: str) -> None:
        """Durably record a sub-batch's uploaded file, before the create that is made from it."""
        self.set_meta(f"upload:{sub_id}", file_id)


__all__ = ["Field", "Meta"]
