"""Codex texts shared by the rollout reader (`codex.py`) and writer (`codex_write.py`), so neither
imports the other's module at load time."""

from __future__ import annotations

# codex-rs/core/templates/compact/summary_prefix.md: the summary user message of a local compaction is
# this prefix, a newline, then the summary.
SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. Use this to build "
    "on the work that has already been done and avoid duplicating work. Here is the summary produced by the "
    "other language model, use the information in this summary to assist with your own analysis:"
)
