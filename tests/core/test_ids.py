"""custom_id_for and assign_custom_ids: format, determinism, pinned values, collisions."""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import any_item_ids, item_ids, realistic_item_ids

import judgecore.job.ids
from judgecore.job.errors import DuplicateIdError
from judgecore.job.ids import CUSTOM_ID_RE, assign_custom_ids, check_unique, custom_id_for, custom_ids_for
from judgecore.job.items import CustomIds

# A change of algorithm changes these and must be a deliberate, CHANGELOG-noted break: a checkpoint
# written by one release would no longer match the ids of the next.
GOLDEN = {
    "q17-s3": "q17-s3-rdk4i34fx2pqhc43amcirgcc",
    "mmlu/abstract_algebra/0042": "mmlu_abstract_algebra_0042-m3fozgly5z3wrlyxd4s2i75u",
    "é": "y4nsk4vtavapv4n5rr5vrxrf",
    "run 3:item#9": "run_3_item_9-2notsf2qmk6p5vaydivswk5d",
    "x" * 100: "x" * 39 + "-cjuqlgx6tmu2ixple5a4zyly",
    "___": "s2vxzbuuy5eoimhogshy5wlk",
    "-": "--2q3wqmujc2uk2leby4zzmfux",
}


@pytest.mark.parametrize(("item_id", "expected"), sorted(GOLDEN.items()))
def test_custom_id_is_pinned(item_id, expected):
    """The custom_id of a few ids is fixed forever (they key checkpoints across releases)."""
    assert expected == custom_id_for(item_id)


@given(any_item_ids)
def test_custom_id_matches_the_api_pattern_for_any_id(item_id):
    cid = custom_id_for(item_id)
    assert CUSTOM_ID_RE.fullmatch(cid) is not None
    assert 1 <= len(cid) <= 64


@given(item_ids)
def test_custom_id_is_deterministic_within_a_process(item_id):
    assert custom_id_for(item_id) == custom_id_for(str(item_id))


@given(realistic_item_ids)
def test_custom_id_keeps_a_readable_prefix_of_a_safe_id(item_id):
    """An id already made of [a-zA-Z0-9_-] shows through (cut to fit) before the digest."""
    safe = all(c.isascii() and (c.isalnum() or c in "_-") for c in item_id)
    if safe and item_id.strip("_"):
        assert custom_id_for(item_id).startswith(item_id[:39].strip("_") + "-")


def test_custom_id_is_identical_in_another_process_with_another_hash_seed():
    """Nothing in the id depends on Python's per-process string hashing."""
    ids = [*GOLDEN, "q1", "ü/ß/中文", "a b", "a_b", "emoji 🎉"]
    code = (
        "import json, sys\n"
        "from judgecore.job.ids import custom_id_for\n"
        "print(json.dumps([custom_id_for(i) for i in json.loads(sys.stdin.read())]))\n"
    )
    outputs = []
    for seed in ("1", "4242"):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(ids),
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "", "PYTHONPATH": ":".join(sys.path)},
        )
        outputs.append(json.loads(proc.stdout))
    expected = [custom_id_for(i) for i in ids]
    assert expected == outputs[0]
    assert expected == outputs[1]


@given(st.lists(realistic_item_ids, unique=True, max_size=200))
def test_distinct_realistic_ids_never_collide(ids):
    cids = assign_custom_ids(ids)
    assert len(ids) == len(set(cids))
    assert [custom_id_for(i) for i in ids] == list(cids)


@given(st.lists(any_item_ids, unique=True, max_size=50))
def test_a_whole_job_gets_the_same_custom_ids_as_one_by_one(ids):
    """assign_custom_ids encodes a job's digests in one pass; the answer is custom_id_for's."""
    assert tuple(custom_id_for(i) for i in ids) == assign_custom_ids(ids)


_JOB_KEYS = st.one_of(
    st.none(), st.text(alphabet="abcdefghijklmnopqrstuvwxyz234567", min_size=16, max_size=16)
)


@given(
    st.lists(st.one_of(realistic_item_ids, any_item_ids), unique=True, max_size=60),
    _JOB_KEYS,
    st.data(),
)
def test_the_column_a_job_keeps_reads_back_its_custom_ids_whichever_way_it_is_read(ids, job, data):
    """`job_custom_ids` keeps usual ids' custom_ids as the ids and their digests (a `Keyed` column);
    every read of it (walk, position, slice, positions, lookup, lengths, pickle) is the custom_ids'."""
    from judgecore.job.texts import Keyed, Texts

    column = judgecore.job.ids.job_custom_ids(ids, job=job)
    made = tuple(custom_id_for(i, job=job) for i in ids)
    assert isinstance(column, Keyed) == judgecore.job.ids.own_prefixes(ids)
    assert column == made and tuple(column) == made and column == Texts(made) and hash(column) == hash(made)
    assert list(column.lengths()) == list(map(len, made)) and column.joined() == "".join(made)
    if ids:
        k = data.draw(st.integers(-len(ids), len(ids) - 1))
        assert column[k] == made[k] and column.index(made[k]) == k % len(ids) and made[k] in column
        picked = data.draw(st.lists(st.integers(0, len(ids) - 1), max_size=10))
        assert list(column.at(picked)) == [made[p] for p in picked]
    where = data.draw(st.slices(len(ids) + 1))
    assert column[where] == made[where]
    assert "not-" + (made[0] if made else "x") not in column
    assert pickle.loads(pickle.dumps(column)) == column


def test_a_job_keeps_its_usual_custom_ids_in_15_bytes_an_item_beside_the_ids() -> None:
    ids = [f"item-{k}" for k in range(20_000)]
    column = judgecore.job.ids.job_custom_ids(ids, job="abcdefghijklmnop")
    assert len(column.raw) == 15 * len(ids)  # no string held: a Texts of them would be 36 B an item
    assert column.prefixes.joined() == "".join(ids)
    assert column[19_999] == custom_id_for("item-19999", job="abcdefghijklmnop")


def test_ids_and_line_numbers_must_pair_up():
    with pytest.raises(ValueError):
        assign_custom_ids(["a", "b"], [1])


@given(st.lists(st.text(alphabet="ab _/:.#é", min_size=1, max_size=4), unique=True, max_size=60))
def test_ids_that_sanitize_alike_still_get_distinct_custom_ids(ids):
    """ "a b", "a/b" and "a_b" share a readable prefix but not a digest."""
    assert len(ids) == len(set(assign_custom_ids(ids)))


def test_ids_that_sanitize_alike_share_the_prefix_only():
    cids = assign_custom_ids(["a b", "a/b", "a_b"])
    assert 3 == len(set(cids))
    assert {"a_b"} == {c.rsplit("-", 1)[0] for c in cids}


def test_duplicate_id_is_reported_with_both_lines():
    with pytest.raises(DuplicateIdError) as err:
        assign_custom_ids(["q1", "q2", "q1"], [3, 5, 9])
    assert ("q1", 3, 9, None) == (
        err.value.item_id,
        err.value.first_line,
        err.value.line,
        err.value.custom_id,
    )


def test_duplicate_id_without_lines_uses_positions():
    with pytest.raises(DuplicateIdError) as err:
        assign_custom_ids(["q1", "q1"])
    assert (1, 2) == (err.value.first_line, err.value.line)


def test_custom_id_collision_of_distinct_ids_is_reported():
    """Were two different ids ever to map to one custom_id, the job is refused, naming both lines."""
    with pytest.raises(DuplicateIdError) as err:
        check_unique(["ab", "cd", "AB"], ["AB", "CD", "AB"], [1, 2, 7])
    assert ("AB", 1, 7, "AB") == (
        err.value.item_id,
        err.value.first_line,
        err.value.line,
        err.value.custom_id,
    )
    assert "differ" in str(err.value)


@given(st.lists(st.text(max_size=30), max_size=30))
def test_custom_ids_for_many_ids_equal_custom_id_for_each(ids):
    """The job-wide derivation (one base32 pass) gives each id's own custom_id."""
    assert [custom_id_for(i) for i in ids] == list(custom_ids_for(ids))


@given(st.lists(st.binary(min_size=5, max_size=5), max_size=40).map(b"".join))
def test_the_job_wide_base32_encoder_matches_the_standard_one(raw):
    """The column-wise encoder behind assign_custom_ids is exactly base64.b32encode, lowercased."""
    assert base64.b32encode(raw).decode("ascii").lower() == judgecore.job.ids._b32_lower(raw)


# -- job keys: each job's custom_ids are its own ---------------------------------------------------

JOB = judgecore.job.ids.job_key(b'{"model":"m"}', "nonce-1")
JOB_GOLDEN = {
    "q17-s3": "q17-s3-pk7ba356qopccgam4rkhdkyi",
    "é": "zrcu7fdhqa7euijlreuedquc",
    "x" * 100: "x" * 39 + "-ks6ijukj7gw4woh3bexpvth5",
}


def test_job_key_and_job_custom_ids_are_pinned():
    """A job key and the ids derived with it are fixed forever: a state dir keeps its key across
    releases, and the ids must come out the same from it."""
    assert "jpp2m5x3aj6lqczq" == JOB
    assert JOB_GOLDEN == {i: custom_id_for(i, job=JOB) for i in JOB_GOLDEN}


@given(st.lists(item_ids, min_size=1, max_size=30, unique=True), st.text(min_size=1), st.text(min_size=1))
def test_two_jobs_over_the_same_items_share_no_custom_id(ids, nonce_a, nonce_b):
    """Two jobs (another manifest, or the same one in another state dir: another nonce) never share an
    id, so a batch of one can never be taken for the other's in the workspace-wide listing."""
    a = judgecore.job.ids.job_key(b'{"rubric_sha256":"a"}', nonce_a)
    b = judgecore.job.ids.job_key(b'{"rubric_sha256":"a"}', nonce_b + "x")
    assert a != b
    cids_a, cids_b = custom_ids_for(ids, job=a), custom_ids_for(ids, job=b)
    assert not set(cids_a) & set(cids_b)
    assert not set(cids_a) & set(custom_ids_for(ids))  # nor with a state dir of the v1 ids
    assert all(CUSTOM_ID_RE.fullmatch(c) for c in cids_a)
    assert [custom_id_for(i, job=a) for i in ids] == list(cids_a)


# -- manifest keys (`v3`): pure in the manifest and each request ------------------------------------

HI = b'[{"role":"user","content":"hi"}]'
MANIFEST_JOB = judgecore.job.ids.job_key(b'{"model":"m"}')
MANIFEST_GOLDEN = {
    "q17-s3": "q17-s3-l7bmkthlpnae2gxpq7k2kgws",
    "é": "2t2htpzaqupw6rfb2yjzeuj5",
    "x" * 100: "x" * 39 + "-5xzrcyqqatcwkmu6422b3cnw",
}


def _contents(messages: list[bytes]) -> bytes:
    from judgecore.job.items import raw_digest

    return b"".join(raw_digest(m, None) for m in messages)


def test_a_manifest_key_and_its_custom_ids_are_pinned():
    """No nonce: the key is the manifest's, and the ids are fixed forever for a manifest and a request."""
    from judgecore.job.items import raw_digest

    assert "m2dzxxnqeytaonebi" == MANIFEST_JOB == judgecore.job.ids.job_key(b'{"model":"m"}')
    assert MANIFEST_GOLDEN == {
        i: custom_id_for(i, job=MANIFEST_JOB, content=raw_digest(HI, None)) for i in MANIFEST_GOLDEN
    }


@given(st.lists(item_ids, min_size=1, max_size=30, unique=True), st.data())
def test_the_same_job_started_afresh_derives_the_same_custom_ids(ids, data):
    """Two fresh starts of one job (two state dirs, two machines) derive one key and one set of ids."""
    messages = [data.draw(st.binary(min_size=1, max_size=40)) for _ in ids]
    key_a, key_b = (
        judgecore.job.ids.job_key(b'{"rubric_sha256":"a"}'),
        judgecore.job.ids.job_key(b'{"rubric_sha256":"a"}'),
    )
    assert key_a == key_b
    assert custom_ids_for(ids, job=key_a, contents=_contents(messages)) == custom_ids_for(
        ids, job=key_b, contents=_contents(messages)
    )


@given(st.lists(item_ids, min_size=1, max_size=30, unique=True), st.data())
def test_the_same_item_id_asking_something_else_gets_another_custom_id(ids, data):
    """Two data sets reusing the ids `0, 1, 2...` under one manifest share no custom_id."""
    a = [data.draw(st.binary(min_size=1, max_size=40)) for _ in ids]
    b = [m + b"!" for m in a]  # every request asks something else
    cids_a = custom_ids_for(ids, job=MANIFEST_JOB, contents=_contents(a))
    cids_b = custom_ids_for(ids, job=MANIFEST_JOB, contents=_contents(b))
    assert not set(cids_a) & set(cids_b)
    assert all(CUSTOM_ID_RE.fullmatch(c) for c in cids_a)
    contents = _contents(a)
    assert list(cids_a) == [
        custom_id_for(i, job=MANIFEST_JOB, content=contents[16 * k : 16 * k + 16]) for k, i in enumerate(ids)
    ]


@given(
    st.lists(item_ids, min_size=1, max_size=30, unique=True),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
def test_two_jobs_with_different_manifests_never_share_a_custom_id(ids, m1, m2):
    import orjson

    one, two = (orjson.dumps(m, option=orjson.OPT_SORT_KEYS) for m in (m1, m2))
    if one == two:
        return
    contents = _contents([HI] * len(ids))
    a = custom_ids_for(ids, job=judgecore.job.ids.job_key(one), contents=contents)
    b = custom_ids_for(ids, job=judgecore.job.ids.job_key(two), contents=contents)
    assert not set(a) & set(b)
    assert not set(a) & set(custom_ids_for(ids, job=JOB))  # nor with a `v2` dir's
    assert not set(a) & set(custom_ids_for(ids))  # nor with a `v1` dir's


def test_a_manifest_key_needs_each_requests_content():
    with pytest.raises(ValueError, match="content"):
        custom_ids_for(["q1"], job=MANIFEST_JOB)
    with pytest.raises(ValueError, match="digest bytes"):
        custom_ids_for(["q1", "q2"], job=MANIFEST_JOB, contents=_contents([HI]))


def test_a_malformed_job_key_is_refused():
    with pytest.raises(ValueError, match="not a job key"):
        custom_id_for("q1", job="short")
    with pytest.raises(ValueError, match="nonce"):
        judgecore.job.ids.job_key(b"{}", "")


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=200), st.data())
def test_distinct_hashes_finds_a_repeat_wherever_it_is(hashes, data):
    """The hashes are checked a bucket at a time: a repeat is found as a sort of all of them finds it."""
    from array import array

    from judgecore.job.ids import distinct_hashes

    if hashes and data.draw(st.booleans()):
        hashes.insert(data.draw(st.integers(0, len(hashes))), data.draw(st.sampled_from(hashes)))
    found = distinct_hashes(array("q", hashes))
    if len(set(hashes)) < len(hashes):
        assert not found
    else:  # distinct ints: False only for two of a bucket (low bits) whose top 53 bits are equal too
        assert found == (len({(h & 63, float(h)) for h in hashes}) == len(hashes))


@given(st.lists(any_item_ids, max_size=30), st.booleans())
def test_custom_ids_derived_when_read_are_the_derived_ones(ids, job_keyed):
    """A `CustomIds` column is the job's custom_ids, whichever way it is read: one by position, their
    lengths (told by the ids alone when each is its own prefix), all of them."""
    job = JOB if job_keyed else None
    derived = custom_ids_for(ids, job=job)
    lazy = CustomIds(ids, job)
    assert len(derived) == len(lazy)
    assert [len(c) for c in derived] == list(lazy.lengths())
    assert [custom_id_for(i, job=job) for i in ids] == [lazy[k] for k in range(len(ids))]
    assert derived == lazy
    assert list(derived) == list(lazy)
    assert lazy.made
    assert [len(c) for c in derived] == list(lazy.lengths())


def test_a_custom_ids_column_of_safe_ids_tells_their_lengths_without_deriving_them():
    lazy = CustomIds(["q1", "a-b", "x" * 39], JOB)
    assert [2 + 25, 3 + 25, 39 + 25] == list(lazy.lengths())
    assert custom_id_for("a-b", job=JOB) == lazy[1]
    assert not lazy.made
    with pytest.raises(IndexError):
        lazy[3]
    with pytest.raises(ValueError, match="not a job key"):
        CustomIds(["q1"], "short")
