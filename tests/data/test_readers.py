"""Every input format gives the same items, the same requests and the same errors (`adapters.files.readers`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.checkpoint.store import Store
from adapters.cli import main
from adapters.files.items_io import load_items
from adapters.files.readers import input_kind
from adapters.usage import UsageError
from judgecore.decide.planning import plan_job
from judgecore.job.ids import job_key
from tests.data.tables import FORMATS, rows, write

JOB = job_key(b"{}", nonce="tests")


def _bodies(path: Path) -> tuple[tuple[str, ...], list[bytes], tuple[bytes | None, ...]]:
    items = load_items(path, job=JOB)
    job = plan_job(
        items, model="claude-sonnet-4-6", max_tokens=256, rubric="Be strict.", max_batch_bytes=None
    )
    bodies = [r.body(job.batch_template, m) for r, m in zip(job.requests, items.messages(), strict=True)]
    return items.custom_ids, bodies, items.metadata_json


@pytest.mark.parametrize("kind", FORMATS[1:])
def test_every_format_gives_the_requests_of_the_jsonl(tmp_path, kind):
    """custom_ids, request bodies and metadata byte for byte those of the same rows as JSON Lines."""
    items = rows(200)
    expected = _bodies(write(tmp_path / "items", "jsonl", items))
    assert expected == _bodies(write(tmp_path / "other", kind, items))


@pytest.mark.parametrize("kind", ["jsonl", "jsonl.gz"])
def test_a_json_lines_file_with_a_byte_order_mark_gives_the_same_requests(tmp_path, kind):
    """A UTF-8 BOM at the start (as some Windows editors save one) is not content: the same custom_ids,
    bodies and metadata as without it; one anywhere else is still a bad line, named."""
    import gzip

    items = rows(20)
    plain = write(tmp_path / "plain", "jsonl", items)
    marked = tmp_path / f"marked.{kind}"
    data = b"\xef\xbb\xbf" + plain.read_bytes()
    marked.write_bytes(gzip.compress(data) if kind == "jsonl.gz" else data)
    assert _bodies(plain) == _bodies(marked)
    inner = plain.read_bytes().split(b"\n", 1)
    (tmp_path / "mid.jsonl").write_bytes(inner[0] + b"\n\xef\xbb\xbf" + inner[1])
    with pytest.raises(UsageError, match=r"mid\.jsonl:2: not valid JSON"):
        load_items(tmp_path / "mid.jsonl")


def test_csv_cells_stay_text_and_rows_are_numbered_as_in_a_spreadsheet(tmp_path):
    path = tmp_path / "items.csv"
    path.write_bytes(
        b'\xef\xbb\xbfid,prompt,score\r\n00042,"multi\r\nline, ""quoted""",007\r\n\r\n1e3,plain,TRUE\r\n'
    )
    items = load_items(path)
    assert ("00042", "1e3") == items.ids
    assert (b'{"score":"007"}', b'{"score":"TRUE"}') == items.metadata_json
    assert [2, 4] == list(items.lines)  # the header is row 1; the blank line is row 3
    assert b'[{"role":"user","content":"multi\\r\\nline, \\"quoted\\""}]' == items.messages_json[0]


def test_csv_messages_cell_is_json_text(tmp_path):
    path = tmp_path / "items.csv"
    path.write_text('id,messages\na,"[{""role"": ""user"", ""content"": ""hi""}]"\nb,[not json\n')
    with pytest.raises(UsageError, match=r"items\.csv:3: the 'messages' cell is not valid JSON"):
        load_items(path)


def test_an_integer_id_column_is_its_decimal_text(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "items.parquet"
    pq.write_table(pa.table({"id": [7, 42], "prompt": ["a", "b"]}), path)
    assert ("7", "42") == load_items(path).ids


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("items.txt", r"items\.txt: unknown input format \(\.txt\); INPUT is \.jsonl"),
        ("items.json", r"unknown input format \(\.json\)"),
        ("items", r"unknown input format \(no extension\)"),
    ],
)
def test_an_unknown_extension_is_named(tmp_path, name, message):
    (tmp_path / name).write_text('{"id": "a", "prompt": "x"}\n')
    with pytest.raises(UsageError, match=message):
        input_kind(tmp_path / name)


def test_a_directory_not_written_by_datasets_is_refused(tmp_path):
    with pytest.raises(UsageError, match="is a directory, but not one written by datasets' save_to_disk"):
        input_kind(tmp_path)


def test_a_dataset_dict_asks_for_one_split(tmp_path):
    import datasets

    datasets.disable_progress_bars()
    dd = datasets.DatasetDict({"train": datasets.Dataset.from_list([{"id": "a", "prompt": "x"}])})
    dd.save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(UsageError, match=r"several splits \(train\); give one split's directory"):
        load_items(tmp_path / "dd")
    assert ("a",) == load_items(tmp_path / "dd" / "train").ids


# Bad input: (what is wrong, rows as objects or None for an empty file, the row at fault, the reason).
# The number in `FILE:N` is the row's: the line in JSONL, the CSV row (header = 1), the table row.
def _bad(kind: str) -> list[tuple[str, list[dict] | None, int, str]]:
    good = rows(6)
    missing = [dict(r) for r in good]
    missing[4]["id"] = ""
    duplicate = [dict(r) for r in good]
    duplicate[5]["id"] = duplicate[2]["id"]
    # a table's column holds one type: text there (digits are a number), numbers in JSON
    typed = kind in ("jsonl", "jsonl.gz")
    cell = [dict(r, max_tokens=64 + k if typed else str(64 + k)) for k, r in enumerate(good)]
    cell[3]["max_tokens"] = "many"
    no_prompt = [dict(r) for r in good]
    no_prompt[2]["prompt"] = ""
    # JSON has an empty string; a table's empty cell is no prompt at all, and the error says so
    empty_prompt = (
        "'prompt' must be a non-empty string" if typed else "(it has neither; a table's empty cell is none)"
    )
    return [
        ("missing id", missing, 5, "'id' must be a non-empty string"),
        ("empty prompt", no_prompt, 3, empty_prompt),
        ("duplicate id", duplicate, 6, "duplicate id '00002'"),
        ("bad cell", cell, 4, "'max_tokens' must be a positive integer"),
        ("empty", [], 0, "the input has no items"),
    ]


CASES = [(kind, *case) for kind in FORMATS for case in _bad(kind)]


@pytest.mark.parametrize(
    ("kind", "what", "items", "row", "reason"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_bad_input_is_exit_2_naming_the_file_and_row_with_nothing_sent(
    tmp_path, capsys, monkeypatch, kind, what, items, row, reason
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens: a send would fail
    if items == [] and kind in ("jsonl", "jsonl.gz"):
        path = write(tmp_path / "items", kind, [{"id": "x", "prompt": "y"}])
        path.write_bytes(b"" if kind == "jsonl" else __import__("gzip").compress(b"\n\n"))
    elif items == []:
        path = _empty_table(tmp_path / "items", kind)
    else:
        path = write(tmp_path / "items", kind, items)
    n = row + 1 if kind == "csv" and row else row  # the CSV header is row 1
    code = main(["run", str(path), "--state", str(tmp_path / "s"), "--force-sync"])
    err = capsys.readouterr().err
    assert 2 == code
    where = f"{path}:{n}: " if row else f"{path}: "
    assert f"error: {where}" in err and reason in err, err
    assert not Store.exists(tmp_path / "s")


def _empty_table(path: Path, kind: str) -> Path:
    """A table with the columns and no row (a CSV of its header alone)."""
    if kind == "csv":
        path = path.with_suffix(".csv")
        path.write_text("id,prompt\r\n")
    elif kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = path.with_suffix(".parquet")
        pq.write_table(pa.table({"id": pa.array([], pa.string()), "prompt": pa.array([], pa.string())}), path)
    else:
        import datasets

        datasets.disable_progress_bars()
        datasets.Dataset.from_dict({"id": [], "prompt": []}).save_to_disk(str(path))
    return path


def test_an_empty_csv_file_has_no_items(tmp_path, capsys):
    (tmp_path / "items.csv").write_bytes(b"")
    assert 2 == main(["run", str(tmp_path / "items.csv"), "--dry-run"])
    assert f"error: {tmp_path / 'items.csv'}: the input has no items" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("item,prompt", "1: no 'id' column (the columns are 'item', 'prompt')"),
        ("id,text", "1: no 'prompt' or 'messages' column (the columns are 'id', 'text')"),
        ("id,prompt,id", "1: the header repeats column(s) 'id'"),
    ],
)
def test_a_csv_without_a_needed_column_names_the_header_row(tmp_path, capsys, header, reason):
    path = tmp_path / "items.csv"
    path.write_text(f"{header}\r\na,b,c\r\n" if header.count(",") == 2 else f"{header}\r\na,b\r\n")
    assert 2 == main(["run", str(path), "--dry-run"])
    assert f"error: {path}:{reason}" in capsys.readouterr().err


def test_a_csv_row_of_the_wrong_width_names_its_row(tmp_path, capsys):
    path = tmp_path / "items.csv"
    path.write_text('id,prompt\r\na,"x"\r\nb,y,z\r\n')
    assert 2 == main(["run", str(path), "--dry-run"])
    assert f"error: {path}:3: the row has 3 cells; the header has 2" in capsys.readouterr().err


def test_a_parquet_without_an_id_column_names_it(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "items.parquet"
    pq.write_table(pa.table({"key": ["a"], "prompt": ["b"]}), path)
    assert 2 == main(["run", str(path), "--dry-run"])
    assert f"error: {path}:1: no 'id' column (the columns are 'key', 'prompt')" in capsys.readouterr().err


def test_a_file_that_is_not_parquet_says_so(tmp_path, capsys):
    path = tmp_path / "items.parquet"
    path.write_text("id,prompt\n")
    assert 2 == main(["run", str(path), "--dry-run"])
    assert f"error: {path}: not a Parquet file" in capsys.readouterr().err


def test_a_jsonl_gz_whose_compressed_data_is_corrupt_says_so(tmp_path, capsys):
    """Damaged deflate data (not a truncation, not a bad header) is zlib's own error: it was a
    `zlib.error` traceback, exit 1."""
    import gzip

    data = gzip.compress(b"".join(b'{"id":"%d","prompt":"p%d"}\n' % (k, k) for k in range(2000)))
    path = tmp_path / "items.jsonl.gz"
    path.write_bytes(data[:100] + b"\x00" * 50 + data[150:])
    assert 2 == main(["run", str(path), "--dry-run"])
    assert f"error: {path}: not a gzip file, or a damaged or truncated one" in capsys.readouterr().err


def test_a_parquet_file_with_a_damaged_page_names_the_row_it_stops_at(tmp_path, capsys):
    """A sound footer over damaged data is found while the rows are read: it was pyarrow's `OSError`
    traceback, exit 1."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "items.parquet"
    ids = [f"{k:05d}" for k in range(5000)]
    pq.write_table(pa.table({"id": ids, "prompt": [f"prompt {k} " * 5 for k in range(5000)]}), path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 2000] = b"\xff" * 2000
    path.write_bytes(bytes(data))
    assert 2 == main(["run", str(path), "--dry-run"])
    err = capsys.readouterr().err
    assert f"error: {path}:1: the Parquet data cannot be read from this row on (" in err, err


def test_a_csv_cell_longer_than_the_csv_modules_default_limit_is_read(tmp_path):
    """A long completion (over 131,072 characters, the csv module's default field limit) in a
    valid CSV was refused: `FILE:2: not valid CSV (field larger than field limit (131072))`."""
    import csv

    path = tmp_path / "items.csv"
    long = "x" * 200_000
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([["id", "prompt"], ["a", long], ["b", "short"]])
    items = load_items(path)
    assert ("a", "b") == items.ids


def test_a_parquet_file_that_repeats_a_column_names_it_as_a_csv_header_does(tmp_path, capsys):
    """A repeated column kept its last cell alone (the other `model`, or the other `prompt`, lost
    without a word), where a CSV header that repeats one is exit 2."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "items.parquet"
    cells = [pa.array(["a"]), pa.array(["x"]), pa.array(["m1"]), pa.array(["m2"])]
    pq.write_table(pa.Table.from_arrays(cells, names=["id", "prompt", "model", "model"]), path)
    assert 2 == main(["run", str(path), "--dry-run"])
    assert f"error: {path}:1: the columns repeat 'model'" in capsys.readouterr().err


def test_a_byte_order_mark_inside_a_csv_is_a_bad_row(tmp_path):
    """As in JSON Lines, a mark anywhere but the file's start is a bad row: two spreadsheet exports
    joined (`cat a.csv b.csv`) made the second header an item with the id '\\ufeffid', judged and paid."""
    path = tmp_path / "joined.csv"
    one = "\ufeffid,prompt\r\na,x\r\n".encode()
    path.write_bytes(one + one.replace(b"a,x", b"b,y"))
    with pytest.raises(UsageError, match=r"joined\.csv:3: a byte order mark begins the row"):
        load_items(path)
