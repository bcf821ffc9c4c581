"""The real pi (npm @mariozechner/pi-coding-agent 0.73.1) and oh-my-pi (npm @oh-my-pi/pi-coding-agent 18.2.3,
on npm's bun 1.4.4) as judges, for the pi tests here: each installed once (`pi_binary`, `omp_binary`), its
own session modules run on copies of our files (`pi_modules`, `omp_modules`), one CLI turn resumed against a
loopback fake Anthropic API (`pi_turn`, `omp_turn`), and what we appended to a file (`our_compaction`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from agent_judges import REPLY, FakeAnthropic, node_bin, npm_cli, sandbox_env
from conftest import unavailable

PI_PACKAGE = "@mariozechner/pi-coding-agent"
PI_VERSION = "0.73.1"
PI_MODULES_SCRIPT = Path(__file__).with_name("pi_modules.mjs")
OMP_PACKAGE = "@oh-my-pi/pi-coding-agent"
OMP_VERSION = "18.2.3"  # 18.2.9 and 18.3.x need an @oh-my-pi/omp-stats the npm registry does not serve
BUN = "bun@1.4.4"  # its engine: bun >= 1.3.14
OMP_MODULES_SCRIPT = Path(__file__).with_name("omp_modules.ts")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def our_compaction(source: Path, output: Path) -> dict[str, Any] | None:
    """The compaction entry we appended (None when the file was copied unchanged)."""
    appended = lines(output)[len(lines(source)) :]
    ours = [o for o in appended if o["type"] == "compaction"]
    assert len(ours) <= 1
    return ours[0] if ours else None


# ---- pi -----------------------------------------------------------------------------------------------


def pi_binary() -> Path:
    """The pi CLI, installed from npm once (or the test skipped, failed in CI)."""
    return npm_cli(PI_PACKAGE, PI_VERSION, "pi")


def pi_modules(pi_bin: Path, home: Path, request: dict[str, Any]) -> dict[str, Any]:
    """pi's own session modules on copies of the files named in `request` (pi_modules.mjs)."""
    package = pi_bin.parent.parent / PI_PACKAGE
    home.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [str(node_bin()), str(PI_MODULES_SCRIPT), str(package)], input=json.dumps(request),
        env=sandbox_env(home, PI_OFFLINE="1"), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def pi_turn(pi_bin: Path, home: Path, work: Path, session: Path, prompt: str) -> list[dict[str, Any]]:
    """One `pi -p PROMPT --session FILE` turn; the conversation requests pi sent."""
    with FakeAnthropic() as server:
        agent = home / ".pi" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        model = {"id": "judge-model", "contextWindow": 2_000_000, "maxTokens": 1000, "reasoning": False,
                 "input": ["text", "image"]}
        provider = {"baseUrl": server.url, "api": "anthropic-messages", "apiKey": "judge-key", "models": [model]}
        (agent / "models.json").write_text(json.dumps({"providers": {"judge": provider}}), encoding="utf-8")
        done = subprocess.run(
            [str(pi_bin), "-p", prompt, "--session", str(session), "--provider", "judge", "--model", "judge-model",
             "--offline", "--no-tools", "--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes",
             "--no-context-files"],
            cwd=work, env=sandbox_env(home, PI_OFFLINE="1"), capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == REPLY
        assert done.stderr.strip() == ""
        return server.conversation_requests()


# ---- oh-my-pi -----------------------------------------------------------------------------------------


def omp_binary() -> Path:
    """The omp CLI with npm's bun beside it, installed once (or the test skipped, failed in CI)."""
    binary = npm_cli(OMP_PACKAGE, OMP_VERSION, "omp", beside=(BUN,))
    if not (binary.parent / "bun").exists():  # npm's bun fetches its binary as an optional dependency
        unavailable(f"{BUN} installed without its binary ({binary.parent / 'bun'} is missing)")
    return binary


def omp_package(omp_bin: Path) -> Path:
    return omp_bin.parent.parent / OMP_PACKAGE


def omp_modules(omp_bin: Path, home: Path, request: dict[str, Any]) -> dict[str, Any]:
    """oh-my-pi's own session modules (omp_modules.ts) on the files named in `request`: pass copies."""
    home.mkdir(parents=True, exist_ok=True)
    env = sandbox_env(home, PATH=f"{omp_bin.parent}{os.pathsep}/usr/bin{os.pathsep}/bin")
    done = subprocess.run([str(omp_bin.parent / "bun"), str(OMP_MODULES_SCRIPT), str(omp_package(omp_bin))],
                          input=json.dumps(request), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def same_message(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """One context message equal in what the model gets: a stored message value for value; a summary or
    custom message by its text (oh-my-pi's own message objects carry display fields of their own)."""
    role = ours.get("role")
    if role != theirs.get("role"):
        return False
    if role in ("compactionSummary", "branchSummary"):
        return ours.get("summary") == theirs.get("summary")
    if role == "custom":
        return (ours.get("customType"), ours.get("content")) == (theirs.get("customType"), theirs.get("content"))
    return ours == theirs


def sandbox_copy(output: Path, work: Path, folder: Path) -> Path:
    """Our file with only the header's cwd pointed at `work` (oh-my-pi resumes in a cwd that exists)."""
    raw = output.read_text(encoding="utf-8").splitlines(keepends=True)
    at = 1 if json.loads(raw[0])["type"] == "title" else 0
    header = json.loads(raw[at])
    header["cwd"] = str(work)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / output.name
    target.write_text("".join(raw[:at]) + json.dumps(header, separators=(",", ":")) + "\n" + "".join(raw[at + 1:]),
                      encoding="utf-8")
    return target


def omp_turn(omp_bin: Path, home: Path, work: Path, session: Path, prompt: str) -> list[dict[str, Any]]:
    """One `omp -p PROMPT --resume FILE` turn, offline but for the loopback fake; the requests it sent."""
    with FakeAnthropic() as server:
        agent = home / ".omp" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        model = {"id": "judge-model", "contextWindow": 2_000_000, "maxTokens": 1000, "reasoning": False,
                 "input": ["text"]}
        provider = {"baseUrl": server.url, "api": "anthropic-messages", "apiKey": "judge-key", "models": [model]}
        (agent / "models.yml").write_text(json.dumps({"providers": {"judge": provider}}), encoding="utf-8")
        env = sandbox_env(home, PATH=f"{omp_bin.parent}{os.pathsep}/usr/bin{os.pathsep}/bin")
        done = subprocess.run(
            [str(omp_bin), "-p", prompt, "--resume", str(session), "--model", "judge/judge-model", "--no-tools",
             "--no-extensions", "--no-skills", "--no-rules", "--no-title", "--no-lsp"],
            cwd=work, env=env, capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().startswith(REPLY)
        return server.conversation_requests()
