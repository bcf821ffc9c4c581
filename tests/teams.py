"""Small archives for the team reports' tests (tests/test_report_teams.py): Claude Code and Codex sessions
with git branches, in two projects, as the agents write them."""

from __future__ import annotations

import json
from pathlib import Path

SONNET = "claude-sonnet-4-5-20250929"


def write(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    return path


def claude_line(n: int, when: str, branch: str | None, inputs: int, output: int, *, session: str = "s-claude",
                cwd: str = "/home/ana/src/shop") -> dict:
    line = {"parentUuid": f"u{n - 1}" if n > 1 else None, "isSidechain": False, "userType": "external",
            "cwd": cwd, "sessionId": session, "version": "2.0.14", "type": "assistant", "uuid": f"u{n}",
            "timestamp": when, "requestId": f"req_{session}_{n}",
            "message": {"id": f"msg_{session}_{n}", "type": "message", "role": "assistant", "model": SONNET,
                        "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
                        "usage": {"input_tokens": inputs, "output_tokens": output,
                                  "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0}}}
    if branch is not None:
        line["gitBranch"] = branch
    return line


def codex_lines(thread: str, day: str, branch: str | None, *, cwd: str = "/home/bo/code/shop-api",
                provider: str = "openai") -> list[dict]:
    meta = {"id": thread, "timestamp": f"{day}T09:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs",
            "cli_version": "0.46.0", "model_provider": provider}
    if branch is not None:
        meta["git"] = {"commit_hash": "1cdfa7b17410e00cddbb7a4347336af2c6f80ee0", "branch": branch,
                       "repository_url": "https://example.invalid/shop-api.git"}

    def usage(inp, cached, out):
        return {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
                "reasoning_output_tokens": 0, "total_tokens": inp + out}

    def count(when, last, total):
        return {"timestamp": when, "type": "event_msg",
                "payload": {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": total},
                            "rate_limits": None}}

    return [
        {"timestamp": f"{day}T09:00:00.000Z", "type": "session_meta", "payload": meta},
        {"timestamp": f"{day}T09:00:00.000Z", "type": "turn_context", "payload": {"model": "gpt-5", "cwd": cwd}},
        count(f"{day}T09:01:00.000Z", usage(3000, 1000, 300), usage(3000, 1000, 300)),
        count(f"{day}T09:02:00.000Z", usage(4000, 2000, 400), usage(7000, 3000, 700)),
    ]


def write_home(home: Path, *, extra_claude: bool = False) -> Path:
    """One machine's agent folders under `home`: a Claude Code session in `/home/ana/src/shop` on `main`
    and `feature/login` (and a line recorded outside any repository: no branch), a Codex session in
    `/home/bo/code/shop-api` on `fix/api`. With `extra_claude`, a second Claude session of this machine's own."""
    claude = home / ".claude" / "projects" / "-home-ana-src-shop"
    write(claude / "s-claude.jsonl", [
        claude_line(1, "2026-03-01T10:00:00.000Z", "main", 100, 10),
        claude_line(2, "2026-03-02T10:00:00.000Z", "feature/login", 200, 20),
        claude_line(3, "2026-03-02T11:00:00.000Z", "feature/login", 300, 30),
        claude_line(4, "2026-03-03T10:00:00.000Z", "", 400, 40),
    ])
    if extra_claude:
        write(claude / "s-other.jsonl", [claude_line(1, "2026-03-04T10:00:00.000Z", "main", 50, 5,
                                                      session="s-other")])
    write(home / ".codex" / "sessions" / "2026" / "03" / "02" / "rollout-2026-03-02T09-00-00-t-codex.jsonl",
           codex_lines("t-codex", "2026-03-02", "fix/api"))
    return home
