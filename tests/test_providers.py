"""Real providers from the installed CLI: preflight, keyless local servers, unpriced models, error lines,
and that no secret reaches the loopback server (tests/llm_server.py)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from factories import Builder
from fake_secrets import AWS_ID, AWS_SECRET, GITHUB, JWT, OPENAI, PEM
from llm_server import LLMServer

REPO = Path(__file__).resolve().parent.parent
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "BATCHCOMPACT_API_KEY",
            "BATCHCOMPACT_MODEL", "OPENAI_BASE_URL", "OPENAI_API_BASE")

SECRETS = {
    "url_credentials": "S3cr3tPassw0rd9",
    "url_userinfo": "hunter2hunter2x",
    "aws_secret_free_text": AWS_SECRET,
    "aws_access_key": AWS_ID,
    "high_entropy": "q8Zr2LmX9vT4wK7pN1sB6yH3",
    "openai_key": OPENAI,
    "github_token": GITHUB,
    "jwt": JWT,
    "private_key": PEM.splitlines()[1],
}


def cli(*args: str, env_extra: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=REPO)


@pytest.fixture
def server():
    srv = LLMServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def sessions(tmp_path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("small-fix.jsonl", "big-refactor.jsonl"):
        shutil.copy(REPO / "sample_sessions" / "pi" / name, folder / name)
    return folder


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_keyless_local_server_with_an_unpriced_model_compacts(server, sessions, tmp_path):
    out = tmp_path / "out"
    result = cli("run", str(sessions), "--output-dir", str(out), "--min-age", "0", "--model", "openai/my-local-model",
                 "--api-base", server.api_base, "--check", "--format", "json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["cost_usd"] is None and summary["unpriced_sessions"] >= 1
    assert server.requests and all(r.headers["authorization"] == "Bearer no-key" for r in server.requests)
    compactions = []
    for path in out.glob("*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        compactions += [e for e in lines if e.get("type") == "compaction" and "usage" in e]
    assert compactions
    for entry in compactions:  # pi's usage shape with zero costs
        assert entry["usage"]["cost"] == {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0,
                                          "total": 0.0}
    assert cli("validate", str(out)).returncode == 0
    report = pl.read_parquet(next((out / ".batchcompact" / "reports").glob("*.parquet")))
    compacted = report.filter(pl.col("status") == "compacted")
    assert compacted.height >= 1
    assert compacted["unpriced"].all() and compacted["cost_usd"].is_null().all()
    text = cli("run", str(sessions), "--output-dir", str(tmp_path / "out2"), "--min-age", "0", "--model",
               "openai/my-local-model", "--api-base", server.api_base)
    assert "unpriced" in text.stdout


@pytest.mark.parametrize("model,variable", [("openai/gpt-4o-mini", "OPENAI_API_KEY"),
                                            ("anthropic/claude-haiku-4-5", "ANTHROPIC_API_KEY"),
                                            ("gemini/gemini-2.5-flash", "GEMINI_API_KEY")])
def test_missing_key_exits_3_before_reading_anything(model, variable, tmp_path):
    archive = REPO / "sample_sessions" / "pi"  # preflight comes before any file is read
    result = cli("run", str(archive), "--output-dir", str(tmp_path / "out"), "--model", model)
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and variable in result.stderr and "nothing was sent" in result.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_model_exits_2_with_a_hint(tmp_path):
    result = cli("run", str(REPO / "sample_sessions" / "pi"), "--output-dir", str(tmp_path / "out"), "--model",
                 "nonsense-model-xyz")
    assert result.returncode == 2, result.stderr
    assert "unknown model 'nonsense-model-xyz'" in result.stderr
    assert "--model openai/nonsense-model-xyz --api-base" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


@pytest.mark.slow
def test_closed_port_says_cannot_reach(sessions, tmp_path):
    base = f"http://127.0.0.1:{closed_port()}/v1"
    checked = cli("run", str(sessions), "--output-dir", str(tmp_path / "o1"), "--min-age", "0", "--model", "openai/m",
                  "--api-base", base, "--check")
    assert checked.returncode == 3
    assert checked.stderr.strip() == f"Error: --check failed: cannot reach {base}: connection refused"
    result = cli("run", str(sessions), "--output-dir", str(tmp_path / "o2"), "--min-age", "0", "--model", "openai/m",
                 "--api-base", base, "--max-attempts", "1")
    assert result.returncode == 1
    failed = [line for line in result.stdout.splitlines() if line.strip().startswith("failed:")]
    assert failed and all(f"gave up after 1 attempt: cannot reach {base}: connection refused" in line for line in failed)
    assert all(line.count("jsonl") == 1 for line in failed)  # the path once
    # grouped by kind: the attempts are a figure, the address is not (it was `http://N:N/v1`)
    assert f"  {len(failed)} failed: {len(failed)} gave up after N attempts: cannot reach {base}: connection refused" \
        in result.stdout.splitlines()


@pytest.mark.slow
def test_server_refusing_the_key_aborts_at_once(server, sessions, tmp_path):
    from llm_server import Error

    server.default = Error(401, "Incorrect API key provided\nsecond line of detail")
    result = cli("run", str(sessions), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--model", "openai/m",
                 "--api-base", server.api_base, "--api-key", "wrong-key-123")
    assert result.returncode == 3
    assert len(server.requests) <= 2  # no retries; at most the calls already in flight
    assert "Incorrect API key provided" in result.stdout and "second line" not in result.stdout
    assert "wrong-key-123" not in result.stdout + result.stderr


def secret_session(path: Path) -> Path:
    """A pi session carrying every secret kind in user text, thinking, tool arguments and tool results."""
    b = Builder()
    pad = " ".join(["context"] * 400)
    for turn in range(6):
        b.user(f"turn {turn}: connect with DATABASE_URL=postgres://appuser:{SECRETS['url_credentials']}@db:5432/a "
               f"{pad}")
        entry = b.assistant(f"ok {pad}", calls=[("bash", {"command": f"git clone https://deployer:"
                                                          f"{SECRETS['url_userinfo']}@git.example.com/r.git",
                                                          "env": f"OPENAI_API_KEY={OPENAI}"})], usage=900 * (turn + 1))
        content = b.entries[-1]["message"]["content"]
        content.insert(0, {"type": "thinking", "thinking": f"the key id is {AWS_ID} and its secret {AWS_SECRET} "
                                                            f"and token {GITHUB}"})
        assert entry
        b.tool_result(f"SESSION_SIGNING_SECRET_VALUE: \"{SECRETS['high_entropy']}\"\nAuthorization: Bearer {JWT}\n"
                      f"{PEM}\n{pad}")
    return b.write(path)


@pytest.mark.slow
def test_no_secret_reaches_the_server(server, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    secret_session(folder / "secrets.jsonl")
    out = tmp_path / "out"
    result = cli("run", str(folder), "--output-dir", str(out), "--min-age", "0", "--model", "openai/m", "--api-base",
                 server.api_base, "--force", "--keep-recent-tokens", "1000")
    assert result.returncode == 0, result.stdout + result.stderr
    assert server.requests
    bodies = "\n".join(json.dumps(r.body) for r in server.requests)
    assert "[REDACTED:" in bodies
    for kind, secret in SECRETS.items():
        assert secret not in bodies, kind
    report = pl.read_parquet(next((out / ".batchcompact" / "reports").glob("*.parquet")))
    kinds = {k["kind"] for row in report["redaction_kinds"].to_list() for k in row}
    assert {"url_credentials", "aws_secret_key", "aws_access_key", "high_entropy", "openai_key", "github_token",
            "private_key"} <= kinds
    assert report["redactions"].sum() == sum(k["count"] for row in report["redaction_kinds"].to_list() for k in row)
