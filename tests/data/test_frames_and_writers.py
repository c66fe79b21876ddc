"""`judge()` on a pandas DataFrame, `JudgeResult.to_pandas()`, and the CSV and Parquet writers."""

from __future__ import annotations

import csv
import io

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.files.items_io import items_from_objects
from adapters.files.paths import output_kind
from adapters.files.writers import csv_lines, parquet_bytes, records_table, write_records
from adapters.run.dryrun import judge_dry_run
from adapters.run.job import judge
from adapters.run.settings import JobSettings
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from adapters.usage import UsageError
from tests.data.tables import flat, rows


def test_a_dataframe_is_the_same_items_as_its_rows_as_jsonl():
    items = rows(30)
    frame = pd.DataFrame([flat(r) for r in items])  # max_tokens has gaps: a float column with NaN
    assert "float64" == str(frame["max_tokens"].dtype)
    expected = items_from_objects({k: v for k, v in r.items()} for r in items)
    assert expected == items_from_objects(frame)
    assert [i.metadata_json for i in expected] == [i.metadata_json for i in items_from_objects(frame)]


def test_a_dataframe_read_from_parquet_keeps_its_list_cells_as_lists(tmp_path):
    """pandas reads a Parquet list column as numpy arrays: a one-element array was taken for its
    element (`messages` refused as "not a list", a tag list became its tag), a longer one a traceback."""
    import orjson

    path = tmp_path / "t.parquet"
    table = {
        "id": ["a", "b"],
        "messages": [[{"role": "user", "content": "hi"}], [{"role": "user", "content": "yo"}]],
        "tags": [["solo"], ["one", "two"]],
        "nest": [{"xs": ["p", "q"]}, {"xs": []}],
    }
    pq.write_table(pa.table(table), path)
    frame = pd.read_parquet(path)
    items = items_from_objects(frame)
    assert [orjson.dumps(m) for m in table["messages"]] == [i.messages_json for i in items]
    assert [{"tags": t, "nest": n} for t, n in zip(table["tags"], table["nest"], strict=True)] == [
        orjson.loads(i.metadata_json) for i in items
    ]


def test_the_records_of_a_dataframe_read_from_parquet_are_items_too(tmp_path):
    """`frame.to_dict("records")` holds a list cell as a numpy array of objects, which orjson
    refuses: it was `line 1: not JSON-serializable: unsupported datatype in numpy array`."""
    path = tmp_path / "t.parquet"
    table = {"id": ["a"], "messages": [[{"role": "user", "content": "hi"}]], "tags": [["x", "y"]]}
    pq.write_table(pa.table(table), path)
    frame = pd.read_parquet(path)
    objects = [
        {"id": r["id"], "messages": r["messages"], "metadata": {"tags": r["tags"]}}
        for r in frame.to_dict("records")
    ]
    assert items_from_objects(frame) == items_from_objects(objects)


def test_a_dataframe_without_an_id_column_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"line 1: the DataFrame has no 'id' column"):
        judge_dry_run(pd.DataFrame({"prompt": ["a"]}), rubric=None, state_dir=tmp_path / "s")


def test_a_dataframe_that_repeats_a_column_is_a_usage_error(tmp_path):
    """Its last cell alone was kept (the first `prompt` dropped without a word)."""
    frame = pd.DataFrame([["a", "x", "y"]], columns=["id", "prompt", "prompt"])
    with pytest.raises(UsageError, match=r"^line 1: the DataFrame has columns named twice: 'prompt'$"):
        judge_dry_run(frame, rubric=None, state_dir=tmp_path / "s")


def test_judge_takes_a_dataframe_and_gives_one_back(tmp_path):
    frame = pd.DataFrame({"id": ["a", "b", "c"], "prompt": ["x", "y", "z"], "model": ["m1", "m2", "m1"]})
    sim = Simulator(Scenario(seed=4))
    result = judge(frame, rubric=None, state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0))
    assert 0 == result.exit_code
    out = result.to_pandas()
    assert ["a", "b", "c"] == list(out["id"])
    assert list(result.records["a"]) == list(out.columns)
    assert [{"model": "m1"}, {"model": "m2"}, {"model": "m1"}] == list(out["metadata"])
    assert {"succeeded"} == set(out["status"])


RECORDS = [
    {
        "id": "a",
        "n": 1,
        "text": 'say "hi",\nthen go',
        "usage": {"input_tokens": 3},
        "metadata": {"k": "00042"},
        "verdict": {"score": 4},
        "error": None,
        "ok": True,
    },
    {
        "id": "b",
        "n": 2,
        "text": None,
        "usage": None,
        "metadata": {"k": 7},
        "verdict": None,
        "error": {"class": "X", "type": None},
        "ok": False,
    },
]


def test_csv_writes_nested_fields_as_json_text_and_null_as_an_empty_cell():
    text = b"".join(csv_lines(RECORDS)).decode()
    got = list(csv.DictReader(io.StringIO(text, newline="")))
    assert ["id", "n", "text", "usage", "metadata", "verdict", "stop_details", "error", "ok"] == list(got[0])
    assert {
        "id": "a",
        "n": "1",
        "text": 'say "hi",\nthen go',
        "usage": '{"input_tokens":3}',
        "metadata": '{"k":"00042"}',
        "verdict": '{"score":4}',
        "stop_details": "",
        "error": "",
        "ok": "true",
    } == got[0]
    assert "" == got[1]["text"] and '{"class":"X","type":null}' == got[1]["error"]


def test_parquet_writes_nested_fields_as_structs_and_a_column_of_mixed_types_as_json_text():
    table = records_table(RECORDS)
    assert pa.types.is_struct(table.schema.field("usage").type)
    assert pa.types.is_struct(table.schema.field("verdict").type)
    assert pa.string() == table.schema.field("metadata").type  # "00042" in one row, 7 in the other
    back = pq.read_table(pa.BufferReader(parquet_bytes(RECORDS))).to_pylist()
    assert {"input_tokens": 3} == back[0]["usage"] and back[1]["usage"] is None
    assert ['{"k":"00042"}', '{"k":7}'] == [r["metadata"] for r in back]
    assert [True, False] == [r["ok"] for r in back]


def test_parquet_stores_an_empty_object_as_json_text():
    table = records_table([{"id": "a", "metadata": {}}, {"id": "b", "metadata": {}}])
    assert ["{}", "{}"] == table.column("metadata").to_pylist()


@pytest.mark.parametrize(
    ("name", "kind"), [("o.jsonl", "jsonl"), ("o.csv", "csv"), ("O.PARQUET", "parquet"), ("o.txt", "jsonl")]
)
def test_the_output_format_is_chosen_by_the_extension(tmp_path, name, kind):
    assert kind == output_kind(tmp_path / name)
    write_records(tmp_path / name, RECORDS)
    assert (tmp_path / name).stat().st_size > 0
    assert [name] == [p.name for p in tmp_path.iterdir()]  # no temp file left


def test_a_jsonl_gz_output_is_gzipped_json_lines_that_reads_back_as_input(tmp_path):
    """`--out o.jsonl.gz` wrote plain JSON Lines under a gzip name (gzip, pandas and judgecore's own
    `.jsonl.gz` reader all refused it)."""
    import gzip

    import orjson

    out = tmp_path / "o.jsonl.gz"
    write_records(out, RECORDS)
    assert RECORDS == [orjson.loads(line) for line in gzip.decompress(out.read_bytes()).splitlines()]


@pytest.mark.parametrize("name", ["o.csv.gz", "o.parquet.gz", "o.gz"])
def test_a_gzip_name_of_another_format_is_refused_before_anything_is_sent(
    tmp_path, capsys, monkeypatch, name
):
    """It was written as plain JSON Lines: a `.csv.gz` holding neither CSV nor gzip."""
    from adapters.cli import main

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens: a send would fail

    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "a", "prompt": "x"}\n')
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), "--out", str(tmp_path / name), "--force-sync"]
    assert 2 == main(args)
    err = capsys.readouterr().err
    assert f"error: --out {tmp_path / name}: a compressed output is named .jsonl.gz" in err, err
    assert not (tmp_path / name).exists()


def test_a_failed_write_leaves_the_old_output_and_no_temp_file(tmp_path):
    out = tmp_path / "o.csv"
    out.write_text("old")

    def broken():
        yield RECORDS[0]
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        write_records(out, broken())
    assert "old" == out.read_text()
    assert ["o.csv"] == [p.name for p in tmp_path.iterdir()]


def test_judge_writes_the_out_format_of_its_extension(tmp_path):
    sim = Simulator(Scenario(seed=5))
    out = tmp_path / "scores.parquet"
    settings = JobSettings(force="sync")
    judge(
        rows(5),
        rubric=None,
        state_dir=tmp_path / "s",
        client=sim_client(sim, max_retries=0),
        out=out,
        settings=settings,
    )
    back = pq.read_table(out).to_pylist()
    assert [r["id"] for r in rows(5)] == [r["id"] for r in back]
    assert {"topic": "t1", "code": "0001", "note": ""} == back[1]["metadata"]


def test_a_timestamp_cell_is_the_same_iso_text_from_parquet_a_dataframe_and_its_records(tmp_path):
    """A Timestamp was `2024-01-01T00:00:00` read from a Parquet file but `2024-01-01 00:00:00` from
    the DataFrame of that file, and `not JSON-serializable` from the frame's records."""
    import datetime
    import decimal

    import orjson

    from adapters.files.readers import input_lines

    when = [pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-02 03:04:05.000006")]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "prompt": ["p", "q"], "when": when}), path)
    expected = [{"when": "2024-01-01T00:00:00"}, {"when": "2024-01-02T03:04:05.000006"}]
    from_file = [orjson.loads(line)["metadata"] for line in input_lines(path)]
    frame = pd.read_parquet(path)
    from_frame = [orjson.loads(i.metadata_json) for i in items_from_objects(frame)]
    records = [
        {"id": r["id"], "prompt": r["prompt"], "metadata": {"when": r["when"]}}
        for r in frame.to_dict("records")
    ]
    from_records = [orjson.loads(i.metadata_json) for i in items_from_objects(records)]
    assert expected == from_file == from_frame == from_records
    odd = {
        "id": "c",
        "prompt": "p",
        "metadata": {"d": datetime.date(2024, 1, 1), "x": decimal.Decimal("1.5")},
    }
    assert {"d": "2024-01-01", "x": "1.5"} == orjson.loads(items_from_objects([odd])[0].metadata_json)
    with pytest.raises(UsageError, match="not JSON-serializable"):
        items_from_objects([{"id": "e", "prompt": "p", "metadata": {"o": object()}}])


def test_a_refused_record_after_the_first_has_its_stop_details_column_in_csv_and_parquet():
    """Only a refused answer's record carries `stop_details`: a job with a refusal past its first
    item ended `--out FILE.csv` in a traceback ("record 'b' has fields [...]"), and Parquet dropped
    the field whenever the first record lacked it."""
    plain = {"id": "a", "status": "succeeded", "verdict": {"score": 4}, "error": None}
    details = {"type": "refusal", "category": "cyber", "explanation": None}
    refused = {"id": "b", "status": "miss", "verdict": None, "stop_details": details, "error": {"class": "X"}}
    rows = [plain, refused, plain | {"id": "c"}]
    got = list(csv.DictReader(io.StringIO(b"".join(csv_lines(rows)).decode(), newline="")))
    assert ["id", "status", "verdict", "stop_details", "error"] == list(got[0])
    assert ["", orjson.dumps(details).decode(), ""] == [r["stop_details"] for r in got]
    back = pq.read_table(pa.BufferReader(parquet_bytes(rows))).to_pylist()
    assert [None, "cyber", None] == [r["stop_details"] and r["stop_details"]["category"] for r in back]
