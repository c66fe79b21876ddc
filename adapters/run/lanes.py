"""A panel's lanes: a judge's lane is its provider, and for a served model its server (`lane_of`); each
lane has its own client (`clients_for`), built before anything is sent (`adapters.run.panels` sends
each lane's requests on its own route)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from adapters.providers.registry import provider_of
from judgecore.wire.providers import parse_judge


def lane_of(model: str) -> str:
    """The lane a judge's requests go on: its provider's name, a served model's with its URL."""
    if model.startswith("served:") and "@" not in model:  # a served judge's identity (no URL)
        return "served"
    judge = parse_judge(model)
    return f"served@{judge.url}" if judge.provider == "served" else judge.provider


def lanes(models: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The job's judges by lane, in the order the judges are given."""
    out: dict[str, list[str]] = {}
    for model in models:
        out.setdefault(lane_of(model), []).append(model)
    return {k: tuple(v) for k, v in out.items()}


def clients_for(
    models: Sequence[str], request_model: str, client: Any, environ: Mapping[str, str]
) -> dict[str, Any]:
    """A client per lane, built before anything is sent (a missing key is exit 2, not a half-sent
    panel): `client` (given, or built) for the request model's lane, the others from `environ`."""
    out = {lane_of(request_model): client}
    for model in models:
        lane = lane_of(model)
        if lane not in out:
            out[lane] = provider_of(model).client(environ)
    return out


__all__ = ["clients_for", "lane_of", "lanes"]
