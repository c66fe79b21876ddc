"""A seeded malformed-input campaign against `judgecore run`.

    uv run python bench/fuzz_inputs.py                # 300 cases, seed 0
    uv run python bench/fuzz_inputs.py --n 1000 --seed 7 -v

The rule under test (CONTRACT.md, "Input", "Data in and out", "Judge designs"): bad input gets a clear
one-line error naming FILE:LINE (or FILE:ROW) where a line is at fault, exit 2, before anything is sent;
never a traceback. Each case writes a malformed input (JSONL, CSV), template, verdict file, flag (an
abbreviated one, a model id not in the model table) or JUDGECORE_* variable, runs
`adapters.cli.main` in this process (as `tests/integration/conftest.py::cli_in_process` does) against a
simulator served over loopback HTTP, without `--otpm` (so a routing probe would be sent), and checks:

- `exit`: the exit status is 2;
- `traceback`: stderr holds no "Traceback" and no exception escapes `main`;
- `one-line`: exactly one `error:` line on stderr;
- `where`: that line names what is at fault (FILE:LINE for a bad line or row, the file for a bad file,
  the flag for a bad flag value);
- `sent`: the simulator received no request at all during the case.

Printed: one row per kind of case (cases, and failures per check), then the first failure of each kind.
Exit status 1 when any case failed.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.simulator.logic import Simulator  # noqa: E402
from adapters.simulator.scenario import Scenario  # noqa: E402
from adapters.simulator.server import serve  # noqa: E402

CHECKS = ("exit", "traceback", "one-line", "where", "sent")


@dataclass
class Case:
    kind: str
    args: list[str]
    #: a substring the error line must hold (FILE:LINE, the file, or the flag)
    where: str
    note: str = ""
    #: environment variables the case sets (a JUDGECORE_* knob)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    case: Case
    code: int | None
    stderr: str
    sent: int
    failed: list[str] = field(default_factory=list)


def good_line(i: int, rng: random.Random) -> dict:
    if rng.random() < 0.5:
        return {"id": f"g{i}", "prompt": f"grade answer {i}"}
    return {"id": f"g{i}", "messages": [{"role": "user", "content": f"grade answer {i}"}]}


class Maker:
    """Writes each case's files into its own directory and builds the case."""

    def __init__(self, rng: random.Random, base: Path) -> None:
        self.rng = rng
        self.base = base
        self.n = 0

    def dir(self) -> Path:
        self.n += 1
        d = self.base / f"c{self.n:04d}"
        d.mkdir()
        return d

    def goods(self, count: int, *, start: int = 0) -> list[bytes]:
        return [orjson.dumps(good_line(start + i, self.rng)) for i in range(count)]

    def before(self) -> int:
        """How many good lines come before the bad one: often none, sometimes many (a late line)."""
        return self.rng.choice([0, 1, 3, 17, 250, 2500])

    def jsonl(self, d: Path, bad: bytes, *, after: int = 2) -> tuple[Path, int]:
        """A JSONL file of good lines, then `bad` at line k, then a few good ones; (path, k)."""
        k = self.before()
        lines = [*self.goods(k), bad, *self.goods(after, start=k + 1000)]
        p = d / "items.jsonl"
        p.write_bytes(b"\n".join(lines) + b"\n")
        return p, k + 1

    def run(self, d: Path, inp: Path, *extra: str) -> list[str]:
        return ["run", str(inp), "--state", str(d / "state"), *extra]

    # --- JSONL lines ---------------------------------------------------------------------------

    def jsonl_bad_json(self) -> Case:
        d = self.dir()
        bad = self.rng.choice(
            [
                b'{"id": "x", "prompt": "p"',
                b"{id: 1}",
                b'{"id": "x", "prompt": "p"} trailing',
                b"[",
                b"nul",
                b'{"id": "x", "prompt": "p",}',
                b"'single'",
                b'{"id": "x" "prompt": "p"}',
            ]
        )
        p, k = self.jsonl(d, bad)
        return Case("jsonl: bad JSON", self.run(d, p), f"{p}:{k}", bad.decode())

    def jsonl_wrong_type(self) -> Case:
        d = self.dir()
        obj = self.rng.choice(
            [
                {"id": 17, "prompt": "p"},
                {"id": None, "prompt": "p"},
                {"id": ["a"], "prompt": "p"},
                {"id": "x", "prompt": 5},
                {"id": "x", "prompt": None},
                {"id": "x", "prompt": ["p"]},
                {"id": "x", "messages": "hello"},
                {"id": "x", "messages": {"role": "user", "content": "c"}},
                {"id": "x", "prompt": "p", "max_tokens": "512"},
                {"id": "x", "prompt": "p", "max_tokens": -1},
                {"id": "x", "prompt": "p", "max_tokens": 0},
                {"id": "x", "prompt": "p", "max_tokens": True},
                {"id": "x", "prompt": "p", "max_tokens": 1.5},
                {"id": "x", "prompt": "p", "max_tokens": 10**9},
                ["id", "x"],
                "a string",
                "huge",
                42,
                None,
            ]
        )
        raw = (
            orjson.dumps(obj)
            if obj != "huge"
            else b'{"id": "x", "prompt": "p", "max_tokens": ' + b"9" * 30 + b"}"
        )
        p, k = self.jsonl(d, raw)
        return Case("jsonl: wrong types", self.run(d, p), f"{p}:{k}", raw.decode()[:60])

    def jsonl_duplicate_id(self) -> Case:
        d = self.dir()
        k = self.before()
        lines = self.goods(k + 1)
        dup = orjson.dumps({"id": "g0", "prompt": "again"})
        lines.append(dup)
        p = d / "items.jsonl"
        p.write_bytes(b"\n".join(lines) + b"\n")
        return Case("jsonl: duplicate id", self.run(d, p), f"{p}:{k + 2}")

    def jsonl_empty_id(self) -> Case:
        d = self.dir()
        idv = ""  # (" " is a non-empty string: an id, as the contract has it)
        bad = orjson.dumps({"id": idv, "prompt": "p"})
        p, k = self.jsonl(d, bad)
        return Case("jsonl: empty id", self.run(d, p), f"{p}:{k}", repr(idv))

    def jsonl_prompt_messages(self) -> Case:
        d = self.dir()
        obj = self.rng.choice(
            [
                {"id": "x", "prompt": "p", "messages": [{"role": "user", "content": "c"}]},
                {"id": "x"},
                {"id": "x", "metadata": {"a": 1}},
                {"id": "x", "prompt": "", "messages": []},
            ]
        )
        p, k = self.jsonl(d, orjson.dumps(obj))
        return Case("jsonl: both/neither prompt, messages", self.run(d, p), f"{p}:{k}", str(obj))

    def jsonl_bad_messages(self) -> Case:
        d = self.dir()
        msgs = self.rng.choice(
            [
                [{"role": "bot", "content": "c"}],
                [{"role": "system", "content": "c"}],
                [{"role": "user"}],
                [{"content": "c"}],
                [{"role": "user", "content": 5}],
                [{"role": "user", "content": None}],
                [{"role": 1, "content": "c"}],
                ["user: hi"],
                [],
                [{"role": "user", "content": [{"type": "text"}]}],
                [{"role": "user", "content": [{"type": "text", "text": 3}]}],
            ]
        )
        bad = orjson.dumps({"id": "x", "messages": msgs})
        p, k = self.jsonl(d, bad)
        return Case("jsonl: bad roles/messages", self.run(d, p), f"{p}:{k}", bad.decode()[:70])

    def jsonl_nesting(self) -> Case:
        d = self.dir()
        depth = self.rng.choice([300, 1000, 5000, 100_000])
        where = self.rng.choice(["metadata", "content"])
        nested = b"[" * depth + b"]" * depth
        if where == "metadata":
            bad = b'{"id": "x", "prompt": "p", "metadata": ' + nested + b"}"
        else:
            bad = b'{"id": "x", "messages": [{"role": "user", "content": ' + nested + b"}]}"
        p, k = self.jsonl(d, bad)
        return Case("jsonl: huge nesting", self.run(d, p), f"{p}:{k}", f"{where} depth {depth}")

    def jsonl_invalid_utf8(self) -> Case:
        d = self.dir()
        junk = self.rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\x80abc"])
        bad = b'{"id": "x", "prompt": "p' + junk + b'"}'
        p, k = self.jsonl(d, bad)
        return Case("jsonl: invalid UTF-8", self.run(d, p), f"{p}:{k}", repr(junk))

    def jsonl_gz_bad(self) -> Case:
        import gzip

        d = self.dir()
        k = self.before()
        p = d / "items.jsonl.gz"
        p.write_bytes(gzip.compress(b"\n".join([*self.goods(k), b'{"id": 1}']) + b"\n"))
        return Case("jsonl.gz: bad line", self.run(d, p), f"{p}:{k + 1}")

    # --- CSV ------------------------------------------------------------------------------------

    def csv_file(self, d: Path, text: str, *, bom: bool = False) -> Path:
        p = d / "items.csv"
        p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
        return p

    def csv_rows(self, k: int, *, start: int = 0) -> str:
        return "".join(f"r{i},prompt {i}\r\n" for i in range(start, start + k))

    def csv_missing_id(self) -> Case:
        d = self.dir()
        header = self.rng.choice(["ident,prompt", "prompt", "ID,prompt", " id,prompt", "id ,prompt"])
        p = self.csv_file(d, header + "\r\n" + self.csv_rows(3), bom=self.rng.random() < 0.5)
        return Case("csv: no id column", self.run(d, p), f"{p}:1", header)

    def csv_ragged(self) -> Case:
        d = self.dir()
        k = self.before()
        bad = self.rng.choice(["x,p,extra", "x", "x,p,,", ","])
        text = "id,prompt\r\n" + self.csv_rows(k) + bad + "\r\n" + self.csv_rows(2, start=k + 1000)
        p = self.csv_file(d, text, bom=self.rng.random() < 0.5)
        return Case("csv: ragged row", self.run(d, p), f"{p}:{k + 2}", bad)

    def csv_bad_quoting(self) -> Case:
        d = self.dir()
        k = self.before()
        bad = self.rng.choice(['x,"p"junk', 'x,"unclosed'])
        text = "id,prompt\n" + self.csv_rows(k) + bad + "\n" + self.csv_rows(2, start=k + 1000)
        p = self.csv_file(d, text)
        return Case("csv: bad quoting", self.run(d, p), f"{p}:{k + 2}", bad)

    def csv_bom(self) -> Case:
        d = self.dir()
        k = self.before()
        bad = self.rng.choice([",empty id", "x,", "r0,duplicate"])
        text = "id,prompt\r\n" + self.csv_rows(max(k, 1)) + bad + "\r\n"
        p = self.csv_file(d, text, bom=True)
        return Case("csv: BOM, then a bad row", self.run(d, p), f"{p}:{max(k, 1) + 2}", bad)

    def csv_invalid_utf8(self) -> Case:
        d = self.dir()
        k = self.before()
        p = d / "items.csv"
        p.write_bytes(b"id,prompt\n" + self.csv_rows(k).encode() + b"x,caf\xe9\n")
        return Case("csv: invalid UTF-8", self.run(d, p), f"{p}:{k + 2}")

    def csv_bad_messages_cell(self) -> Case:
        d = self.dir()
        k = self.before()
        text = "id,messages\n" + "".join(
            f'r{i},"[{{""role"": ""user"", ""content"": ""c{i}""}}]"\n' for i in range(k)
        )
        text += 'x,"[{not json"\n'
        p = self.csv_file(d, text)
        return Case("csv: bad messages cell", self.run(d, p), f"{p}:{k + 2}")

    def parquet_bad_row(self) -> Case:
        import pyarrow as pa
        import pyarrow.parquet as pq

        d = self.dir()
        k = self.before()
        ids: list[object] = [f"r{i}" for i in range(k)]
        prompts: list[object] = [f"prompt {i}" for i in range(k)]
        variant = self.rng.choice(["null-id", "empty-id", "dup-id", "null-prompt", "no-id-column"])
        bad_id, bad_prompt = {
            "null-id": (None, "p"),
            "empty-id": ("", "p"),
            "dup-id": ("r0" if k else "x", "p"),
            "null-prompt": ("x", None),
            "no-id-column": ("x", "p"),
        }[variant]
        ids.append(bad_id)
        prompts.append(bad_prompt)
        if variant == "dup-id" and not k:
            ids.append("x")
            prompts.append("p")
        table = pa.table({"id": pa.array(ids, pa.string()), "prompt": pa.array(prompts, pa.string())})
        if variant == "no-id-column":
            table = table.rename_columns(["ident", "prompt"])
        p = d / "items.parquet"
        pq.write_table(table, p)
        row = 1 if variant == "no-id-column" else len(ids)
        return Case("parquet: bad row", self.run(d, p), f"{p}:{row}", variant)

    # --- templates ------------------------------------------------------------------------------

    def template_file(self, d: Path, text: str) -> Path:
        t = d / "template.txt"
        t.write_text(text, encoding="utf-8")
        return t

    def template_missing_field(self) -> Case:
        d = self.dir()
        k = self.before()
        rows = [orjson.dumps({"id": f"r{i}", "question": f"q{i}", "answer": f"a{i}"}) for i in range(k)]
        rows.append(orjson.dumps({"id": "late", "question": "q"}))
        csv_form = self.rng.random() < 0.4
        if csv_form:
            p = self.csv_file(
                d,
                "id,question,answer\n" + "".join(f"r{i},q{i},a{i}\n" for i in range(k)) + "late,q\n",
            )
            # a ragged row and a missing field are both the row's fault
        else:
            p = d / "items.jsonl"
            p.write_bytes(b"\n".join(rows) + b"\n")
        t = self.template_file(d, "Question: {question}\nAnswer: {answer}\nScore it.")
        line = k + 2 if csv_form else k + 1
        return Case("template: field missing on a row", self.run(d, p, "--template", str(t)), f"{p}:{line}")

    def template_bad_placeholder(self) -> Case:
        d = self.dir()
        text = self.rng.choice(  # (`{a!r}` is documented as allowed: docs/designs.md)
            [
                "Q: {",
                "Q: {0}",
                "Q: {a.b}",
                "Q: {}",
                "Q: }",
                "Q: {a[0]}",
                "Q: {a:>{b}}",
                "Q: {question:d}",
                "no placeholder at all",
                "",
                "Q: {a!x}",
                "Q: {{question}}",
            ]
        )
        p = d / "items.jsonl"
        p.write_bytes(b'{"id": "r1", "question": "q", "a": "x", "b": "y"}\n')
        t = self.template_file(d, text)
        # a format spec the row's value refuses is that row's fault: FILE:LINE of the input
        where = f"{p}:1" if text == "Q: {question:d}" else str(t)
        return Case("template: bad placeholder", self.run(d, p, "--template", str(t)), where, repr(text))

    def template_unreadable(self) -> Case:
        d = self.dir()
        t = d / "template.txt"
        choice = self.rng.choice(["missing", "utf8", "dir"])
        if choice == "utf8":
            t.write_bytes(b"Q: {question} \xff")
        elif choice == "dir":
            t.mkdir()
        p = d / "items.jsonl"
        p.write_bytes(b'{"id": "r1", "question": "q"}\n')
        return Case("template: unreadable file", self.run(d, p, "--template", str(t)), str(t), choice)

    # --- pairwise -------------------------------------------------------------------------------

    def pairwise(self) -> Case:
        d = self.dir()
        k = self.before()
        variant = self.rng.choice(
            ["missing-late", "missing-first-row", "no-first", "no-second", "no-template"]
        )
        rows = [orjson.dumps({"id": f"r{i}", "q": f"q{i}", "a": f"x{i}", "b": f"y{i}"}) for i in range(k)]
        p = d / "items.jsonl"
        text = "Q: {q}\nFirst: {first}\nSecond: {second}\nWinner?"
        where = ""
        if variant.startswith("missing"):
            if variant == "missing-first-row":
                rows = []
            rows.append(orjson.dumps({"id": "late", "q": "q", "a": "x"}))
            where = f"{p}:{len(rows)}"
        else:
            rows.append(orjson.dumps({"id": "last", "q": "q", "a": "x", "b": "y"}))
            text = text.replace("{first}" if variant == "no-first" else "{second}", "")
        p.write_bytes(b"\n".join(rows) + b"\n")
        t = self.template_file(d, text)
        args = self.run(d, p, "--pairwise", "a,b")
        if variant != "no-template":
            args += ["--template", str(t)]
            where = where or str(t)
        else:
            where = where or "--pairwise"
            if variant == "no-template":
                where = "--template"
        return Case("pairwise: missing field / template", args, where, variant)

    def pairwise_flag(self) -> Case:
        d = self.dir()
        p = d / "items.jsonl"
        p.write_bytes(b'{"id": "r1", "a": "x", "b": "y"}\n')
        t = self.template_file(d, "{first} {second}")
        value = self.rng.choice(["a", "a,", ",b", "a,b,c", "a,a", ""])
        return Case(
            "pairwise: bad flag value",
            self.run(d, p, "--template", str(t), "--pairwise", value),
            "--pairwise",
            value,
        )

    def design_late_line(self) -> Case:
        d = self.dir()
        k = self.before()
        bad = self.rng.choice(
            [
                b'{"id": "r0", "question": "again"}',
                b'{"id": "", "question": "q"}',
                b'{"id": 3, "question": "q"}',
                b'{"id": "z", "question": null}',
                b"{broken",
                b'["r9", "q"]',
            ]
        )
        rows = [orjson.dumps({"id": f"r{i}", "question": f"q{i}"}) for i in range(max(k, 1))]
        p = d / "items.jsonl"
        p.write_bytes(b"\n".join([*rows, bad]) + b"\n")
        t = self.template_file(d, "Question: {question}")
        design = self.rng.choice(
            [["--samples", "3"], ["--judge", "claude-sonnet-4-6", "--judge", "claude-haiku-4-5"], []]
        )
        args = self.run(d, p, "--template", str(t), *design)
        return Case("design: a bad row late in the file", args, f"{p}:{len(rows) + 1}", bad.decode())

    # --- samples, judges, models ---------------------------------------------------------------

    def samples(self) -> Case:
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        value = self.rng.choice(["0", "21", "x", "-1", "1.5", "", "1e3", "100000"])
        return Case("--samples out of range", self.run(d, p, f"--samples={value}"), "--samples", value)

    def judge(self) -> Case:
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        bad = self.rng.choice(
            ["claude-opus-4-0", "claude-opus-4-1", "claude-opus-4", "", "claude-sonnet-4-6 "]
        )
        flag = self.rng.choice(["--judge", "--model"])
        args = self.run(d, p, f"{flag}={bad}")
        if flag == "--judge" and self.rng.random() < 0.5:
            args += ["--judge", "claude-sonnet-4-6"]
        return Case("--judge/--model unknown or retired", args, bad.strip() or flag, f"{flag} {bad!r}")

    # --- verdict files --------------------------------------------------------------------------

    def verdict(self) -> Case:
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        v = d / "verdict.json"
        body = self.rng.choice(
            [
                b"{not json",
                b"",
                b"[]",
                b'"pattern"',
                b"{}",
                b'{"pattern": "(unclosed"}',
                b'{"pattern": "Score: (?P<score>\\\\d+"}',
                b'{"pattern": 5}',
                b'{"pattern": ""}',
                b'{"schema": []}',
                b'{"schema": "object"}',
                b'{"schema": 5}',
                b'{"schema": {"type": "nonsense"}}',
                b'{"schema": {"type": "object"}, "pattern": "x"}',
                b'{"pattern": "(?P<score>\\\\d)", "score": 5}',
                b'{"pattern": "(?P<score>\\\\d)", "score": "other"}',
                b'{"pattern": "(?P<score>\\\\w+)", "labels": ["A", "B"]}',
                b'{"pattern": "(?P<score>\\\\w+)", "labels": "A,B"}',
                b'{"pattern": "(?P<score>\\\\w+)", "labels": {"first": 1, "second": 2}}',
                b'{"pattern": "(?P<score>\\\\w+)", "labels": {"first": "A", "second": "A", "tie": "t"}}',
                b'{"pattern": "(?P<score>\\\\w+)", "labels": {"uno": "A", "second": "B"}}',
                b'{"pattern": "x", "extra": true}',
                b"\xff\xfe{}",
            ]
        )
        v.write_bytes(body)
        pairwise = b"labels" in body or self.rng.random() < 0.2
        args = self.run(d, p, "--verdict", str(v))
        if pairwise:
            p.write_bytes(b'{"id": "r1", "a": "x", "b": "y"}\n')
            t = self.template_file(d, "{first} / {second}")
            args += ["--pairwise", "a,b", "--template", str(t)]
        return Case("--verdict bad file", args, str(v), body.decode(errors="replace")[:60])

    def verdict_missing(self) -> Case:
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        v = d / "nope.json"
        if self.rng.random() < 0.5:
            v.mkdir()
        return Case("--verdict unreadable", self.run(d, p, "--verdict", str(v)), str(v))

    # --- other flags ----------------------------------------------------------------------------

    def bad_flag(self) -> Case:
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        flag, value = self.rng.choice(
            [
                ("--max-tokens", "0"),
                ("--max-tokens", "-5"),
                ("--max-tokens", "x"),
                ("--max-tokens", "10000000"),
                ("--budget", "-1"),
                ("--budget", "x"),
                ("--budget", "nan"),
                ("--budget", "inf"),
                ("--budget", "0"),
                ("--concurrency", "0"),
                ("--concurrency", "-3"),
                ("--concurrency", "x"),
                ("--poll-interval", "-1"),
                ("--poll-interval", "nan"),
                ("--poll-interval", "0"),
                ("--grace", "x"),
                ("--grace", "-1"),
                ("--max-attempts", "0"),
                ("--max-attempts", "x"),
                ("--sync-threshold", "-1"),
                ("--sync-threshold", "x"),
                ("--max-batch-requests", "0"),
                ("--max-batch-requests", "100001"),
                ("--max-batch-bytes", "0"),
                ("--max-batch-bytes", "-1"),
                ("--thinking", "sometimes"),
                ("--thinking", "10"),
                ("--thinking", "-1"),
                ("--otpm", "0"),
                ("--otpm", "x"),
            ]
        )
        return Case("bad flag values", self.run(d, p, f"{flag}={value}"), flag, f"{flag}={value}")

    def bad_env(self) -> Case:
        """A JUDGECORE_* knob out of its range: refused like its flag (`--concurrency 0`), naming it."""
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        name, value = self.rng.choice(
            [
                ("JUDGECORE_MAX_CONCURRENCY", "0"),
                ("JUDGECORE_MAX_CONCURRENCY", "-4"),
                ("JUDGECORE_MAX_CONCURRENCY", "x"),
                ("JUDGECORE_MAX_RATE_LIMITED", "0"),
                ("JUDGECORE_BACKOFF_BASE", "0"),
                ("JUDGECORE_BACKOFF_BASE", "nan"),
                ("JUDGECORE_BACKOFF_CAP", "-1"),
                ("JUDGECORE_PACING_HEADROOM", "1.5"),
                ("JUDGECORE_PACING_BURST", "inf"),
                ("JUDGECORE_REQUEST_TIMEOUT", "0"),
                ("JUDGECORE_REQUEST_TIMEOUT", "inf"),
                ("JUDGECORE_PROGRESS_INTERVAL", "-1"),
                ("JUDGECORE_PROGRESS_INTERVAL", "nan"),
            ]
        )
        return Case("JUDGECORE_* out of range", self.run(d, p), name, f"{name}={value}", env={name: value})

    def abbreviated(self) -> Case:
        """An abbreviated or misspelt flag: argparse's prefix matching would take `--stat` for `--state`."""
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        word, value = self.rng.choice(
            [("--budge", "5"), ("--concur", "4"), ("--max-tok", "100"), ("--poll", "1"), ("--samp", "2")]
        )
        if self.rng.random() < 0.3:
            return Case("abbreviated flag", ["run", str(p), "--stat", str(d / "state")], "--stat", "--stat")
        return Case("abbreviated flag", [*self.run(d, p), word, value], word, word)

    def model_typo(self) -> Case:
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        bad = self.rng.choice(
            [
                "claude-sonet-4-6",
                "claude-haiku-4.5",
                "claude-opus-4-9",
                "gpt-4o",
                "sonnet",
                "claude-sonnet-4-6-x",
            ]
        )
        flag = self.rng.choice(["--model", "--judge"])
        args = self.run(d, p, f"{flag}={bad}")
        if flag == "--judge":
            t = self.template_file(d, "Grade: {prompt}")
            args += ["--template", str(t)]
        return Case("--model/--judge not in the model table", args, bad, f"{flag} {bad}")

    def bad_paths(self) -> Case:
        d = self.dir()
        p, _ = self.jsonl(d, orjson.dumps({"id": "x", "prompt": "p"}))
        variant = self.rng.choice(
            [
                "rubric-missing",
                "rubric-empty",
                "rubric-utf8",
                "input-missing",
                "input-ext",
                "input-empty",
                "state-file",
                "out-dir",
            ]
        )
        args = self.run(d, p)
        where = ""
        if variant == "rubric-missing":
            args += ["--rubric", str(d / "nope.txt")]
            where = str(d / "nope.txt")
        elif variant in ("rubric-empty", "rubric-utf8"):
            r = d / "rubric.txt"
            r.write_bytes(b"" if variant == "rubric-empty" else b"grade \xff")
            args += ["--rubric", str(r)]
            where = str(r)
        elif variant == "input-missing":
            args[1] = where = str(d / "nope.jsonl")
        elif variant == "input-ext":
            q = d / "items.txt"
            q.write_bytes(p.read_bytes())
            args[1] = where = str(q)
        elif variant == "input-empty":
            p.write_bytes(b"\n\n")
            where = str(p)
        elif variant == "state-file":
            s = d / "statefile"
            s.write_text("x")
            args[3] = where = str(s)
        else:  # out-dir
            args += ["--out", str(d)]
            where = str(d)
        return Case("bad paths", args, where, variant)


KINDS: tuple[Callable[[Maker], Case], ...] = (
    Maker.jsonl_bad_json,
    Maker.jsonl_wrong_type,
    Maker.jsonl_duplicate_id,
    Maker.jsonl_empty_id,
    Maker.jsonl_prompt_messages,
    Maker.jsonl_bad_messages,
    Maker.jsonl_nesting,
    Maker.jsonl_invalid_utf8,
    Maker.jsonl_gz_bad,
    Maker.csv_missing_id,
    Maker.csv_ragged,
    Maker.csv_bad_quoting,
    Maker.csv_bom,
    Maker.csv_invalid_utf8,
    Maker.csv_bad_messages_cell,
    Maker.parquet_bad_row,
    Maker.template_missing_field,
    Maker.template_bad_placeholder,
    Maker.template_unreadable,
    Maker.pairwise,
    Maker.design_late_line,
    Maker.pairwise_flag,
    Maker.samples,
    Maker.judge,
    Maker.verdict,
    Maker.verdict_missing,
    Maker.bad_flag,
    Maker.bad_paths,
    Maker.bad_env,
    Maker.abbreviated,
    Maker.model_typo,
)


def run_case(case: Case, sim: Simulator, env: dict[str, str], timeout: float) -> Outcome:
    from adapters.cli import main

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"the CLI did not end within {timeout} s")

    before = len(sim.log)
    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.environ.update(case.env)
    os.chdir(ROOT)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    code: int | None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(case.args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1 if exc.code else 0
            except BaseException:  # an exception escaping main is a traceback
                traceback.print_exc()
                code = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    stderr = err.getvalue()
    outcome = Outcome(case, code, stderr, len(sim.log) - before)
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    if code != 2:
        outcome.failed.append("exit")
    if "Traceback" in stderr or code is None:
        outcome.failed.append("traceback")
    if len(errors) != 1:
        outcome.failed.append("one-line")
    if not any(case.where in line for line in errors):
        outcome.failed.append("where")
    if outcome.sent:
        outcome.failed.append("sent")
    return outcome


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300, help="cases (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a case may take")
    ap.add_argument(
        "-v", "--verbose", action="store_true", help="print every failure, not the first per kind"
    )
    ns = ap.parse_args(argv)
    rng = random.Random(ns.seed)
    sim = Simulator(Scenario(seed=ns.seed))
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="judgecore-fuzz-") as tmp, serve(sim) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="sk-fuzz")
        maker = Maker(rng, Path(tmp))
        for _ in range(ns.n):
            case = rng.choice(KINDS)(maker)
            outcomes.append(run_case(case, sim, env, ns.timeout))
    kinds: dict[str, list[Outcome]] = {}
    for o in outcomes:
        kinds.setdefault(o.case.kind, []).append(o)
    width = max(len(k) for k in kinds)
    print(f"{'kind':<{width}}  cases  " + "  ".join(f"{c:>9}" for c in CHECKS) + "  failed")
    for kind, os_ in kinds.items():
        counts = [sum(c in o.failed for o in os_) for c in CHECKS]
        failed = sum(bool(o.failed) for o in os_)
        print(f"{kind:<{width}}  {len(os_):>5}  " + "  ".join(f"{n:>9}" for n in counts) + f"  {failed:>6}")
    total_failed = sum(bool(o.failed) for o in outcomes)
    failing_kinds = sum(any(o.failed for o in os_) for os_ in kinds.values())
    print(f"\n{len(outcomes)} cases, {len(kinds)} kinds; {total_failed} failed, in {failing_kinds} kinds")
    shown: set[str] = set()
    for o in outcomes:
        if not o.failed or (not ns.verbose and o.case.kind in shown):
            continue
        shown.add(o.case.kind)
        print(f"\n[{o.case.kind}] {', '.join(o.failed)}  ({o.case.note})")
        print(f"  args:  {' '.join(o.case.args[1:])}")
        print(f"  want:  {o.case.where!r}; exit {o.code}; requests {o.sent}")
        tail = o.stderr.strip().splitlines()[-3:]
        for line in tail:
            print(f"  stderr: {line[:300]}")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
