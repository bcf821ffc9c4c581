"""oh-my-pi (can1357/oh-my-pi, npm @oh-my-pi/pi-coding-agent): where its sessions differ from pi's, by its
own code (src/session/session-context.ts, session-title-slot.ts; docs/formats.md, "oh-my-pi").

- Its files may start with a fixed-width title slot line (`{"type":"title","v":1,...}`) before the header,
  which it rewrites in place when the title changes; the reader passes over it and the writers keep it.
- It rebuilds a context with less in it than pi's: `OMP_RULES`.
A session is oh-my-pi's when it has the title slot, or lies under an oh-my-pi home (`.omp/agent/...`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from batchcompact.core.context import CONTEXT_RULES, ContextRules

OMP_RULES = ContextRules(
    replay_only_clean_turns=True,
    # PREWALK_PLAN_MESSAGE_TYPE, VIBE_MODE_CONTEXT_MESSAGE_TYPE (session/messages.ts)
    hidden_custom_types=frozenset({"prewalk-plan", "vibe-mode-context"}),
    keep_after_custom_type="interrupted-thinking",  # INTERRUPTED_THINKING_MESSAGE_TYPE
    reset_boundary="reset_boundary",  # what `/clear` appends
)
TITLE_SLOT = "title"  # SESSION_TITLE_SLOT_ENTRY_TYPE
HOME = ".omp"  # CONFIG_DIR_NAME (pi-utils dirs.ts; PI_CONFIG_DIR renames it)


def is_title_slot(obj: dict[str, Any]) -> bool:
    return obj.get("type") == TITLE_SLOT and obj.get("v") == 1


def under_omp_home(name: str) -> bool:
    """A file under an oh-my-pi home (`.omp/agent/...`): one of its sessions, title slot or not."""
    parts = Path(name).parts
    return any(part == HOME and following == "agent" for part, following in zip(parts, parts[1:], strict=False))


def is_omp(session: Any) -> bool:
    return session.extra.get(CONTEXT_RULES) == OMP_RULES
