"""Re-record the Gemini CLI, Qwen Code, OpenClaw, Cline and Mistral Vibe sessions in this folder with the real CLIs.

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
- copilot-cli/session-tools.jsonl: `copilot -p` with view, create, edit, bash, then `copilot --continue -p`
  with glob, grep, bash (Copilot CLI 1.0.102 offline, a bring-your-own-key provider; the session's
  `session-state/<id>/events.jsonl`).
- copilot-cli/session-compacted.jsonl: the same, then `copilot --continue -p /compact` (Copilot's own
  `session.compaction_start` / `session.compaction_complete`), then a third prompt with a view call.
- copilot-cli/session-background.jsonl: `COPILOT_PROVIDER_MAX_PROMPT_TOKENS=40000` and four bash calls
  of ~11,500 tokens of output each: Copilot's own background compaction (`trigger: threshold`) starts
  when its context passes 80% and completes while the turn goes on.
- copilot-cli/session-subagent.jsonl: `copilot -p` whose model delegates with the `task` tool; the
  sub-agent (its events carry `agentId`) reads notes.txt with `view`.
- opencode/compacted.db: `opencode run` with read, write, edit, bash, then `--continue` twice (read,
  bash; a plain answer), then OpenCode's own compaction (`opencode serve` + `POST /session/<id>/summarize`,
  what /compact calls), then a fourth prompt; the database checkpointed and vacuumed.
- openclaw/openclaw-agent.sqlite.gz: OpenClaw's agent database after `openclaw agent --local --agent main
  --session-id s1 -m …` three times ("prompt alpha: READ-alpha.txt", beta, gamma: each one `read` call
  of a workspace file, then a text reply), copied with SQLite's backup (journal mode DELETE) and gzipped.
- cline/<session>/: `cline PROMPT` twice (two sessions) through Cline's OpenAI-compatible provider
  (`cline auth -p openai -b URL`; cline 3.0.65), each session's `<id>.messages.json` and the `<id>.json`
  beside it as the CLI left them in `~/.cline/data/sessions/` (tests/report_judges.py `record_cline`).
- vibe/.vibe/: Mistral Vibe (mistral-vibe 2.26.1 from PyPI, tests/report_judges.py `record_vibe`) through an
  OpenAI-compatible provider: `vibe -p` then `vibe --continue -p` (the Unified Harness, the default:
  `logs/session/unified/<id>/`), then the same with `--legacy-harness` (`logs/session/session_<ts>_<id>/`);
  the session folders as the CLI left them and its config.toml (the provider's URL replaced by a dead one).
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
    COPILOT,
    GEMINI,
    QWEN,
    FakeGemini,
    FakeOpenAIChat,
    FakeOpenAIChatCounted,
    FakeOpenClawModel,
    copilot_logs,
    copilot_script,
    gemini_env,
    gemini_script,
    gemini_settings,
    npm_cli,
    openclaw_cli,
    openclaw_config,
    openclaw_turn,
    opencode_compact,
    opencode_script,
    opencode_setup,
    qwen_env,
    qwen_script,
    qwen_settings,
    run_copilot,
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


def copilot(binary: Path, home: Path, project: Path, url: str, *args: str, **env: str) -> None:
    done = run_copilot(binary, home, project, url, *args, env=env)
    if done.returncode != 0:
        raise SystemExit(f"copilot {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")


def record_copilot(out: Path) -> None:
    binary = npm_cli(*COPILOT)
    out.mkdir(parents=True, exist_ok=True)
    for name, compact in (("session-tools.jsonl", False), ("session-compacted.jsonl", True)):
        root = ROOT / "copilot" / name.split(".")[0]
        shutil.rmtree(root, ignore_errors=True)
        home, project = root / "home", root / "project"
        project.mkdir(parents=True)
        home.mkdir()
        (project / "notes.txt").write_text("alpha\nbeta\n")
        script = {**copilot_script(project), "STEP-THREE": [("view", {"path": str(project / "hello.py")})]}
        with FakeOpenAIChat(script) as api:
            copilot(binary, home, project, api.url, "-p", "STEP-ONE: read notes, write and fix hello.py")
            copilot(binary, home, project, api.url, "--continue", "-p", "STEP-TWO: look around")
            if compact:
                copilot(binary, home, project, api.url, "--continue", "-p", "/compact")
                copilot(binary, home, project, api.url, "--continue", "-p", "STEP-THREE: carry on")
        [log] = copilot_logs(home)
        shutil.copyfile(log, out / name)
    root = ROOT / "copilot" / "session-subagent"
    shutil.rmtree(root, ignore_errors=True)
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    home.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\n")
    task = {"description": "look at notes", "prompt": "SUBTASK: read the notes file", "agent_type": "general-purpose",
            "name": "reader"}
    with FakeOpenAIChat({"STEP-SUB": [("task", task)],
                         "SUBTASK": [("view", {"path": str(project / "notes.txt")})]}) as api:
        copilot(binary, home, project, api.url, "-p", "STEP-SUB: delegate the reading")
    [log] = copilot_logs(home)
    shutil.copyfile(log, out / "session-subagent.jsonl")
    record_copilot_background(binary, out / "session-background.jsonl")


def record_copilot_background(binary: Path, target: Path) -> None:
    """A prompt limit of 40,000 tokens and tool outputs of ~11,500 tokens each: Copilot compacts in the
    background once its context passes 80% of the limit, while the turn goes on."""
    root = ROOT / "copilot" / "session-background"
    shutil.rmtree(root, ignore_errors=True)
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    home.mkdir()
    big = [("bash", {"command": f"python3 -c \"print(' '.join('w{i}x' + str(n) for n in range(2500)))\"",
                     "description": f"big output {i}"}) for i in range(4)]
    with FakeOpenAIChatCounted({"STEP-BIG": big}) as api:
        copilot(binary, home, project, api.url, "-p", "STEP-BIG: print a lot", COPILOT_PROVIDER_MAX_PROMPT_TOKENS="40000")
    [log] = copilot_logs(home)
    shutil.copyfile(log, target)


def record_opencode(out: Path) -> None:
    import sqlite3

    from report_judges import OPENCODE

    binary = npm_cli(*OPENCODE)
    root = ROOT / "opencode"
    shutil.rmtree(root, ignore_errors=True)
    home, project = root / "home", root / "project"
    project.mkdir(parents=True)
    home.mkdir()
    (project / "notes.txt").write_text("remember: the port is 8123\n")

    def run(env: dict, *args: str) -> None:
        done = subprocess.run([str(binary), "run", *args], cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)
        if done.returncode != 0:
            raise SystemExit(f"opencode run {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")

    with FakeOpenAIChat(opencode_script(project)) as api:
        env = opencode_setup(home, project, api.url)
        run(env, "STEP-ONE read the notes, write and fix hello.py")
        run(env, "--continue", "STEP-TWO look again")
        run(env, "--continue", "STEP-THREE just answer")
        db = home / ".local/share/opencode/opencode.db"
        [(session_id,)] = sqlite3.connect(db).execute("SELECT id FROM session").fetchall()
        opencode_compact(binary, project, env, session_id)
        run(env, "--continue", "STEP-FOUR after the compaction")
    out.mkdir(parents=True, exist_ok=True)
    target = out / "compacted.db"
    target.unlink(missing_ok=True)
    with sqlite3.connect(db) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    conn = sqlite3.connect(target)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("VACUUM")
    conn.close()


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


def record_cline_sessions(out: Path) -> None:
    from report_judges import record_cline

    root = ROOT / "cline"
    shutil.rmtree(root, ignore_errors=True)
    home, _ = record_cline(root, ("JUDGE-ONE first prompt", "JUDGE-TWO second prompt"))
    shutil.rmtree(out, ignore_errors=True)
    for session in sorted((home / ".cline" / "data" / "sessions").iterdir()):
        shutil.copytree(session, out / session.name)


VIBE_RUNS = (("JUDGE-ONE say hi", ()), ("JUDGE-TWO say hi again", ("--continue",)),
             ("JUDGE-THREE legacy", ("--legacy-harness",)), ("JUDGE-FOUR legacy again", ("--legacy-harness", "--continue")))


def record_vibe_sessions(out: Path) -> None:
    import re

    from report_judges import record_vibe

    root = ROOT / "vibe"
    shutil.rmtree(root, ignore_errors=True)
    home, _ = record_vibe(root, VIBE_RUNS)
    shutil.rmtree(out, ignore_errors=True)
    logs = home / ".vibe" / "logs" / "session"
    for session in sorted(p for p in [*logs.glob("session_*"), *logs.glob("unified/*")] if p.is_dir()):
        shutil.copytree(session, out / ".vibe" / session.relative_to(home / ".vibe"))
    config = (home / ".vibe" / "config.toml").read_text()
    (out / ".vibe" / "config.toml").write_text(re.sub(r'api_base = "[^"]*"', 'api_base = "http://127.0.0.1:9/v1"', config))


if __name__ == "__main__":
    agents = sys.argv[1:] or ["gemini", "qwen", "copilot", "opencode", "openclaw", "cline", "vibe"]
    if "gemini" in agents:
        record_gemini(HERE / "gemini-cli")
    if "qwen" in agents:
        record_qwen(HERE / "qwen-code")
    if "copilot" in agents:
        record_copilot(HERE / "copilot-cli")
    if "opencode" in agents:
        record_opencode(HERE / "opencode")
    if "openclaw" in agents:
        record_openclaw(HERE)
    if "cline" in agents:
        record_cline_sessions(HERE / "cline")
    if "vibe" in agents:
        record_vibe_sessions(HERE / "vibe")
