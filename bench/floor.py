"""The floor: a whole batch job against the least any client can spend on it, alternated in one run.

    uv run python bench/floor.py                          # 20,000, 90,000 and 720,000 items, 3 rounds each
    uv run python bench/floor.py --sizes 20000 --rounds 5
    uv run python bench/floor.py --baseline /tmp/old-checkout   # also an older judgecore, same run

Four clients run the same job (the same items and rubric, one model, sub-batches of 8,000 requests)
against the project's simulator in its own process (`bench/simproc.py`, lazy batches: a fresh one for
each job; batches end after 1 s, polls every 0.2 s), one after the other, round after round, so machine
load falls on all of them alike:

- `floor`: a minimal client, orjson + `http.client`: read the items, create the sub-batches, poll them,
  stream each results file and write one output line per result. Nothing durable, no retries.
- `sdk floor`: the same, after `import anthropic` (what any client built on the SDK pays before its
  first request; the calls themselves stay `http.client`).
- `durable floor`: the SDK floor plus the least a client keeps to resume without paying twice, in
  SQLite (WAL): each sub-batch's custom_ids, one row (fsynced) before its create, and its batch id
  after; each result line's status, text and usage appended as a row (no index), committed 5,000 at a
  time; the batch marked harvested (fsynced).
  Its ratio to the SDK floor is what durability alone costs, whatever else a client does.
- `judgecore`: `judgecore run` of this checkout (durable, resumable, budgeted), and `--baseline`'s.

Each is a child process measured from a small wrapper (`bench/job.py`'s `run`): CPU is its user +
system time (the simulator's is not counted), wall its elapsed time, RSS its peak resident set.
Printed: the medians, and judgecore's ratios to the floors measured in the same run (target, issue 42:
CPU <= 1.5x the durable floor's at 90,000 and 720,000 items; peak RSS <= 1.2x the durable floor's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from job import RUBRIC, SIM_ARGS, write_items  # noqa: E402
from job import run as measure_judgecore  # noqa: E402
from simproc import sim_process  # noqa: E402

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 1024
PER_BATCH = 8000

# The minimal client, run as `python -c FLOOR items rubric out base_url model max_tokens per_batch [sdk]`.
FLOOR = r"""
import http.client, sys, time, urllib.parse
import orjson
MODE = sys.argv[8] if len(sys.argv) > 8 else ""
if MODE in ("sdk", "durable"):
    import anthropic  # noqa: F401  what a client built on the SDK pays before its first request
items_path, rubric_path, out_path, base = sys.argv[1:5]
MODEL, MAX_TOKENS, PER_BATCH = sys.argv[5], int(sys.argv[6]), int(sys.argv[7])
url = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(url.hostname, url.port)
headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}

def call(method, path, body=None):
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
    return orjson.loads(data)

system = [{"type": "text", "text": open(rubric_path).read(), "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
requests = []
with open(items_path, "rb") as f:
    for line in f:
        item = orjson.loads(line)
        requests.append({"custom_id": item["id"], "params": {
            "model": MODEL, "max_tokens": MAX_TOKENS, "system": system,
            "messages": [{"role": "user", "content": item["prompt"]}]}})
db = None
if MODE == "durable":  # the least a client that resumes without paying twice keeps (see `durable floor`)
    import sqlite3
    db = sqlite3.connect(out_path + ".db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(
        "CREATE TABLE subs (sub INTEGER PRIMARY KEY, ids BLOB NOT NULL, batch_id TEXT, harvested INTEGER);"
        "CREATE TABLE results (custom_id TEXT NOT NULL, status TEXT NOT NULL, text TEXT, usage BLOB);")
batches = []
for i in range(0, len(requests), PER_BATCH):
    part = requests[i:i + PER_BATCH]
    if db is not None:  # the intent, durable before the create: a crash after it finds the batch again
        ids = "\n".join(r["custom_id"] for r in part).encode()
        db.execute("INSERT INTO subs (sub, ids) VALUES (?, ?)", (i, ids))
    batches.append(call("POST", "/v1/messages/batches", orjson.dumps({"requests": part}))["id"])
    if db is not None:
        db.execute("UPDATE subs SET batch_id = ? WHERE sub = ?", (batches[-1], i))
del requests
with open(out_path, "wb") as out:
    for batch_id in batches:
        while (b := call("GET", f"/v1/messages/batches/{batch_id}"))["processing_status"] != "ended":
            time.sleep(0.2)
        results = http.client.HTTPConnection(url.hostname, url.port)  # read to its end, then closed
        results.request("GET", urllib.parse.urlsplit(b["results_url"]).path, headers=headers)
        r = results.getresponse()
        kept = []
        for line in r:
            if not line.strip():
                continue
            rec = orjson.loads(line)
            res = rec["result"]
            text = usage = None
            if res["type"] == "succeeded":
                text = "".join(c["text"] for c in res["message"]["content"] if c["type"] == "text")
                usage = orjson.dumps(res["message"]["usage"])
            out.write(orjson.dumps({"custom_id": rec["custom_id"], "status": res["type"], "text": text}) + b"\n")
            if db is not None:
                kept.append((rec["custom_id"], res["type"], text, usage))
                if len(kept) == 5000:  # a group a commit, safe against a kill -9 (the results stay fetchable)
                    db.execute("PRAGMA synchronous=NORMAL")
                    db.execute("BEGIN IMMEDIATE")
                    db.executemany("INSERT INTO results VALUES (?, ?, ?, ?)", kept)
                    db.execute("COMMIT")
                    kept.clear()
        results.close()
        if db is not None:  # the rest, and the batch marked harvested, fsynced
            db.execute("PRAGMA synchronous=FULL")
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT INTO results VALUES (?, ?, ?, ?)", kept)
            db.execute("UPDATE subs SET harvested = 1 WHERE batch_id = ?", (batch_id,))
            db.execute("COMMIT")
"""


#: The floor clients, by the mode the script above takes.
FLOOR_MODES = {"floor": "", "sdk floor": "sdk", "durable floor": "durable"}


def one(kind: str, n: int, python: str, root: Path) -> dict[str, float]:
    """One job of `n` items by one client, on a fresh simulator."""
    with tempfile.TemporaryDirectory() as tmp, sim_process(python, ROOT, *SIM_ARGS) as srv:
        items, rubric = Path(tmp) / "items.jsonl", Path(tmp) / "rubric.txt"
        write_items(items, n)
        rubric.write_text(RUBRIC)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=srv.base_url, ANTHROPIC_API_KEY="sk-bench")
        out = Path(tmp) / "out.jsonl"
        if kind in FLOOR_MODES:
            args = ["-c", FLOOR, str(items), str(rubric), str(out), srv.base_url, MODEL, str(MAX_TOKENS)]
            args += [str(PER_BATCH), FLOOR_MODES[kind]]
            r = measure_judgecore(python, root, args, env, module=None)
        else:
            args = ["run", str(items), "--state", str(Path(tmp) / "s"), "--rubric", str(rubric)]
            args += ["--poll-interval", "0.2", "--out", str(out), "--max-tokens", str(MAX_TOKENS)]
            r = measure_judgecore(python, root, args, env)
        lines = sum(1 for _ in out.open("rb"))
        if lines != n:
            raise SystemExit(f"{kind}: {lines} output lines for {n} items")
        return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 90_000, 720_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another checkout of judgecore, measured alongside")
    ns = ap.parse_args()
    python = str(ROOT / ".venv" / "bin" / "python")
    clients: dict[str, tuple[str, Path]] = {
        "floor": ("floor", ROOT),
        "sdk floor": ("sdk floor", ROOT),
        "durable floor": ("durable floor", ROOT),
        "judgecore": ("judgecore", ROOT),
    }
    if ns.baseline is not None:
        clients["judgecore (baseline)"] = ("judgecore", ns.baseline.resolve())
    for n in ns.sizes:
        got: dict[str, list[dict[str, float]]] = {name: [] for name in clients}
        for _ in range(ns.rounds):
            for name, (kind, root) in clients.items():
                got[name].append(one(kind, n, python, root))
        med = {
            name: {k: statistics.median(r[k] for r in rs) for k in ("cpu", "wall", "rss_mb")}
            for name, rs in got.items()
        }
        print(f"{n:,} items, medians of {ns.rounds} alternated rounds:")
        print(f"  {'client':<22} {'CPU s':>7} {'wall s':>7} {'peak RSS MB':>12}")
        for name, m in med.items():
            print(f"  {name:<22} {m['cpu']:7.2f} {m['wall']:7.2f} {m['rss_mb']:12.0f}")
        sdk, durable = med["sdk floor"], med["durable floor"]
        for name in clients:
            if name.startswith("judgecore"):
                m = med[name]
                print(
                    f"  {name} / durable floor: CPU {m['cpu'] / durable['cpu']:.2f}x (target <= 1.5x), "
                    f"wall {m['wall'] / durable['wall']:.2f}x, peak RSS {m['rss_mb'] / durable['rss_mb']:.2f}x "
                    f"(target <= 1.2x); CPU {m['cpu'] / sdk['cpu']:.2f}x the SDK floor, "
                    f"{m['cpu'] / med['floor']['cpu']:.1f}x the orjson floor; "
                    f"{(m['cpu'] - durable['cpu']) / n * 1e6:.1f} us an item above the durable floor"
                )
        print(
            f"  durable floor / sdk floor: CPU {durable['cpu'] / sdk['cpu']:.2f}x "
            f"({(durable['cpu'] - sdk['cpu']) / n * 1e6:.1f} us an item kept)"
        )


if __name__ == "__main__":
    main()
