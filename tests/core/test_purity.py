"""The core stays pure: no module under judgecore/ imports the SDK, HTTP, the clock, the OS, chance or adapters."""

from __future__ import annotations

import ast
import enum
import types
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import pytest

import judgecore

if TYPE_CHECKING:
    from judgecore.decide.planning import JobPlan

BANNED = frozenset({"anthropic", "openai", "httpx", "httpx2", "time", "os", "random", "pathlib", "adapters"})
CORE = Path(judgecore.__file__).parent
MODULES = sorted(CORE.rglob("*.py"))


def imported_roots(source: str) -> set[str]:
    """Top-level names of every module an import statement (anywhere in the file) brings in."""
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            roots |= {a.value.split(".")[0] for a in node.args[:1] if isinstance(a, ast.Constant)}
    return roots


def test_the_core_has_modules_to_check():
    assert {
        "wire/chunking.py",
        "job/ids.py",
        "run/job/_machine.py",
        "run/vocab.py",
        "decide/polling.py",
        "decide/resume.py",
        "decide/routing.py",
    } <= {m.relative_to(CORE).as_posix() for m in MODULES}


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(CORE).as_posix())
def test_core_module_imports_nothing_impure(module):
    assert set() == imported_roots(module.read_text(encoding="utf-8")) & BANNED


@pytest.mark.parametrize(
    "source",
    [
        "import os",
        "import os.path",
        "from time import monotonic",
        "import random as r",
        "def f():\n    import anthropic",
        "from adapters.checkpoint.store import Store",
        "from pathlib import Path",
        "import httpx2",
        "__import__('time')",
    ],
)
def test_the_checker_catches_each_banned_form(source):
    assert imported_roots(source) & BANNED


#: Calls that read the clock, the environment or the disk whatever module they come from (a `datetime`
#: import is allowed for arithmetic on values given in; `datetime.now()` is not).
IMPURE_CALLS = frozenset({"now", "utcnow", "today", "getenv", "open", "input", "print"})


def impure_calls(source: str) -> set[str]:
    """Names of calls to the clock, the environment, files or the terminal anywhere in `source`."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in IMPURE_CALLS:
                found.add(name)
    return found


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(CORE).as_posix())
def test_core_module_reads_no_clock_environment_file_or_terminal(module):
    assert set() == impure_calls(module.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "source",
    ["datetime.now()", "datetime.datetime.utcnow()", "date.today()", "open('f')", "print(1)", "getenv('X')"],
)
def test_the_call_checker_catches_each_impure_call(source):
    assert impure_calls(source)


# -- values hold values: nothing reachable from a core value is mutable or performs I/O --------------

#: Leaves a core value may hold: immutable data, nothing that reads a file, a database or a clock.
_LEAVES = (bytes, str, int, float, bool, complex, type(None), range, enum.Enum)


def impure_parts(value: object, *, limit: int = 20) -> list[str]:
    """Where (an attribute path) and what (a type) everything reachable from `value` that is not
    immutable data is: a list, dict, array, bytearray, a lazy column over a file or SQLite, an attrs
    class that is not frozen, any other object. Empty: `value` holds values only."""
    from types import MappingProxyType

    import attr._make

    from judgecore.job.columns import Sparse, Taken
    from judgecore.job.ints import Ints
    from judgecore.job.texts import Keyed, Texts

    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[object, str]] = [(value, type(value).__name__)]
    while stack and len(found) < limit:
        v, where = stack.pop()
        if id(v) in seen or isinstance(v, _LEAVES):
            continue
        seen.add(id(v))
        if isinstance(v, tuple | frozenset):
            stack.extend((x, f"{where}[{k}]") for k, x in enumerate(v))
        elif type(v) is Ints:
            if type(v._data) is not bytes or not v.view.readonly:
                found.append(f"{where}: an Ints over a writable buffer")
        elif type(v) is Texts:  # one str and an Ints of where each value starts and ends
            if type(v._text) is not str:
                found.append(f"{where}: a Texts over something else than a str")
            stack.append((v._bounds, f"{where}._bounds"))
        elif type(v) is Keyed:  # a Texts of prefixes, bytes of records, a module's function, a cache
            if type(v.raw) is not bytes:
                found.append(f"{where}: a Keyed over something else than bytes")
            encode = v.encode
            if type(encode) is not types.FunctionType or encode.__closure__ or "." in encode.__qualname__:
                found.append(f"{where}.encode: {type(encode).__qualname__} (not a module's function)")
            stack.append((v.prefixes, f"{where}.prefixes"))
            stack.append((v._memo, f"{where}._memo"))  # the last chunk's suffixes: a tuple of str
        elif type(v) is Sparse:  # the positions and values of those not None
            stack.append((v._at, f"{where}._at"))
            stack.append((v._values, f"{where}._values"))
        elif type(v) is Taken:  # a lazy view of a column by position: the column and the positions
            column = v.column
            if type(column) is memoryview and not column.readonly:
                found.append(f"{where}: a Taken over a writable buffer")
            elif type(column) is not memoryview:
                stack.append((column, f"{where}.column"))
            stack.append((v.positions, f"{where}.positions"))
        elif type(v) is MappingProxyType:  # a read-only view; the dict behind it is reachable only so
            stack.extend((x, f"{where}[{k!r}]") for k, x in v.items())
            stack.extend((k, f"{where} key") for k in v)
        elif attrs.has(type(v)) and type(v).__setattr__ is attr._make._frozen_setattrs:
            for a in attrs.fields(type(v)):
                stack.append((getattr(v, a.name), f"{where}.{a.name}"))
            if hasattr(v, "__dict__") and set(v.__dict__) - {a.name for a in attrs.fields(type(v))}:
                found.append(f"{where}: attributes besides its fields")
        else:
            found.append(f"{where}: {type(v).__module__}.{type(v).__qualname__}")
    return found


@pytest.mark.parametrize(
    "bad",
    [
        [b"x"],
        {"a": 1},
        bytearray(b"x"),
        __import__("array").array("q", [1]),
        (1, [2]),
        iter([b"x"]),
        type("Lazy", (), {"__len__": lambda self: 0})(),
    ],
    ids=["list", "dict", "bytearray", "array", "nested list", "iterator", "any object"],
)
def test_the_value_checker_catches_what_is_not_immutable_data(bad):
    assert impure_parts(bad)
    plan = _plain_plan()
    assert impure_parts(attrs.evolve(plan, items=attrs.evolve(plan.items, messages_json=bad)))


def test_the_value_checker_catches_an_attrs_class_that_is_not_frozen():
    @attrs.define
    class Mutable:
        x: int = 0

    assert impure_parts((Mutable(),))


def _plain_plan() -> JobPlan:
    from judgecore.decide.planning import plan_job
    from judgecore.job.parsing import parse_items

    lines = [b'{"id": "a", "prompt": "hi"}', b'{"id": "b", "messages": [{"role": "user", "content": "yo"}]}']
    return plan_job(
        parse_items(lines), model="claude-sonnet-4-6", max_tokens=64, rubric="R.", max_batch_bytes=None
    )


def _core_values(job: JobPlan) -> dict[str, object]:
    """Every core value a run builds from its plan: the plan, its items and requests, views of them
    (a round's, a sub-batch's), the index the batch machine keeps (looked up by id), the sub-batches."""
    from judgecore.wire.chunking import chunk
    from judgecore.wire.requests import RequestIndex

    reqs = job.requests
    some = list(reversed(reqs.custom_ids))[::2]
    return {
        "plan": job,
        "items": job.items,
        "requests": reqs,
        "view": reqs.select(some),
        "only": reqs.only(some),
        "slice": reqs[1:],
        "request": reqs[0],
        "index": RequestIndex.of(reqs).indexed(),
        "sub-batches": chunk(reqs.only(some), max_requests=2),
        "item slice": job.items[1:],
    }


def _assert_holds_values_only(job: JobPlan) -> None:
    for name, value in _core_values(job).items():
        assert [] == impure_parts(value), name


def _write_input(path: Path, n: int) -> Path:
    import orjson

    rows = [{"id": f"q{i}", "prompt": f"answer {i} " + "x" * 2000} for i in range(n)]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _reachable_bytes(value: object) -> int:
    """The bytes of every `bytes` reachable from `value` (through its tuples and fields)."""
    total, seen, stack = 0, set(), [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if type(v) is bytes:
            total += len(v)
        elif isinstance(v, tuple | frozenset):
            stack.extend(v)
        elif attrs.has(type(v)):
            stack.extend(getattr(v, a.name) for a in attrs.fields(type(v)))
    return total


@pytest.mark.parametrize("source", ["input file", "design", "python objects"])
def test_a_runs_core_values_hold_values_only_and_no_messages_before_and_after_the_hand_off(tmp_path, source):
    """The messages path as a run takes it: the CLI's input read again (`load_input`), a design's
    requests built in memory (`load_design_input`), Python objects (`judge(items=[...])`). Every core
    value the run builds holds immutable data only (nothing reads a file or the checkpoint when
    iterated), none holds the messages (their bytes reachable from the plan are a small part of the
    input's), and the hand-off to the checkpoint changes neither."""
    from adapters.checkpoint.store import Store
    from adapters.files.checkpointed import hand_to_checkpoint, load_input
    from adapters.files.items_io import load_design_input
    from adapters.run.planning_run import run_job_of
    from adapters.run.settings import JobSettings

    path = _write_input(tmp_path / "in.jsonl", 40)
    settings = JobSettings(model="claude-sonnet-4-6", max_tokens=64)
    if source == "input file":
        given: object = load_input(path)
    elif source == "design":
        settings = attrs.evolve(settings, samples=2)
        given = load_design_input(path, settings.design, job=None)
    else:
        import orjson

        given = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    state = tmp_path / "state"
    job, messages = run_job_of(given, rubric="Grade.", settings=settings, state_dir=state)  # type: ignore[arg-type]
    _assert_holds_values_only(job)
    assert job.items.messages_json is None
    assert _reachable_bytes(job) < 40 * 2000 // 10
    store = Store.open(state)
    try:
        bindings = job.items.bindings(messages.digests(job.items))
        store.bind_job(settings.manifest("Grade."), bindings, ids_job=job.items.job)
        hand_to_checkpoint(store, job, messages)
        _assert_holds_values_only(job)
        assert [] == store.messages_missing()
        if source == "input file":  # the digests were the source's, and went with the hand-off
            assert job.items.digests is None
            with pytest.raises(RuntimeError, match="released"):
                next(messages.digests(job.items))
    finally:
        store.close()


def test_a_dry_runs_plan_holds_values_only_with_or_without_its_messages(tmp_path):
    """A dry run's items keep their messages only when one prompt is counted: as a tuple of bytes."""
    from adapters.checkpoint.fresh import fresh_key_of
    from adapters.files.items_io import load_items
    from adapters.run.planning import job_of
    from adapters.run.settings import JobSettings

    path = _write_input(tmp_path / "in.jsonl", 5)
    settings = JobSettings(model="claude-sonnet-4-6", max_tokens=64)
    for held in (True, False):
        items = load_items(path, hold_messages=held)  # a job's custom_ids cover its items' digests
        job = job_of(items, rubric=None, settings=settings, state_dir=tmp_path / "state", key_of=fresh_key_of)
        _assert_holds_values_only(job)
        assert (job.items.messages_json is not None) is held


def test_equal_core_values_hash_equal_and_are_not_equal_to_tuples():
    """Items and Requests compare by value with their own kind (and hash alike when equal), never
    equal to a tuple of their elements (which hashes otherwise)."""
    a, b = _plain_plan(), _plain_plan()
    assert a.items is not b.items
    assert (a.items, a.requests) == (b.items, b.requests)
    assert hash(a.items) == hash(b.items) and hash(a.requests) == hash(b.requests)
    assert a.requests.select(["x"] * 0) == b.requests[:0]
    assert hash(a.requests[1:]) == hash(b.requests.select([b.requests[1].custom_id]))
    assert a.requests[1:] == b.requests.select([b.requests[1].custom_id])
    assert a.items != tuple(a.items) and a.requests != tuple(a.requests)
    assert tuple(a.items) == tuple(b.items) and tuple(a.requests) == tuple(b.requests)
    assert a.items.without_messages() != a.items
    assert a == b and hash(a) == hash(b)
