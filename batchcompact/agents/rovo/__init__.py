"""Rovo Dev CLI (Atlassian): `$ROVO_DATA_DIR` or `~/.rovodev`, its `sessions/<session>/session_context.json`,
and the folder `sessions.persistenceDir` in its `config.yml` moves them to. Report only (report.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from batchcompact.agents.spec import Agent, Files, Place, expand_home


def persistence_dir(config: str) -> str | None:
    """`sessions.persistenceDir` of a Rovo Dev `config.yml` (the two keys it needs, without a YAML parser):
    the first `persistenceDir:` indented under the top-level `sessions:` block."""
    in_sessions = False
    for line in config.splitlines():
        text = line.lstrip()
        if not text or text.startswith("#"):
            continue
        if len(line) == len(text):  # a top-level key
            rest = text.removeprefix("sessions:")
            in_sessions = rest != text and (not rest.strip() or rest.strip().startswith("#"))
            continue
        if in_sessions and text.startswith("persistenceDir:"):
            value = text.removeprefix("persistenceDir:").split(" #")[0].strip().strip("\"'")
            return value or None
    return None


@dataclass(frozen=True)
class RovoPlace(Place):
    """`~/.rovodev/sessions` (or the `ROVO_DATA_DIR` folders, whole), plus each folder's configured
    `sessions.persistenceDir` when it lies outside them."""

    def folders(self, env: Mapping[str, str], home: Path) -> list[tuple[Path, str]]:
        out = super().folders(env, home)
        for agent_dir, _ in self.agent_dirs(env, home):
            try:
                configured = persistence_dir((agent_dir / "config.yml").read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            if configured is None:
                continue
            moved = expand_home(configured, home)
            if not any(moved == folder or folder in moved.parents for folder, _ in out):
                out.append((moved, "sessions.persistenceDir"))
        return out


AGENT = Agent(
    name="rovo",
    display_name="Rovo Dev",
    # ~/.rovodev/sessions; a folder ROVO_DATA_DIR names is searched whole, as ccusage does
    places=(RovoPlace(defaults=("~/.rovodev",), env="ROVO_DATA_DIR", env_list=True, env_sessions=("",)),),
    suffixes=(),
    files=(Files(("session_context.json",)),),
    usage="batchcompact.adapters.rovo.report:extract_rovo",
)
