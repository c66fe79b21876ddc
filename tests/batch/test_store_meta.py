"""The checkpoint's metadata as typed fields: what a run writes reads back as the same value, and a
state dir written as raw JSON before the fields existed reads the same."""

from __future__ import annotations

import attrs

from adapters.checkpoint.store import Store
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.routing import Route
from judgecore.job.designs import Design

ROUTE = Route(path="batch", n=5000, threshold=2000, otpm=400_000, otpm_source="read", forced=False, reason="")


def test_each_field_reads_back_what_was_written(tmp_path):
    store = Store.open(tmp_path / "state")
    try:
        assert store.route is None and store.deadline is None and store.rate_limits is None
        store.route = ROUTE
        store.rate_limits = RateLimitReading.for_otpm(90_000)
        store.deadline = 1_800_000_000.0
        store.rubric = "Score 0-10."
        store.design = Design.from_json({"samples": 3})
        assert store.route == ROUTE
        assert store.rate_limits is not None and store.rate_limits.otpm == 90_000
        assert store.deadline == 1_800_000_000.0
        assert store.rubric == "Score 0-10."
        assert store.design == Design.from_json({"samples": 3})
        store.deadline = None  # a run without one forgets the last run's
        assert store.deadline is None
    finally:
        store.close()


def test_a_state_dir_of_raw_json_reads_the_same(tmp_path):
    # What earlier versions wrote with set_meta: the stored JSON did not change with the fields.
    store = Store.open(tmp_path / "state")
    try:
        store.set_meta("route", attrs.asdict(ROUTE))
        store.set_meta("deadline", {"at": 12.5})
        store.set_meta("rubric", {"text": "kept"})
        store.set_meta("rate_limits", RateLimitReading.for_otpm(8_000).to_json())
        assert store.route == ROUTE
        assert store.deadline == 12.5
        assert store.rubric == "kept"
        assert store.rate_limits == RateLimitReading.for_otpm(8_000)
    finally:
        store.close()
    reopened = Store.open_readonly(tmp_path / "state")
    try:
        assert reopened.route == ROUTE
    finally:
        reopened.close()


def test_a_stored_openai_reading_gives_the_rerun_its_tpm_so_it_does_not_probe_again(tmp_path):
    # OpenAI's headers fill the tokens group (TPM), not the output-tokens one (Anthropic's OTPM): the
    # rerun's history reads the limit the job's provider routes by.
    from adapters.checkpoint.reads import history_from_store
    from adapters.providers.openai.translate import openai_reading
    from adapters.providers.registry import provider_of

    reading = openai_reading(
        {"x-ratelimit-limit-tokens": "2000000", "x-ratelimit-limit-requests": "5000"}, 0.0
    )
    store = Store.open(tmp_path / "state")
    try:
        store.rate_limits = reading
        assert history_from_store(store, provider_of("openai:gpt-5-mini").route_limit).otpm_read == 2_000_000
        assert history_from_store(store).otpm_read is None  # read as Anthropic's OTPM: none
        store.rate_limits = RateLimitReading.for_otpm(90_000)
        assert history_from_store(store, provider_of("claude-sonnet-4-6").route_limit).otpm_read == 90_000
    finally:
        store.close()
