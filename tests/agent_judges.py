"""The real agent CLIs as judges: installed from npm into a cache folder, run in a sandbox against a
loopback fake of their model API that records every request.

- `npm_cli(package, version, binary)` installs once into `$BATCHCOMPACT_TEST_CACHE` (default
  `~/.cache/batchcompact-tests`)/npm/<package>-<version> and returns the binary, or skips the test with
  the reason when npm is missing or the install fails (with `CI` set, the test fails instead).
- `FakeAnthropic` answers `POST /v1/messages` (streamed or not) with one text reply and records bodies.
- `sandbox_env` gives a CLI nothing of the user's: HOME and the config dir in tmp, telemetry and updates
  off, and a proxy that goes nowhere for everything but 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from conftest import unavailable

REPLY = "JUDGE-OK"


def cache_dir() -> Path:
    root = os.environ.get("BATCHCOMPACT_TEST_CACHE") or os.path.join(Path.home(), ".cache", "batchcompact-tests")
    return Path(root)


def node_bin() -> Path:
    """The `node` that runs the npm CLIs (skip without it; fail in CI)."""
    node = shutil.which("node")
    if node is None:
        unavailable("node is not installed")
    return Path(node)


def npm_cli(package: str, version: str, binary: str) -> Path:
    """The installed CLI binary `node_modules/.bin/<binary>` of package@version (installed if missing)."""
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not installed")
    prefix = cache_dir() / "npm" / f"{package.replace('/', '+')}-{version}"
    target = prefix / "node_modules" / ".bin" / binary
    if target.exists() and (prefix / ".installed").exists():
        return target
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
               f"{package}@{version}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        unavailable(f"npm install {package}@{version} timed out (registry unreachable?)")
    if done.returncode != 0 or not target.exists():
        said = [line for line in (done.stderr or done.stdout).splitlines() if line.strip() and "complete log" not in line]
        unavailable(f"npm install {package}@{version} failed: {' / '.join(said[:2]) or done.returncode}")
    (prefix / ".installed").write_text(version)
    return target


def sandbox_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment with nothing of the user's, and no way out but 127.0.0.1."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    env.update(extra)
    return env


class _LoopbackAPI:
    """A recording HTTP server on 127.0.0.1: every POST body is kept in `requests`; `reply` answers it."""

    suffix = ""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                owner.requests.append({"path": self.path, "body": None})
                self.send("application/json", b"{}", status=404)

            def do_POST(self) -> None:  # noqa: N802
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                owner.requests.append({"path": self.path, "body": body})
                kind, data = owner.reply(self.path, body, len(owner.requests))
                self.send(kind, data)

            def send(self, kind: str, data: bytes, status: int = 200) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.suffix}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        raise AssertionError("a fake API answers every request")  # each fake below overrides it

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def _sse(events: list[dict[str, Any]]) -> tuple[str, bytes]:
    return "text/event-stream", b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


class FakeAnthropic(_LoopbackAPI):
    """A loopback Anthropic Messages API: every POST body is recorded; the reply is one text block."""

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        if "count_tokens" in path:
            return "application/json", json.dumps({"input_tokens": 100}).encode()
        message = {
            "id": f"msg_judge{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-opus-4-6",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0},
        }
        if not body.get("stream"):
            message.update(content=[{"type": "text", "text": REPLY}], stop_reason="end_turn")
            return "application/json", json.dumps(message).encode()
        return _sse([
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": REPLY}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ])

    def conversation_requests(self) -> list[dict[str, Any]]:
        """The bodies of the /v1/messages calls that carry a conversation."""
        return [r["body"] for r in self.requests if "/v1/messages" in r["path"] and "count_tokens" not in r["path"]
                and isinstance(r["body"], dict) and r["body"].get("messages")]


class FakeResponses(_LoopbackAPI):
    """A loopback OpenAI Responses API: every POST body is recorded; the reply is one assistant message.
    WebSocket upgrades (GET) are refused, so Codex falls back to HTTPS streaming."""

    suffix = "/v1"

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        item = {"type": "message", "role": "assistant", "id": f"msg_judge{n}", "status": "completed",
                "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
        usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 13}
        response = {"id": f"resp_judge{n}", "object": "response", "status": "completed", "output": [item],
                    "usage": usage}
        return _sse([
            {"type": "response.created", "response": {**response, "status": "in_progress", "output": [], "usage": None}},
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress", "content": []}},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": response},
        ])

    def inputs(self) -> list[list[dict[str, Any]]]:
        """The `input` lists of the /responses calls."""
        return [r["body"]["input"] for r in self.requests if r["path"].endswith("/responses")
                and isinstance(r["body"], dict) and isinstance(r["body"].get("input"), list)]
