"""Resume: given everything the checkpoint knows, what is left to do for each custom_id.

Every custom_id of the job lands in exactly one of four sets: `final` (succeeded, miss, quarantined:
never sent again), `poll` (sits in a batch still live: poll that batch, do not resend), `exhausted`
(retried `max_attempts` times and still not final: stays `pending`), and `submit` (everything else:
never sent, or sent and came back retriable with budget left). The function is idempotent: applied to
the state it describes, it gives the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import attrs

from judgecore.values import frozen


def _frozen_map(m: Mapping[str, int]) -> Mapping[str, int]:
    return MappingProxyType(dict(m))


@frozen(kw_only=True)
class JobState:
    """What the checkpoint says about a job's ids.

    `final`: ids with a final outcome. `in_flight`: ids in batches not yet harvested (live, or created
    but not yet reconciled). `attempts`: how many times each id has been sent and come back retriable.
    """

    final: frozenset[str] = frozenset()
    in_flight: frozenset[str] = frozenset()
    attempts: Mapping[str, int] = attrs.field(factory=dict, converter=_frozen_map, hash=False)


@frozen(kw_only=True)
class ResumeDiff:
    """A disjoint, complete partition of a job's custom_ids; `submit` keeps input order."""

    submit: tuple[str, ...]
    poll: frozenset[str]
    final: frozenset[str]
    exhausted: frozenset[str]

    @property
    def done(self) -> bool:
        """Nothing left to send or wait for (exhausted ids stay pending)."""
        return not self.submit and not self.poll


def diff_resume(all_ids: Sequence[str], state: JobState, *, max_attempts: int = 3) -> ResumeDiff:
    """Partition `all_ids` by what the checkpoint says (see the module docstring)."""
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    everything = frozenset(all_ids)
    final = everything & state.final
    poll = (everything & state.in_flight) - final
    attempts = state.attempts
    exhausted: set[str] = set()
    submit: list[str] = []
    skip = final | poll
    for cid in all_ids:
        if cid in skip:
            continue
        if attempts.get(cid, 0) >= max_attempts:
            exhausted.add(cid)
        else:
            submit.append(cid)
    return ResumeDiff(
        submit=tuple(dict.fromkeys(submit)),
        poll=poll,
        final=final,
        exhausted=frozenset(exhausted),
    )
