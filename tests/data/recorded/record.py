"""Re-record the Gemini CLI, Qwen Code and OpenClaw sessions in this folder with the real CLIs.

    python tests/data/recorded/record.py [gemini|qwen|openclaw ...]

Each CLI is installed from npm into the judges' cache (tests/agent_judges.py), runs in a sandbox HOME
under /tmp/batchcompact-record/<agent>/ against a loopback fake of its model API that makes scripted
tool calls, and the chat files it writes are copied here:

- gemini-cli/session-tools.jsonl: `gemini -p` with read_file, write_file, replace, run_shell_command,
  then `gemini --resume latest -p` with glob, grep_search, write_todos, list_directory (the resume writes
  a second header line and `$set` checkpoints of the whole history).
- gemini-cli/session-compressed.jsonl: the same, then a third resume with `model.compressionThreshold`
  so low that Gemini CLI compresses on its own (`$set.messages` = context + summary + "Got it." + kept),
  then a fourth prompt.
- gemini-cli/legacy-session.json: the legacy single-JSON shape (pre-0.40), built from the final state of
  session-tools.jsonl (no CLI of this version writes it).
- qwen-code/session-tools.jsonl: `qwen -p` with read_file, write_file, edit, run_shell_command, then
  `qwen --continue -p` with glob, grep_search, run_shell_command.
- qwen-code/session-compressed.jsonl: the same, then a third run with `context.autoCompactThreshold` so
  low that Qwen Code compresses on its own (a `system`/`chat_compression` record), then a fourth prompt.
- openclaw/openclaw-agent.sqlite.gz: OpenClaw's agent database after `openclaw agent --local --agent main
  --session-id s1 -m …` three times ("prompt alpha: READ-alpha.txt", beta, gamma: each one `read` call
  of a workspace file, then a text reply), copied with SQLite's backup (journal mode DELETE) and gzipped.
Nothing here reaches the network: the fake answers on 127.0.0.1 and the sandbox proxy goes nowhere.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from agent_judges import (  # noqa: E402
    GEMINI,
    QWEN,
    FakeGemini,
    FakeOpenAIChat,
    FakeOpenClawModel,
    gemini_env,
    gemini_script,
    gemini_settings,
    npm_cli,
    openclaw_cli,
    openclaw_config,
    openclaw_turn,
    qwen_env,
    qwen_script,
    qwen_settings,
)

ROOT = Path("/tmp/batchcompact-record")


def run_gemini(binary: Path, home: Path, project: Path, url: str, *args: str) -> None:
    env = gemini_env(home, url)
    command = [str(binary), "-m", "gemini-2.5-flash", "--approval-mode", "yolo", *args]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"gemini {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")


def gemini_chats(home: Path) -> list[Path]:
    return sorted((home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))


def record_gemini(out: Path) -> None:
    binary = npm_cli(*GEMINI)
    out.mkdir(parents=True, exist_ok=True)
    for name, compress in (("session-tools.jsonl", False), ("session-compressed.jsonl", True)):
        root = ROOT / "gemini" / name.split(".")[0]
        shutil.rmtree(root, ignore_errors=True)
        home, project = root / "home", root / "project"
        project.mkdir(parents=True)
        (project / "notes.txt").write_text("alpha\nbeta\n")
        gemini_settings(home)
        with FakeGemini(gemini_script(project)) as api:
            run_gemini(binary, home, project, api.url, "-p", "STEP-ONE: read notes, write and fix hello.py")
            run_gemini(binary, home, project, api.url, "--resume", "latest", "-p", "STEP-TWO: look around")
            if compress:
                gemini_settings(home, compressionThreshold=0.0005)
                run_gemini(binary, home, project, api.url, "--resume", "latest", "-p", "STEP-THREE: carry on")
                gemini_settings(home)
                run_gemini(binary, home, project, api.url, "--resume", "latest", "-p", "STEP-FOUR: and again")
        [chat] = gemini_chats(home)
        shutil.copyfile(chat, out / name)
    write_legacy(out / "session-tools.jsonl", out / "legacy-session.json")


def write_legacy(source: Path, target: Path) -> None:
    """The legacy single-JSON chat of a JSONL chat's final state (Gemini CLI's loader rules)."""
    meta: dict = {}
    messages: dict[str, dict] = {}
    for line in source.read_text().splitlines():
        record = json.loads(line)
        if isinstance(record.get("$set"), dict):
            if isinstance(record["$set"].get("messages"), list):
                messages = {m["id"]: m for m in record["$set"]["messages"]}
            meta.update({k: v for k, v in record["$set"].items() if k != "messages"})
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record
        elif "sessionId" in record:
            meta.update(record)
    legacy = {k: meta[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated") if k in meta}
    legacy["messages"] = list(messages.values())
    target.write_text(json.dumps(legacy, indent=2) + "\n")


def run_qwen(binary: Path, home: Path, project: Path, url: str, *args: str) -> None:
    command = [str(binary), "--yolo", *args]
    done = subprocess.run(command, cwd=project, env=qwen_env(home, url), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"qwen {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")


def qwen_chats(home: Path) -> list[Path]:
    return sorted((home / ".qwen" / "projects").glob("*/chats/*.jsonl"))


def record_qwen(out: Path) -> None:
    binary = npm_cli(*QWEN)
    out.mkdir(parents=True, exist_ok=True)
    for name, compress in (("session-tools.jsonl", False), ("session-compressed.jsonl", True)):
        root = ROOT / "qwen" / name.split(".")[0]
        shutil.rmtree(root, ignore_errors=True)
        home, project = root / "home", root / "project"
        project.mkdir(parents=True)
        (project / "notes.txt").write_text("alpha\nbeta\n")
        qwen_settings(home)
        with FakeOpenAIChat(qwen_script(project)) as api:
            run_qwen(binary, home, project, api.url, "-p", "STEP-ONE: read notes, write and fix hello.py")
            run_qwen(binary, home, project, api.url, "--continue", "-p", "STEP-TWO: look around")
            if compress:
                qwen_settings(home, autoCompactThreshold=0.001)
                run_qwen(binary, home, project, api.url, "--continue", "-p", "STEP-THREE: carry on")
                qwen_settings(home)
                run_qwen(binary, home, project, api.url, "--continue", "-p", "STEP-FOUR: and again")
        [chat] = qwen_chats(home)
        shutil.copyfile(chat, out / name)


def record_openclaw(out: Path) -> None:
    import gzip
    import sqlite3

    binary = openclaw_cli()
    home = ROOT / "openclaw" / "home"
    shutil.rmtree(home, ignore_errors=True)
    with FakeOpenClawModel() as api:
        openclaw_config(home, api.url)
        for name in ("alpha", "beta", "gamma"):
            openclaw_turn(binary, home, api, "s1", f"prompt {name}: READ-{name}.txt")
    copy = ROOT / "openclaw" / "openclaw-agent.sqlite"
    copy.unlink(missing_ok=True)
    source = sqlite3.connect(home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    target = sqlite3.connect(copy)
    source.backup(target)
    target.execute("PRAGMA journal_mode = DELETE")
    target.close()
    source.close()
    (out / "openclaw").mkdir(exist_ok=True)
    (out / "openclaw" / "openclaw-agent.sqlite.gz").write_bytes(gzip.compress(copy.read_bytes(), 9, mtime=0))


if __name__ == "__main__":
    agents = sys.argv[1:] or ["gemini", "qwen", "openclaw"]
    if "gemini" in agents:
        record_gemini(HERE / "gemini-cli")
    if "qwen" in agents:
        record_qwen(HERE / "qwen-code")
    if "openclaw" in agents:
        record_openclaw(HERE)
