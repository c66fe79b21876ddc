"""A results file read in chunks (`adapters.providers.port.result_lines`, both ports' `results`): each
line translated once whatever the chunks cut it into, one list per chunk, blank lines skipped, the last
line without its newline kept, and a line that cannot be read raises after the lines before it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest

from adapters.providers.anthropic.sdk_results import result_line
from adapters.providers.port import result_lines


def _line(i: int) -> bytes:
    return orjson.dumps(
        {
            "custom_id": f"c{i}",
            "result": {
                "type": "succeeded",
                "message": {"content": [{"type": "text", "text": f"answer {i}"}], "stop_reason": "end_turn"},
            },
        }
    )


async def _chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for k in range(0, len(data), size):
        yield data[k : k + size]


def _read(data: bytes, size: int) -> list[list[tuple[str, str | None]]]:
    async def main() -> list[list[tuple[str, str | None]]]:
        return [
            [(c, o.text) for c, o in lines] async for lines in result_lines(_chunks(data, size), result_line)
        ]

    return asyncio.run(main())


@pytest.mark.parametrize("size", [1, 7, 64, 1 << 16])
def test_every_line_once_in_order_whatever_the_chunks(size: int) -> None:
    data = b"\n".join(_line(i) for i in range(20)) + b"\n\n  \n" + _line(20)  # blank lines; no final newline
    lists = _read(data, size)
    assert [(f"c{i}", f"answer {i}") for i in range(21)] == [x for lines in lists for x in lines]
    assert all(lists)  # never an empty list
    if size == 1 << 16:
        assert 2 == len(lists)  # the whole file's complete lines at once, then the last one


def test_a_torn_line_raises_after_the_lines_before_it_in_its_chunk() -> None:
    data = _line(0) + b"\n" + _line(1) + b"\n" + b'{"custom_id": "c2", "resu' + b"\n" + _line(3) + b"\n"
    got: list[str] = []

    async def main() -> None:
        async for lines in result_lines(_chunks(data, 1 << 16), result_line):
            got.extend(c for c, _ in lines)

    with pytest.raises(ValueError):  # orjson's JSONDecodeError
        asyncio.run(main())
    assert ["c0", "c1"] == got
