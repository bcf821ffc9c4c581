"""What batchcompact appends to an OpenClaw session: pi's `compaction` entry, the entry OpenClaw's own
`appendCompaction` writes (`summary`, `firstKeptEntryId`, `tokensBefore`, `details`, `fromHook`), parent
= the active leaf. OpenClaw rebuilds the context from it as pi does (its `buildSessionContext`: the
summary wrapped in pi's `<summary>` text, then the kept entries from `firstKeptEntryId`). In a database
it is one more event row (store.py); in a JSONL transcript one more line. `verify` is pi's."""

from __future__ import annotations

from batchcompact.adapters.pi.write import build_compaction, verify

__all__ = ["build_compaction", "verify"]
