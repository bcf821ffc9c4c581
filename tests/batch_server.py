"""A loopback fake of the OpenAI Batch API (Files + Batches, also Azure's /openai paths) and of Anthropic
Message Batches, for tests.

It keeps every batch it was given, answers `in_progress` for `polls` retrieves and then ends the batch
with `final` (completed/ended, expired or cancelled), each request's fate chosen by `fate(custom_id,
body) -> "ok" | "error" | "too_long" | "expire"`. Every HTTP request is recorded (`requests`), every
custom_id a batch carried is counted (`submitted`) and every one answered with a summary (`bought`), so a
test can assert that nothing was paid twice.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

PROMPT_TOKENS = 1000
COMPLETION_TOKENS = 200


class FakeBatchServer:
    def __init__(self, provider: str = "openai") -> None:
        self.provider = provider  # openai | azure | anthropic
        self.requests: list[tuple[str, str]] = []
        self.submitted: collections.Counter[str] = collections.Counter()
        self.bought: collections.Counter[str] = collections.Counter()
        self.batches: dict[str, dict[str, Any]] = {}
        self.files: dict[str, bytes] = {}
        self.polls = 0  # retrieves answered in_progress before a batch ends
        self.final = "completed"  # or expired, cancelled
        self.fate: Callable[[str, dict], str] = lambda custom_id, body: "ok"
        self.cached_tokens = 0  # of each answer's PROMPT_TOKENS, read from the provider's prompt cache
        self.keys_seen: set[str] = set()
        self.lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        host, port = self._server.server_address[:2]
        root = f"http://{host}:{port}"
        return root + "/v1" if self.provider == "openai" else root

    def start(self) -> FakeBatchServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def count(self, method: str, fragment: str) -> int:
        return sum(1 for m, p in self.requests if m == method and fragment in p)

    # -- the batch lifecycle ------------------------------------------------------------------------
    def _new_batch(self, requests: list[dict[str, Any]], metadata: dict | None) -> dict[str, Any]:
        ident = f"batch_{len(self.batches) + 1:04d}"
        for request in requests:
            self.submitted[request["custom_id"]] += 1
        batch = {"id": ident, "requests": requests, "metadata": metadata or {}, "created": time.time(),
                 "polls": self.polls, "state": "in_progress", "results": None}
        self.batches[ident] = batch
        return batch

    def _advance(self, batch: dict[str, Any], cancel: bool = False) -> None:
        if batch["state"] != "in_progress":
            return
        if cancel:
            self._end(batch, "cancelled")
        elif batch["polls"] > 0:
            batch["polls"] -= 1
        else:
            self._end(batch, self.final)

    def _end(self, batch: dict[str, Any], final: str) -> None:
        results = []
        for request in batch["requests"]:
            custom_id = request["custom_id"]
            fate = self.fate(custom_id, request)
            if final in ("expired", "cancelled") and fate == "ok":
                fate = "expire" if final == "expired" else "cancel"
            if fate == "ok":
                self.bought[custom_id] += 1
            results.append((custom_id, fate))
        batch["state"] = final
        batch["results"] = results

    # -- OpenAI shapes --------------------------------------------------------------------------------
    def _openai_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        state = batch["state"]
        results = batch["results"] or []
        done = sum(1 for _, f in results if f == "ok")
        failed = sum(1 for _, f in results if f in ("error", "too_long"))
        body = {"id": batch["id"], "object": "batch", "endpoint": "/v1/chat/completions",
                "status": state, "created_at": int(batch["created"]), "metadata": batch["metadata"],
                "request_counts": {"total": len(batch["requests"]), "completed": done, "failed": failed},
                "output_file_id": None, "error_file_id": None}
        if state != "in_progress":
            body["output_file_id"] = f"file-out-{batch['id']}"
            body["error_file_id"] = f"file-err-{batch['id']}"
        return body

    def _openai_output(self, batch: dict[str, Any], errors: bool) -> bytes:
        lines = []
        for custom_id, fate in batch["results"] or []:
            if fate == "ok" and not errors:
                lines.append({"id": "r", "custom_id": custom_id, "error": None, "response": {
                    "status_code": 200, "request_id": "req",
                    "body": {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {
                        "role": "assistant", "content": f"## Goal\nbatch summary {custom_id[:12]}"},
                        "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS,
                                  "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                                  "prompt_tokens_details": {"cached_tokens": self.cached_tokens}}}}})
            elif fate == "error" and errors:
                lines.append({"id": "r", "custom_id": custom_id, "error": None, "response": {
                    "status_code": 500, "body": {"error": {"message": "server error", "code": "server_error"}}}})
            elif fate == "too_long" and errors:
                lines.append({"id": "r", "custom_id": custom_id, "error": None, "response": {
                    "status_code": 400, "body": {"error": {"message": "maximum context length exceeded",
                                                           "code": "context_length_exceeded"}}}})
            elif fate in ("expire", "cancel") and errors:
                code = "batch_expired" if fate == "expire" else "batch_cancelled"
                lines.append({"id": "r", "custom_id": custom_id, "response": None,
                              "error": {"code": code, "message": code}})
        return "".join(json.dumps(line) + "\n" for line in lines).encode()

    # -- Anthropic shapes ------------------------------------------------------------------------------
    def _anthropic_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
        state = batch["state"]
        results = batch["results"] or []
        counts = {"processing": len(batch["requests"]) if state == "in_progress" else 0,
                  "succeeded": sum(1 for _, f in results if f == "ok"),
                  "errored": sum(1 for _, f in results if f in ("error", "too_long")),
                  "canceled": sum(1 for _, f in results if f == "cancel"),
                  "expired": sum(1 for _, f in results if f == "expire")}
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch["created"]))
        return {"id": batch["id"], "type": "message_batch",
                "processing_status": "in_progress" if state == "in_progress" else "ended",
                "request_counts": counts, "created_at": created,
                "results_url": None if state == "in_progress" else f"/v1/messages/batches/{batch['id']}/results"}

    def _anthropic_results(self, batch: dict[str, Any]) -> bytes:
        lines = []
        for custom_id, fate in batch["results"] or []:
            if fate == "ok":
                result = {"type": "succeeded", "message": {
                    "id": "msg", "type": "message", "role": "assistant", "model": "m",
                    "content": [{"type": "text", "text": f"## Goal\nbatch summary {custom_id[:12]}"}],
                    "usage": {"input_tokens": PROMPT_TOKENS - self.cached_tokens, "output_tokens": COMPLETION_TOKENS,
                              "cache_read_input_tokens": self.cached_tokens}}}
            elif fate in ("error", "too_long"):
                message = "prompt is too long: 300000 tokens > 200000 maximum" if fate == "too_long" else "overloaded"
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": message}}}
            else:
                result = {"type": "expired" if fate == "expire" else "canceled"}
            lines.append({"custom_id": custom_id, "result": result})
        return "".join(json.dumps(line) + "\n" for line in lines).encode()

    # -- HTTP -------------------------------------------------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any, content_type: str = "application/json") -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _route(self, method: str) -> None:
                url = urlparse(self.path)
                path = url.path
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                with fake.lock:
                    fake.requests.append((method, path))
                    key = self.headers.get("x-api-key") or self.headers.get("api-key") or \
                        (self.headers.get("authorization") or "").removeprefix("Bearer ")
                    fake.keys_seen.add(key)
                    if fake.provider == "azure":
                        if not path.startswith("/openai/") or "api-version" not in parse_qs(url.query):
                            return self._reply(404, {"error": {"message": f"no route {path}"}})
                        path = "/v1" + path.removeprefix("/openai")
                    if fake.provider == "anthropic":
                        return self._anthropic(method, path, body)
                    return self._openai(method, path, body)

            def _openai(self, method: str, path: str, body: bytes) -> None:
                parts = path.strip("/").split("/")
                if method == "POST" and path == "/v1/files":
                    message = BytesParser(policy=HTTP).parsebytes(
                        b"Content-Type: " + self.headers["content-type"].encode() + b"\r\n\r\n" + body)
                    content = b""
                    for part in message.iter_parts():
                        if part.get_param("name", header="content-disposition") == "file":
                            content = part.get_payload(decode=True)
                    ident = f"file-{len(fake.files) + 1}"
                    fake.files[ident] = content
                    return self._reply(200, {"id": ident, "object": "file", "purpose": "batch"})
                if method == "POST" and path.endswith("/chat/completions"):  # on demand (overflow recovery)
                    return self._reply(200, {"id": "c", "object": "chat.completion", "model": "gpt-4o-mini",
                                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                                 "role": "assistant", "content": "## Goal\non-demand summary"}}],
                                             "usage": {"prompt_tokens": PROMPT_TOKENS,
                                                       "completion_tokens": COMPLETION_TOKENS,
                                                       "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS}})
                if method == "POST" and path == "/v1/batches":
                    spec = json.loads(body)
                    lines = [json.loads(line) for line in fake.files[spec["input_file_id"]].splitlines() if line]
                    batch = fake._new_batch(lines, spec.get("metadata"))
                    return self._reply(200, fake._openai_batch(batch))
                if method == "GET" and path == "/v1/batches":
                    data = [fake._openai_batch(b) for b in reversed(fake.batches.values())]
                    return self._reply(200, {"object": "list", "data": data, "has_more": False})
                if len(parts) == 3 and parts[1] == "batches" and method == "GET":
                    batch = fake.batches[parts[2]]
                    fake._advance(batch)
                    return self._reply(200, fake._openai_batch(batch))
                if len(parts) == 4 and parts[3] == "cancel":
                    batch = fake.batches[parts[2]]
                    fake._advance(batch, cancel=True)
                    return self._reply(200, fake._openai_batch(batch))
                if len(parts) == 4 and parts[1] == "files" and parts[3] == "content":
                    ident = parts[2]
                    batch = fake.batches[ident.split("-", 2)[2]]
                    return self._reply(200, fake._openai_output(batch, errors=ident.startswith("file-err")),
                                       "application/jsonl")
                return self._reply(404, {"error": {"message": f"no route {method} {path}"}})

            def _anthropic(self, method: str, path: str, body: bytes) -> None:
                parts = path.strip("/").split("/")
                if method == "POST" and path == "/v1/messages/batches":
                    spec = json.loads(body)
                    batch = fake._new_batch(spec["requests"], None)
                    return self._reply(200, fake._anthropic_batch(batch))
                if method == "GET" and path == "/v1/messages/batches":
                    data = [fake._anthropic_batch(b) for b in reversed(fake.batches.values())]
                    return self._reply(200, {"data": data, "has_more": False})
                if len(parts) == 4 and method == "GET":
                    batch = fake.batches[parts[3]]
                    fake._advance(batch)
                    return self._reply(200, fake._anthropic_batch(batch))
                if len(parts) == 5 and parts[4] == "cancel":
                    batch = fake.batches[parts[3]]
                    fake._advance(batch, cancel=True)
                    return self._reply(200, fake._anthropic_batch(batch))
                if len(parts) == 5 and parts[4] == "results":
                    return self._reply(200, fake._anthropic_results(fake.batches[parts[3]]), "application/x-jsonl")
                return self._reply(404, {"error": {"message": f"no route {method} {path}"}})

            def do_GET(self) -> None:
                self._route("GET")

            def do_POST(self) -> None:
                self._route("POST")

        return Handler
