"""The crash-anywhere batch machine (`test_batch_machine.BatchLife`) run with a multi-request judge
design: every item asks a panel of two judges, two samples each (four requests, each with its own
custom_id and its own model). On top of the machine's own invariants (nothing paid twice, nothing
sent while a batch may answer it): no request of an item is sent once it is final, every request is
sent with its judge's model, and an item's line is final, with its verdict, only when all its
requests are final in the checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant

from adapters.checkpoint.records import iter_records
from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import body_of
from adapters.run.batch import BatchSettings
from judgecore.decide.polling import PollPolicy
from judgecore.job.designs import Design, design_items, expand_item
from judgecore.job.items import Items
from judgecore.job.parsing import parse_items
from judgecore.results.verdicts import spec_from_json
from judgecore.wire.requests import build_requests

from .fakes import MESSAGES, TEMPLATE, bind
from .test_batch_machine import BatchLife

DESIGN = Design(samples=2, judges=("claude-opus-4-8", "claude-haiku-4-5"))
VERDICT = spec_from_json({"pattern": r"score: (?P<score>\d+)"})


def design_requests(n: int) -> tuple[Items, Any]:
    lines = [orjson.dumps({"id": f"q{i}", "prompt": f"answer {i}"}) for i in range(n)]
    plain = parse_items(lines)
    rows = (
        expand_item(DESIGN, it.id, it.line, it.messages_json, it.max_tokens, it.metadata_json) for it in plain
    )
    items = design_items(DESIGN, rows, job=None)
    MESSAGES.update(zip(items.custom_ids, items.messages(), strict=True))  # `bind` keeps them
    return items, build_requests(items, TEMPLATE)


class DesignBatchLife(BatchLife):
    @initialize(
        n=st.integers(1, 4),
        max_requests=st.integers(1, 5),
        max_attempts=st.integers(1, 3),
        concurrency=st.integers(1, 3),
    )
    def start(self, n: int, max_requests: int, max_attempts: int, concurrency: int) -> None:
        self.items, self.requests = design_requests(n)
        self.model_of = {r.custom_id: r.model for r in self.requests}
        self.sent_models: list[tuple[str, str]] = []
        create = self.api.create

        async def recording_create(body: Any, meta: Any = None) -> Any:
            for r in orjson.loads(bytes(body_of(body)))["requests"]:
                self.sent_models.append((r["custom_id"], r["params"]["model"]))
            return await create(body, meta)

        self.api.create = recording_create  # type: ignore[method-assign]
        self.settings = BatchSettings(
            max_batch_requests=max_requests,
            max_attempts=max_attempts,
            concurrency=concurrency,
            create_attempts=3,
            harvest_attempts=2,
            poll=PollPolicy(interval=3_600.0, grace=600.0),
            write_group=2,
        )
        self.state = Path(self.tmp.name) / "state"
        self.store = Store.open(self.state)
        bind(self.store, self.requests)
        self._new_run()

    @invariant()
    def every_request_is_sent_with_its_judges_model(self) -> None:
        if not hasattr(self, "sent_models"):
            return
        assert all(self.model_of[c] == m for c, m in self.sent_models)

    @invariant()
    def an_items_verdict_is_written_only_when_all_its_requests_are_final(self) -> None:
        if not hasattr(self, "store"):
            return
        final = self.store.job_state().final
        lines = list(iter_records(self.store, self.items, VERDICT, DESIGN))
        per = DESIGN.per_item
        assert len(self.items) // per == len(lines)
        for k, line in enumerate(lines):
            cids = self.items.custom_ids[k * per : (k + 1) * per]
            all_final = all(c in final for c in cids)
            assert all_final == (line["status"] != "pending"), (line, cids, final)
            if all_final and line["status"] == "succeeded":
                assert {"score": 7} == line["verdict"]
            if not all_final:
                assert line["verdict"] is None
                assert {None} == set(line["judges"].values())
            assert {"claude-opus-4-8", "claude-haiku-4-5"} == set(line["judges"])
            assert 4 == len(line["samples"])


TestDesignBatchLife = DesignBatchLife.TestCase
_QUICK = settings().max_examples <= 60
TestDesignBatchLife.settings = settings(
    settings(),
    max_examples=25 if _QUICK else settings().max_examples,
    stateful_step_count=30 if _QUICK else 60,
)
