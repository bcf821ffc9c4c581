"""An OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benches.

Each request takes the next scripted behaviour (FIFO); with the script empty it uses `default`, which may
also be a callable `(request_body) -> behaviour` so concurrent tests can key behaviour on the prompt.
Every request is recorded (time, path, parsed body, headers) so tests can assert what reached the wire.
"""

from __future__ import annotations

import collections
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    text: str = "## Goal\nsummary from the test server"
    prompt_tokens: int = 100
    completion_tokens: int = 20
    delay: float = 0.0
    cached_tokens: int = 0


@dataclass
class Error:
    status: int
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)
    code: str | None = None
    type: str = "invalid_request_error"
    delay: float = 0.0


@dataclass
class Hang:
    seconds: float = 30.0


@dataclass
class Malformed:
    body: bytes = b'{"id": "x", "choices": [ this is not json'


def rate_limited(retry_after: float | str = 1) -> Error:
    return Error(429, "Rate limit reached for requests", {"Retry-After": str(retry_after)}, type="requests")


def context_too_long() -> Error:
    return Error(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages resulted in "
        "200000 tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
    )


@dataclass
class Request:
    time: float
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def user_prompt(self) -> str:
        for message in self.body.get("messages", []):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, list):
                    return "".join(part.get("text", "") for part in content)
                return content or ""
        return ""


class LLMServer:
    """Start with `start()` (port 0), stop with `stop()`; `api_base` is what litellm needs."""

    def __init__(self, default: Any = None):
        self.default = default if default is not None else Answer()
        self.script: collections.deque = collections.deque()
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd: ThreadingHTTPServer | None = None

    # -- control ---------------------------------------------------------------------------------
    def enqueue(self, *behaviours: Any) -> None:
        with self.lock:
            self.script.extend(behaviours)

    @property
    def api_base(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> LLMServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                # Headers and body go out in two writes; without NODELAY, Nagle + delayed ACK add ~40 ms.
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                server._handle(self)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    # -- serving ---------------------------------------------------------------------------------
    def _next(self, body: dict) -> Any:
        with self.lock:
            if self.script:
                return self.script.popleft()
        behaviour = self.default
        return behaviour(body) if callable(behaviour) else behaviour

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        with self.lock:
            self.requests.append(
                Request(
                    time.monotonic(), handler.path, body, {k.lower(): v for k, v in handler.headers.items()}
                )
            )
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._respond(handler, body, self._next(body))
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            with self.lock:
                self.in_flight -= 1

    def _respond(self, handler: BaseHTTPRequestHandler, body: dict, behaviour: Any) -> None:
        if isinstance(behaviour, Hang):
            self.stopping.wait(behaviour.seconds)
            handler.close_connection = True
            return
        if getattr(behaviour, "delay", 0):
            time.sleep(behaviour.delay)
        if isinstance(behaviour, Malformed):
            self._send(handler, 200, behaviour.body, {})
            return
        if isinstance(behaviour, Error):
            payload = {
                "error": {
                    "message": behaviour.message,
                    "type": behaviour.type,
                    "param": None,
                    "code": behaviour.code,
                }
            }
            self._send(handler, behaviour.status, json.dumps(payload).encode(), behaviour.headers)
            return
        assert isinstance(behaviour, Answer), behaviour
        usage = {
            "prompt_tokens": behaviour.prompt_tokens,
            "completion_tokens": behaviour.completion_tokens,
            "total_tokens": behaviour.prompt_tokens + behaviour.completion_tokens,
        }
        if behaviour.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": behaviour.cached_tokens}
        payload = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": behaviour.text},
                }
            ],
            "usage": usage,
        }
        self._send(handler, 200, json.dumps(payload).encode(), {})

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str]) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)


Behaviour = Answer | Error | Hang | Malformed | Callable[[dict], Any]


def main() -> None:
    """`python tests/llm_server.py [DELAY]`: serve answers after DELAY seconds; prints the api_base."""
    import sys

    server = LLMServer(Answer(delay=float(sys.argv[1]) if len(sys.argv) > 1 else 0.0)).start()
    print(server.api_base, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
