"""A job's plan made as its input is read, a chunk of items at a time, keeping only totals: the
requests' sizes, tokens and sub-batches summed as they come (`PlanTally`), for a plan whose memory is
flat in the job's size (a dry run on a fresh state dir: nothing of the job is kept after).

The figures are those of `judgecore.decide.planning.plan` over the job's `Requests`: each request's
size as `judgecore.wire.requests.build_requests` makes it, the sub-batches as
`judgecore.wire.chunking.chunk` cuts them (greedy, in order: each takes requests until the next would
pass either cap, so a sub-batch left open at a chunk's end takes the next chunk's first ones), the
tokens as `plan` estimates them. What `plan_job` and the checks before it would raise (an item's
max_tokens a model refuses, a request too large for any sub-batch) is kept, the first in input
order, for the caller to raise once the whole input is read (a bad line later in it comes first).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, compress, repeat
from operator import add, is_not

from judgecore.decide.planning import RequestTotals, input_tokens_of, output_tokens_of
from judgecore.job.errors import RequestTooLargeError
from judgecore.job.ids import custom_id_for, custom_id_lengths_of
from judgecore.job.parsing import ParsedChunk
from judgecore.wire.chunking import ENVELOPE_BYTES
from judgecore.wire.requests import RequestTemplate

#: what the caller says of an item's own max_tokens: the problem with it (a model's limit), or None
MaxTokensProblem = Callable[[int], str | None]


class PlanTally:
    """The totals of a job's requests (`RequestTotals`), a chunk of items at a time. Private to the
    call that fills it: `add` each chunk in input order, then `totals`.

    `template`: the batch route's (the requests' sizes are their bytes in a batch create body);
    `job`: the job key their custom_ids are derived with (their lengths are a request's bytes);
    `max_requests` and `max_bytes`: a sub-batch's caps; `problem`: what is wrong with an item's own
    max_tokens (None: nothing is looked at)."""

    __slots__ = (
        "_count",
        "_ends",
        "_job",
        "_largest",
        "_max_bytes",
        "_max_requests",
        "_problem",
        "_subs",
        "_template",
        "first_problem",
        "input_tokens",
        "largest_at",
        "max_tokens",
        "n",
        "output_per_answer",
        "output_tokens",
    )

    def __init__(
        self,
        template: RequestTemplate,
        *,
        job: str | None,
        max_requests: int,
        max_bytes: int,
        output_per_answer: int,
        problem: MaxTokensProblem | None = None,
    ) -> None:
        if max_requests < 1:
            raise ValueError(f"max_requests must be >= 1, got {max_requests}")
        self._template, self._job, self._problem = template, job, problem
        self._max_requests, self._max_bytes = max_requests, max_bytes
        self.output_per_answer = output_per_answer
        self.n = self.input_tokens = self.output_tokens = 0
        self.max_tokens = 0
        self._largest = -1
        #: the first request of the largest size: (item id, line)
        self.largest_at: tuple[str, int] | None = None
        #: the first item whose max_tokens has a problem: (line, item id, the problem)
        self.first_problem: tuple[int, str, str] | None = None
        self._subs: list[tuple[int, int]] = []
        self._count = 0  # the requests of the sub-batch still open
        self._ends = 0  # its requests' bytes and a comma after each

    def add(self, chunk: ParsedChunk) -> None:
        """The next chunk of the job's items (in input order)."""
        ids, n = chunk.ids, len(chunk.ids)
        if not n:
            return
        default = self._template.max_tokens
        cid_lengths = custom_id_lengths_of(ids)
        given = chunk.max_tokens
        # each request's size and the comma after it (as `chunk` counts them): its custom_id, its
        # messages, its max_tokens' digits and the bytes every request carries, summed in C
        fixed = self._template.fixed_size + 1
        if given.count(None) == n:  # the usual chunk: every request asks the default
            rest = repeat(fixed + len(str(default)))
            spans = array("q", map(add, cid_lengths, map(add, chunk.message_sizes, rest)))
            self.output_tokens += min(default, self.output_per_answer) * n
            self.max_tokens = max(self.max_tokens, default)
        else:
            mts = array("q", [m or default for m in given])
            with_digits = map(add, cid_lengths, map(len, map(str, mts)))
            spans = array("q", map(add, with_digits, map(add, chunk.message_sizes, repeat(fixed))))
            self.output_tokens += output_tokens_of(mts, self.output_per_answer)
            self.max_tokens = max(self.max_tokens, max(mts))
            if self._problem is not None and self.first_problem is None:
                self._look_at(chunk)
        self.n += n
        self.input_tokens += input_tokens_of(chunk.message_sizes)
        largest = max(spans) - 1
        if largest > self._largest:
            k = spans.index(largest + 1)
            self._largest, self.largest_at = largest, (ids[k], chunk.lines[k])
        self._chunk(spans)

    def _look_at(self, chunk: ParsedChunk) -> None:
        """The first given max_tokens of `chunk` with a problem, kept (`first_problem`)."""
        assert self._problem is not None
        given = chunk.max_tokens
        for k in compress(range(len(given)), map(is_not, given, repeat(None))):
            if (problem := self._problem(given[k])) is not None:  # type: ignore[arg-type]
                self.first_problem = (chunk.lines[k], chunk.ids[k], problem)
                return

    def _chunk(self, spans: Sequence[int]) -> None:
        """Requests of these `spans` (each its size and a comma) into the sub-batches, greedy and in
        order (as `chunk`): each takes the most of the next requests that fit both caps, found by
        bisecting their running bytes."""
        acc = list(accumulate(spans, initial=0))
        room = self._max_bytes - ENVELOPE_BYTES + 1
        start, n = 0, len(spans)
        while start < n:
            most = min(n - start, self._max_requests - self._count)
            took = bisect_right(acc, room - self._ends + acc[start], start, start + most + 1) - 1 - start
            if not took and not self._count:  # one request over the cap alone: `too_large` says so
                took = 1
            self._count += took
            self._ends += acc[start + took] - acc[start]
            start += took
            if start < n or self._count == self._max_requests or self._ends > room:
                self._close()

    def _close(self) -> None:
        if self._count:
            self._subs.append((self._count, ENVELOPE_BYTES - 1 + self._ends))
        self._count = self._ends = 0

    def over(self, max_bytes: int) -> bool:
        """Whether the largest request is too large for a sub-batch of `max_bytes` (`largest_at`)."""
        return self.largest_at is not None and self._largest + ENVELOPE_BYTES > max_bytes

    def too_large(self, max_bytes: int, *, content: bytes | None = None) -> RequestTooLargeError | None:
        """The error of the first request of the largest size when it is too large for a sub-batch of
        `max_bytes` (as `plan_job` raises it), else None. `content`: that request's content digest
        (`judgecore.job.items.raw_digest`), which its custom_id covers under a `v3` key."""
        if self.largest_at is None or not self.over(max_bytes):
            return None
        item_id, line = self.largest_at
        cid = custom_id_for(item_id, job=self._job, content=content)
        return RequestTooLargeError(item_id, cid, self._largest + ENVELOPE_BYTES, max_bytes, line=line)

    def totals(self) -> RequestTotals:
        """The totals of the requests added so far (the last sub-batch closed)."""
        self._close()
        return RequestTotals(
            n=self.n,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            output_per_answer=self.output_per_answer,
            sub_batches=tuple(self._subs),
            max_size=max(self._largest, 0),
            max_tokens=self.max_tokens,
        )


__all__ = ["MaxTokensProblem", "PlanTally"]
