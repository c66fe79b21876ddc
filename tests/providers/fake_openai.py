"""A tiny in-test OpenAI, served to the real `openai` SDK through httpx's MockTransport.

Not the simulator (that learns OpenAI's wire elsewhere): only what the port's tests need, every request
recorded. Chat answers are queued by the test (`answer(status, body, headers)`); files and batches are
kept in dicts, listed newest first with `after` paging as OpenAI's cursor pages are.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import orjson

BASE_URL = "http://fake-openai.test/v1"


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.answers: list[tuple[int, Any, dict[str, str]]] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.fail_next: list[tuple[int, Any]] = []  # (status, body) for the next calls of any kind
        self.refuse_connections = False
        self._ids = itertools.count(1)
        self._clock = itertools.count(1_000)

    # -- what a test sets up ---------------------------------------------------------------------

    def answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.answers.append((status, body, headers or {}))

    def add_file(self, content: bytes, *, filename: str = "out.jsonl", purpose: str = "batch_output") -> str:
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": next(self._clock),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self.contents[file_id] = content
        return file_id

    def client(self, **options: Any) -> openai.AsyncOpenAI:
        transport = httpx2.MockTransport(self.handle)
        return openai.AsyncOpenAI(
            api_key="sk-test-not-a-key",
            base_url=BASE_URL,
            http_client=httpx2.AsyncClient(transport=transport),
            **options,
        )

    # -- the wire ------------------------------------------------------------------------------

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if self.refuse_connections:
            raise httpx2.ConnectError("connection refused", request=request)
        if self.fail_next:
            status, body = self.fail_next.pop(0)
            return httpx2.Response(status, json=body)
        path = request.url.path.removeprefix("/v1")
        route: Callable[[httpx2.Request, list[str]], httpx2.Response]
        for pattern, method, route in self._routes():
            m = re.fullmatch(pattern, path)
            if m and request.method == method:
                return route(request, list(m.groups()))
        return httpx2.Response(
            404,
            json={"error": {"message": f"no route {request.method} {path}", "type": "invalid_request_error"}},
        )

    def _routes(self) -> list[tuple[str, str, Callable[[httpx2.Request, list[str]], httpx2.Response]]]:
        return [
            (r"/chat/completions", "POST", self._chat),
            (r"/files", "POST", self._upload),
            (r"/files", "GET", self._list_files),
            (r"/files/([^/]+)/content", "GET", self._content),
            (r"/files/([^/]+)", "DELETE", self._delete),
            (r"/batches", "POST", self._create),
            (r"/batches", "GET", self._list_batches),
            (r"/batches/([^/]+)", "GET", self._retrieve),
            (r"/batches/([^/]+)/cancel", "POST", self._cancel),
        ]

    def _chat(self, request: httpx2.Request, _: list[str]) -> httpx2.Response:
        status, body, headers = self.answers.pop(0)
        return httpx2.Response(
            status, json=body, headers={"x-request-id": f"req_{len(self.requests)}", **headers}
        )

    def _upload(self, request: httpx2.Request, _: list[str]) -> httpx2.Response:
        body = request.content
        boundary = re.search(rb"boundary=([^;]+)", request.headers["content-type"].encode())
        assert boundary is not None
        parts = body.split(b"--" + boundary.group(1))
        fields: dict[str, bytes] = {}
        filename = ""
        for part in parts:
            head, sep, data = part.partition(b"\r\n\r\n")
            name = re.search(rb'name="([^"]+)"', head)
            if not sep or name is None:
                continue
            fields[name.group(1).decode()] = data.removesuffix(b"\r\n")
            fname = re.search(rb'filename="([^"]+)"', head)
            if fname:
                filename = fname.group(1).decode()
        file_id = self.add_file(fields["file"], filename=filename, purpose=fields["purpose"].decode())
        return httpx2.Response(200, json=self.files[file_id])

    def _page(self, request: httpx2.Request, rows: list[dict[str, Any]]) -> httpx2.Response:
        rows = sorted(rows, key=lambda r: r["created_at"], reverse=True)
        after = request.url.params.get("after")
        if after:
            ids = [r["id"] for r in rows]
            rows = rows[ids.index(after) + 1 :]
        limit = int(request.url.params.get("limit", "20"))
        return httpx2.Response(
            200,
            json={"object": "list", "data": rows[:limit], "has_more": len(rows) > limit},
        )

    def _list_files(self, request: httpx2.Request, _: list[str]) -> httpx2.Response:
        purpose = request.url.params.get("purpose")
        return self._page(request, [f for f in self.files.values() if purpose in (None, f["purpose"])])

    def _content(self, request: httpx2.Request, groups: list[str]) -> httpx2.Response:
        return httpx2.Response(200, content=self.contents[groups[0]])

    def _delete(self, request: httpx2.Request, groups: list[str]) -> httpx2.Response:
        if self.files.pop(groups[0], None) is None:
            return httpx2.Response(
                404, json={"error": {"message": "No such File object", "type": "invalid_request_error"}}
            )
        return httpx2.Response(200, json={"id": groups[0], "object": "file", "deleted": True})

    def _create(self, request: httpx2.Request, _: list[str]) -> httpx2.Response:
        params = orjson.loads(request.content)
        batch_id = f"batch_{next(self._ids)}"
        created = next(self._clock)
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": params["endpoint"],
            "completion_window": params["completion_window"],
            "input_file_id": params["input_file_id"],
            "status": "validating",
            "created_at": created,
            "expires_at": created + 86_400,
            "request_counts": {"completed": 0, "failed": 0, "total": 0},
            "metadata": params.get("metadata"),
        }
        return httpx2.Response(200, json=self.batches[batch_id])

    def _list_batches(self, request: httpx2.Request, _: list[str]) -> httpx2.Response:
        return self._page(request, list(self.batches.values()))

    def _retrieve(self, request: httpx2.Request, groups: list[str]) -> httpx2.Response:
        return httpx2.Response(200, json=self.batches[groups[0]])

    def _cancel(self, request: httpx2.Request, groups: list[str]) -> httpx2.Response:
        self.batches[groups[0]]["status"] = "cancelling"
        return httpx2.Response(200, json=self.batches[groups[0]])
