"""A HOME holding every agent's folders, made from ../shared/fixtures/agents/ laid out where each agent
keeps its files (discover.py, ../shared/reference/agents.md). Used by the discovery, report and ccusage
parity tests; a new agent adds its lines to `LAYOUT`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

# agent -> (source under fixtures/agents, destination under HOME); folders are merged.
LAYOUT: dict[str, list[tuple[str, str]]] = {
    "codex": [
        ("codex-edge-cases/ccusage-subagent-replay/sessions", ".codex/sessions/subagent-replay"),
        ("codex-edge-cases/ccusage-branch-copy-original-timestamps/sessions", ".codex/sessions/branch-copy"),
    ],
    "opencode": [
        ("opencode/ccusage-db-vs-json/opencode.db", ".local/share/opencode/opencode.db"),
        ("opencode/ccusage-db-vs-json/storage", ".local/share/opencode/storage"),
        ("opencode/ccusage-channel-db/opencode-beta.db", ".local/share/opencode/opencode-beta.db"),
        ("opencode/tokscale-basic/storage", ".local/share/opencode/storage"),
        ("opencode/agent-sessions-storage-v2/storage", ".local/share/opencode/storage"),
    ],
    "kilo": [("kilo/.local/share/kilo", ".local/share/kilo")],
    "gemini": [("gemini/tmp", ".gemini/tmp")],
    "qwen": [("qwen/projects", ".qwen/projects")],
    "amp": [("amp/threads", ".local/share/amp/threads")],
    "droid": [("droid/sessions", ".factory/sessions")],
    "goose": [("goose/data/sessions", ".local/share/goose/sessions")],
    "copilot": [("copilot/otel", ".copilot/otel"), ("copilot/session-state", ".copilot/session-state")],
    "kimi": [("kimi/kimi-cli-legacy-wire/.kimi", ".kimi")],
    "codebuff": [("codebuff/.config", ".config")],
    "hermes": [("hermes/.hermes", ".hermes")],
    "openclaw": [("openclaw/.openclaw", ".openclaw")],
}

# Variables that would point discovery away from the fake HOME.
AGENT_ENV = (
    "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "PI_AGENT_DIR", "ATOMIC_CODING_AGENT_DIR",
    "INDUSAGI_CODING_AGENT_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "OPENCODE_DATA_DIR", "KILO_DATA_DIR",
    "GEMINI_DATA_DIR", "QWEN_DATA_DIR", "AMP_DATA_DIR", "DROID_SESSIONS_DIR", "GOOSE_PATH_ROOT",
    "COPILOT_OTEL_FILE_EXPORTER_PATH", "KIMI_DATA_DIR", "KIMI_SHARE_DIR", "KIMI_CODE_HOME", "CODEBUFF_DATA_DIR",
    "HERMES_HOME", "OPENCLAW_DIR",
)


def build_home(agents_fixtures: Path, home: Path, agents=None) -> dict[str, list[Path]]:
    """Copy the fixtures of `agents` (default: all) into `home`; returns agent -> the paths made."""
    made: dict[str, list[Path]] = {}
    for agent, pairs in LAYOUT.items():
        if agents is not None and agent not in agents:
            continue
        for source, destination in pairs:
            src, dst = agents_fixtures / source, home / destination
            if not src.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy2(src, dst)
            made.setdefault(agent, []).append(dst)
    return made


def clear_agent_env(monkeypatch) -> None:
    for name in AGENT_ENV:
        monkeypatch.delenv(name, raising=False)
