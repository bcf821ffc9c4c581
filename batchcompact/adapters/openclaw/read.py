"""OpenClaw sessions into the session model.

Two storages, one format (pi's session lines, header `version` 4):
- 2026.9+: `agents/<agent>/agent/openclaw-agent.sqlite`, a session addressed as `<database>#<session id>`
  (store.py reads its events in `seq` order, as OpenClaw's loader does);
- older releases: `agents/<agent>/sessions/<session id>.jsonl`, read with pi's reader. Archived copies
  (`<id>.jsonl.reset.<time>`, `<id>.jsonl.deleted.<time>`: `/new`, `/reset` and deleted sessions) are
  read (validate, show, report) but never compacted: OpenClaw does not resume them.
A session with OpenClaw's own `reset` boundaries or `leaf` control entries (its context and active path
follow rules pi's do not have) is read but not compacted either, said so.

The window and the compaction settings come from the user's `openclaw.json` (settings.py).
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.adapters.openclaw.settings import config_window
from batchcompact.core.session import Session

ARCHIVED = (".jsonl.reset.", ".jsonl.deleted.")


def read(path: str | Path) -> Session:
    """Any OpenClaw session: one in a database (`<db>#<id>`) or a JSONL transcript."""
    from batchcompact.adapters.openclaw import store

    if Path(path).name == store.DATABASE:  # the database itself: its problem, or which sessions to name
        from batchcompact.core.words import counted
        from batchcompact.errors import SessionReadError

        count = len(store.session_ids(path))
        raise SessionReadError(f"an OpenClaw database of {counted(count, 'session')}; name one as {path}#<session id>")
    if store.split_session_path(path) is not None:
        session = store.read_session(path)
    else:
        from batchcompact.adapters.pi.read import read_pi_session

        session = read_pi_session(path)
        session.agent = "openclaw"
        name = Path(path).name
        if any(mark in name for mark in ARCHIVED):
            kind = "reset" if ".jsonl.reset." in name else "deleted"
            session.not_writable = (f"an archived OpenClaw session (.{kind} copy): OpenClaw does not resume it, "
                                    "so it is not compacted")
    kinds = {e.type for e in session.entries}
    if "leaf" in kinds and session.not_writable is None:
        session.not_writable = ("OpenClaw leaf-control entries choose its active path, which batchcompact does not "
                                "follow; not compacted")
    elif "reset" in kinds and session.not_writable is None:
        session.not_writable = ("an OpenClaw reset boundary in the session: OpenClaw rebuilds its context across it "
                                "in its own way; not compacted")
    window = config_window(path, session)
    if window is not None:
        session.context_window = window
    return session
