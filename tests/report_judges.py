"""Loopback model APIs for the report's judges: the real agent CLIs write their transcripts against these,
and every reply carries known usage (cached and reasoning tokens included), so the test knows what each
transcript must add up to.

- `judge_cli(package, version, binary)`: the installed CLI (agent_judges.npm_cli); with `CI` set, a CLI
  that cannot be installed FAILS the test instead of skipping it.
- `record_opencode_like(...)`: runs OpenCode or Kilo (`<cli> run PROMPT`, then `--continue`) in a
  sandbox HOME against `FakeChat` through an OpenAI-compatible provider in the project's config.
- `FakeChat` answers OpenAI Chat Completions (`POST .../chat/completions`, streamed or not) with one text
  reply; usage per reply = `USAGE` (prompt tokens INCLUDE the cached ones, completion tokens INCLUDE the
  reasoning ones, as OpenAI reports them). `GET .../models` lists the one model.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_judges import (
    GEMINI,
    QWEN,
    REPLY,
    FakeGemini,
    _LoopbackAPI,
    cache_dir,
    gemini_env,
    gemini_settings,
    install_lock,
    npm_cli,
    qwen_settings,
    sandbox_env,
)

# One reply's usage, the way an OpenAI-compatible provider reports it.
PROMPT, CACHED, COMPLETION, REASONING = 1200, 1000, 30, 12
USAGE = {"prompt_tokens": PROMPT, "completion_tokens": COMPLETION, "total_tokens": PROMPT + COMPLETION,
         "prompt_tokens_details": {"cached_tokens": CACHED},
         "completion_tokens_details": {"reasoning_tokens": REASONING}}
MODEL = "gpt-4.1-mini"


class FakeChat(_LoopbackAPI):
    """A loopback OpenAI Chat Completions API; `chat_requests()` are the conversation calls it answered."""

    suffix = "/v1"

    def __init__(self) -> None:
        super().__init__()
        owner = self
        handler = self.server.RequestHandlerClass

        def do_get(self) -> None:  # noqa: N802 - http.server's naming
            owner.requests.append({"path": self.path, "body": None})
            if self.path.rstrip("/").endswith("/models"):
                self.send("application/json", json.dumps({"object": "list", "data": [
                    {"id": MODEL, "object": "model", "created": 1700000000, "owned_by": "judge"}]}).encode())
            else:
                self.send("application/json", b"{}", status=404)

        handler.do_GET = do_get

    def reply(self, path: str, body: dict[str, Any], n: int) -> tuple[str, bytes]:
        base = {"id": f"chatcmpl-judge{n}", "created": 1700000000 + n, "model": body.get("model") or MODEL}
        message = {"role": "assistant", "content": REPLY}
        if not body.get("stream"):
            answer = {**base, "object": "chat.completion", "usage": USAGE,
                      "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
            return "application/json", json.dumps(answer).encode()
        chunks = [
            {**base, "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
            {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**base, "object": "chat.completion.chunk", "choices": [], "usage": USAGE},
        ]
        data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
        return "text/event-stream", data

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")
                and isinstance(r["body"], dict)]


# `@kilocode/cli` 7.8.1 (the newest) names native packages the registry does not have; 7.7.7 has them.
OPENCODE = ("opencode-ai", "1.18.33", "opencode")
KILO = ("@kilocode/cli", "7.7.7", "kilo")


def judge_cli(package: str, version: str, binary: str) -> Path:
    """`npm_cli`, except that under CI a CLI that cannot be installed is a failure, not a skip."""
    try:
        return npm_cli(package, version, binary)
    except pytest.skip.Exception as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI: the judge {package}@{version} could not be installed: {exc}")
        raise


def record_opencode_like(cli: tuple[str, str, str], root: Path, prompts: tuple[str, ...]) -> tuple[Path, int]:
    """Run OpenCode or Kilo once per prompt (the later ones `--continue` the session) against `FakeChat`;
    returns (the sandbox HOME, how many conversation calls the fake answered)."""
    binary = judge_cli(*cli)
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    home.mkdir()
    name = cli[2]
    with FakeChat() as api:
        config = {"provider": {"judge": {"npm": "@ai-sdk/openai-compatible", "name": "Judge",
                                         "options": {"baseURL": api.url, "apiKey": "judge"},
                                         "models": {MODEL: {"name": "Judge model"}}}},
                  "model": f"judge/{MODEL}", "autoupdate": False, "share": "disabled"}
        (project / f"{'opencode' if name == 'opencode' else 'kilo'}.json").write_text(json.dumps(config))
        env = sandbox_env(home, OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_MODELS_FETCH="1",
                          OPENCODE_DISABLE_LSP_DOWNLOAD="1", KILO_DISABLE_AUTOUPDATE="1")
        for number, prompt in enumerate(prompts):
            command = [str(binary), "run", *(["--continue"] if number else []), prompt]
            done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
        calls = sum(1 for body in api.chat_requests() if body.get("tools"))
    return home, calls


# Gemini's usageMetadata for one reply: the prompt INCLUDES the cached tokens, the thoughts are BESIDE the
# candidates (total = prompt + candidates + thoughts).
GEMINI_USAGE = {"promptTokenCount": PROMPT, "cachedContentTokenCount": CACHED, "candidatesTokenCount": COMPLETION,
                "thoughtsTokenCount": REASONING, "totalTokenCount": PROMPT + COMPLETION + REASONING}


def record_gemini(root: Path, prompts: tuple[str, ...]) -> tuple[Path, int]:
    """Gemini CLI `-p PROMPT` (later prompts `--resume latest`) against `FakeGemini`; (HOME, conversation calls)."""
    binary = judge_cli(*GEMINI)
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    gemini_settings(home)
    with FakeGemini(usage=GEMINI_USAGE) as api:
        env = gemini_env(home, api.url)
        for number, prompt in enumerate(prompts):
            command = [str(binary), *(["--resume", "latest"] if number else []), "-p", prompt]
            done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
        calls = len(api.conversation_requests())
    return home, calls


def record_qwen(root: Path, prompts: tuple[str, ...]) -> tuple[Path, int]:
    """Qwen Code `-p PROMPT` (later prompts `--continue`) against `FakeChat`; (HOME, calls answered)."""
    binary = judge_cli(*QWEN)
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    qwen_settings(home)
    with FakeChat() as api:
        env = sandbox_env(home, OPENAI_API_KEY="judge", OPENAI_BASE_URL=api.url, OPENAI_MODEL=MODEL,
                          QWEN_CODE_SUPPRESS_YOLO_WARNING="1")
        for number, prompt in enumerate(prompts):
            command = [str(binary), *(["--continue"] if number else []), "-p", prompt]
            done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
        calls = len(api.chat_requests())
    return home, calls


CODEX = ("@openai/codex", "0.169.0", "codex")


def record_codex_fork(root: Path) -> tuple[Path, int]:
    """Codex: `exec PROMPT`, `exec resume --last PROMPT`, then `exec fork <that thread> PROMPT` against the
    loopback Responses API (10 input, 3 output tokens a reply); (CODEX_HOME, model calls answered)."""
    from agent_judges import FakeResponses

    binary = judge_cli(*CODEX)
    home, work = root / "home", root / "work"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    work.mkdir()
    with FakeResponses() as server:
        (codex_home / "config.toml").write_text(f'model = "gpt-5.3-codex"\nopenai_base_url = "{server.url}"\n')
        env = sandbox_env(home, CODEX_HOME=str(codex_home), OPENAI_API_KEY="sk-judge", OPENAI_BASE_URL=server.url)

        def run(*args: str) -> None:
            done = subprocess.run([str(binary), "exec", "--skip-git-repo-check", *args], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])

        run("JUDGE-ONE first prompt")
        run("resume", "--last", "JUDGE-TWO second prompt")
        (first,) = sorted(codex_home.rglob("rollout-*.jsonl"))
        run("fork", first.name.split(".jsonl")[0][-36:], "JUDGE-THREE forked prompt")
        calls = len(server.inputs())
    return codex_home, calls


# Cline's CLI (a compiled Bun binary inside the npm package; no native package to fetch at run time).
CLINE = ("cline", "3.0.65", "cline")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop_cline_hub(project: Path) -> None:
    """Cline starts a hub daemon that outlives the run (and may start it again as the CLI exits); end the
    ones this recording started, by pid: a daemon whose command line names this recording's project
    folder. Scans until two scans a second apart find none."""
    import signal
    import time

    quiet = 0
    for _ in range(20):
        found = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--cline-hub-daemon" in args and str(project).encode() in args:
                found += 1
                try:
                    os.kill(int(entry.name), signal.SIGTERM)
                except OSError:
                    pass
        quiet = 0 if found else quiet + 1
        if quiet >= 2:
            return
        time.sleep(1)


def record_cline(root: Path, prompts: tuple[str, ...]) -> tuple[Path, int]:
    """Cline `cline PROMPT` once per prompt (each a session) against `FakeChat` through its OpenAI-compatible
    provider (`cline auth -p openai -b URL`); (the sandbox HOME, conversation calls answered)."""
    binary = judge_cli(*CLINE)
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    home.mkdir()
    with FakeChat() as api:
        env = sandbox_env(home, CLINE_NO_AUTO_UPDATE="1", CLINE_HUB_PORT=str(_free_port()))
        try:
            done = subprocess.run([str(binary), "auth", "-p", "openai", "-k", "judge", "-m", MODEL, "-b", api.url],
                                  cwd=project, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
            for prompt in prompts:
                done = subprocess.run([str(binary), prompt], cwd=project, env=env, capture_output=True, text=True,
                                      timeout=300)
                assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
        finally:
            _stop_cline_hub(project)
        calls = len(api.chat_requests())
    return home, calls


# Mistral Vibe is on PyPI (not npm) and needs Python 3.12 or newer. 3.0.x pins a certifi release the index
# does not serve; 2.26.1 installs as published.
VIBE = ("mistral-vibe", "2.26.1", "vibe")


def _python_312() -> Path | None:
    """A Python 3.12+ interpreter that runs: pyenv's newest 3.12+ version, else one on PATH (a pyenv shim on
    PATH fails for a version not selected, hence the check)."""
    import re
    import shutil

    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    versions = []
    for folder in root.glob("3.*"):
        match = re.fullmatch(r"3\.(\d+)\.(\d+)", folder.name)
        if match and int(match[1]) >= 12:
            versions.append(((int(match[1]), int(match[2])), folder / "bin" / "python3"))
    candidates = [path for _, path in sorted(versions, reverse=True)]
    candidates += [Path(found) for name in ("python3.14", "python3.13", "python3.12") if (found := shutil.which(name))]
    for python in candidates:
        try:
            if subprocess.run([str(python), "-c", "import venv"], capture_output=True, timeout=60).returncode == 0:
                return python
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def vibe_cli() -> Path:
    """The `vibe` binary of mistral-vibe (VIBE's version) in a venv under the judges' cache (created once);
    skipped (failed in CI) when no Python 3.12+ or the install fails."""
    package, version, binary = VIBE
    prefix = cache_dir() / "pypi" / f"{package}-{version}"
    target = prefix / "bin" / binary
    if target.exists() and (prefix / ".installed").exists():
        return target
    with install_lock(prefix):
        if target.exists() and (prefix / ".installed").exists():  # installed while this process waited
            return target
        return _pip_install(package, version, prefix, target)


def _pip_install(package: str, version: str, prefix: Path, target: Path) -> Path:
    from conftest import unavailable

    python = _python_312()
    if python is None:
        unavailable(f"{package} needs Python 3.12 or newer, and none is installed")
    try:
        subprocess.run([str(python), "-m", "venv", "--clear", str(prefix)], check=True, capture_output=True,
                       timeout=300)
        done = subprocess.run([str(prefix / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                               f"{package}=={version}"], capture_output=True, text=True, timeout=1200)
    except (subprocess.SubprocessError, OSError) as exc:
        unavailable(f"pip install {package}=={version} failed: {exc}")
    if done.returncode != 0 or not target.exists():
        said = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        unavailable(f"pip install {package}=={version} failed: {' / '.join(said[:2]) or done.returncode}")
    (prefix / ".installed").write_text(version)
    return target


def vibe_config(home: Path, url: str) -> None:
    """`~/.vibe/config.toml`: an OpenAI-compatible provider on `url` and MODEL as the active model (alias `judge`)."""
    (home / ".vibe").mkdir(parents=True, exist_ok=True)
    (home / ".vibe" / "config.toml").write_text(
        f'active_model = "judge"\n\n[[providers]]\nname = "judge"\napi_base = "{url}"\napi_key_env_var = "JUDGE_KEY"\n'
        f'backend = "generic"\n\n[[models]]\nname = "{MODEL}"\nprovider = "judge"\nalias = "judge"\n')


def record_vibe(root: Path, runs: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[Path, int]:
    """`vibe [ARGS] --trust -p PROMPT` for each (prompt, args) (`--continue` resumes the latest session,
    `--legacy-harness` runs the Python harness) against `FakeChat`; (the sandbox HOME, calls answered)."""
    binary = vibe_cli()
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    home.mkdir()
    with FakeChat() as api:
        vibe_config(home, api.url)
        env = sandbox_env(home, JUDGE_KEY="judge")
        for prompt, args in runs:
            done = subprocess.run([str(binary), *args, "--trust", "-p", prompt], cwd=project, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0 and REPLY in done.stdout, (done.stdout[-2000:], done.stderr[-2000:])
        calls = len(api.chat_requests())
    return home, calls
