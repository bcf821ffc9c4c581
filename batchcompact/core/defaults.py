"""The planner's default token budgets, in a module of their own so the CLI can show them as option
defaults without importing the planner (every command's start-up reads them; only some plan)."""

from __future__ import annotations

DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000
