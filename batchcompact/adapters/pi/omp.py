"""oh-my-pi (can1357/oh-my-pi, npm @oh-my-pi/pi-coding-agent): where its sessions differ from pi's, by its
own code (src/session/session-context.ts, session-title-slot.ts; README.md beside this file, "oh-my-pi").

- Its files may start with a fixed-width title slot line (`{"type":"title","v":1,...}`) before the header,
  which it rewrites in place when the title changes; the reader passes over it and the writers keep it.
- It rebuilds a context with less in it than pi's: `OMP_RULES`.
A session is oh-my-pi's when it has the title slot, lies under an oh-my-pi home (`.omp/agent/...`), or holds
a `model_change` entry in oh-my-pi's shape (`{"model": "provider/id", "role"?}`, never pi's `provider` +
`modelId`), as a session oh-my-pi wrote and someone moved elsewhere does, or a compaction batchcompact wrote
under oh-my-pi's rules (`"contextRules": "oh-my-pi"` on the entry: the file written under `--output-dir` is no
longer under `.omp`, and is still rebuilt as oh-my-pi rebuilds it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.core.context import ContextRules
from batchcompact.core.jsontypes import JsonObject

if TYPE_CHECKING:
    from collections.abc import Iterable

    from batchcompact.core.entries import Entry
    from batchcompact.core.session import Session

OMP_RULES = ContextRules(
    replay_only_clean_turns=True,
    # PREWALK_PLAN_MESSAGE_TYPE, VIBE_MODE_CONTEXT_MESSAGE_TYPE (session/messages.ts)
    hidden_custom_types=frozenset({"prewalk-plan", "vibe-mode-context"}),
    keep_after_custom_type="interrupted-thinking",  # INTERRUPTED_THINKING_MESSAGE_TYPE
    reset_boundary="reset_boundary",  # what `/clear` appends
)
TITLE_SLOT = "title"  # SESSION_TITLE_SLOT_ENTRY_TYPE
HOME = ".omp"  # CONFIG_DIR_NAME (pi-utils dirs.ts; PI_CONFIG_DIR renames it)


# The field a compaction written under oh-my-pi's rules carries, and its value (pi and oh-my-pi ignore it).
RULES_FIELD = "contextRules"
RULES_NAME = "oh-my-pi"


def written_under_omp_rules(compactions: Iterable[Entry]) -> bool:
    """A compaction entry batchcompact wrote under oh-my-pi's rules is among `compactions`."""
    return any(entry.data.get(RULES_FIELD) == RULES_NAME for entry in compactions)


def is_title_slot(obj: JsonObject) -> bool:
    return obj.get("type") == TITLE_SLOT and obj.get("v") == 1


def has_omp_entries(entries: list[Entry]) -> bool:
    """A `model_change` entry as oh-my-pi writes it (session-entries.ts `ModelChangeEntry`): a string
    `model` and no pi `modelId`."""
    return any(e.type == "model_change" and isinstance(e.data.get("model"), str) and "modelId" not in e.data
               for e in entries)


def under_omp_home(name: str) -> bool:
    """A file under an oh-my-pi home (`.omp/agent/...`): one of its sessions, title slot or not."""
    parts = Path(name).parts
    return any(part == HOME and following == "agent" for part, following in zip(parts, parts[1:], strict=False))


def is_omp(session: Session) -> bool:
    return session.context_rules == OMP_RULES


# ---- its compaction settings (config/settings.ts, settings-schema.ts) ----------------------------------
# oh-my-pi's compaction keys -> planner settings; a threshold <= 0 (its default -1) is unset
OMP_SETTINGS_KEYS = {"reserveTokens": "reserve_tokens", "keepRecentTokens": "keep_recent_tokens",
                     "thresholdPercent": "threshold_percent", "thresholdTokens": "threshold_tokens"}


def agent_dir(session_path: str) -> Path:
    """The oh-my-pi agent folder a session belongs to: the `.omp/agent` above it, else `~/.omp/agent`."""
    parts = Path(session_path).absolute().parts
    for index in range(len(parts) - 1):
        if parts[index] == HOME and parts[index + 1] == "agent":
            return Path(*parts[: index + 2])
    return Path.home() / HOME / "agent"


def _scalar(text: str) -> str | int | float | bool | None:
    """A YAML scalar as oh-my-pi's config.yml holds one (numbers, booleans, null, plain or quoted strings)."""
    text = text.split(" #", 1)[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~", ""):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_yaml_compaction(path: Path) -> JsonObject:
    """The `compaction` keys of an oh-my-pi config.yml: its block of `key: value` scalars (or dotted
    `compaction.key: value` lines). Only that much YAML is read: no dependency for a settings file that is
    a convenience; anything else in the file is passed over."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return {}
    out: JsonObject = {}
    inside = False
    indent = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            inside = line.split(":", 1)[0].strip() == "compaction" and line.split(":", 1)[1].strip() == ""
            indent = None
            key, _, value = line.partition(":")
            if key.startswith("compaction."):
                out[key[len("compaction."):].strip()] = _scalar(value)
            continue
        if inside:
            indent = depth if indent is None else indent
            if depth == indent and ":" in line:
                key, _, value = line.strip().partition(":")
                if value.strip():
                    out[key.strip()] = _scalar(value)
    return out


def _read_json_compaction(path: Path) -> JsonObject:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeError):
        return {}
    found = data.get("compaction") if isinstance(data, dict) else None
    return found if isinstance(found, dict) else {}


def omp_settings(session_path: str, cwd: str | None) -> tuple[JsonObject, list[str], bool]:
    """oh-my-pi's compaction settings for a session: (planner values, files that set any, whether the
    reserve was set). Global `config.yml` (or `config.yaml`; a legacy `settings.json` when neither exists,
    which oh-my-pi migrates) in the session's agent folder, then the project's `.omp/settings.json` and
    `.omp/config.yml` under its cwd (the project wins)."""
    home = agent_dir(session_path)
    candidates = [home / "config.yml"] if (home / "config.yml").exists() else [home / "config.yaml"]
    if not candidates[0].exists():
        candidates = [home / "settings.json"]
    if cwd:
        candidates += [Path(cwd) / HOME / "settings.json", Path(cwd) / HOME / "config.yml"]
    values: JsonObject = {}
    used: list[str] = []
    reserve_set = False
    for path in candidates:
        compaction = _read_json_compaction(path) if path.suffix == ".json" else read_yaml_compaction(path)
        found = False
        for key, name in OMP_SETTINGS_KEYS.items():
            value = compaction.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            found = True
            if name.startswith("threshold"):
                values[name] = (float(value) if name == "threshold_percent" else int(value)) if value > 0 else None
            elif value >= 0:
                values[name] = int(value)
                reserve_set = reserve_set or name == "reserve_tokens"
        if isinstance(compaction.get("enabled"), bool):
            values["enabled"] = compaction["enabled"]
            found = True
        if compaction.get("strategy") == "off":
            values["enabled"] = False
            found = True
        if found:
            used.append(str(path))
    return values, used, reserve_set
