"""The planner's default token budgets, in a module of their own so the CLI can show them as option
defaults without importing the planner (every command's start-up reads them; only some plan)."""

from __future__ import annotations

DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000
# The summary's budget in tokens (--summary-budget): the whole stored summary (split-turn part and file tags
# included) fits in it. Chosen from measurement: docs/summaries.md ("The budget").
DEFAULT_SUMMARY_BUDGET = 2000
