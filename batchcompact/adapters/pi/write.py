"""What batchcompact appends to a pi session to compact it, and what it writes for a handoff (reference sections
1, 2, 6; docs/compaction.md): `build_compaction` one v3 compaction entry, `verify` the written file checked against
the original; `build_handoff` a new session holding only the handoff document, `verify_handoff` its check. All
pure but the `verify`s, which look only at sessions already read (read.py). OpenClaw's writer is this one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchcompact.core.entries import ERROR
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import Session

if TYPE_CHECKING:
    from batchcompact.core.planner import CompactionPlan


def build_compaction(session: Session, plan: CompactionPlan, summary: str, *, usage: JsonObject | None,
                     now_iso: str, from_hook: bool = False) -> list[JsonObject]:
    """The lines to append to a pi session for `plan` (pure): one v3 compaction entry."""
    from batchcompact.core.apply import build_compaction_entry

    entry = build_compaction_entry(
        plan,
        summary,
        existing_ids=session.tree.by_id if session.tree is not None else [e.id for e in session.entries if e.id],
        session_id=session.session_id or "",
        timestamp=now_iso,
        usage=usage,
        from_hook=from_hook,
    )
    from batchcompact.adapters.pi.omp import RULES_FIELD, RULES_NAME, is_omp

    if is_omp(session):  # the rules it was planned under, kept with it: `show` of the copy rebuilds the same
        entry[RULES_FIELD] = RULES_NAME
    return [entry]


def verify(original: Session, written: Session, plan: CompactionPlan) -> list[str]:
    """What is wrong with a written pi file (empty when it is good)."""
    from batchcompact.core.context import written_context

    # every problem the original did not have: a warning the reader lets pass in an input (a line pi skips)
    # is a damaged line in what we wrote
    known = {(p.line, p.message) for p in original.problems}
    problems = [str(p) for p in written.problems if p.severity == ERROR or (p.line, p.message) not in known]
    count = len(original.entries)
    if len(written.entries) <= count:
        problems.append("no new entry was written")
        return problems
    pruned = {a.entry_id for a in getattr(plan, "prune", ())}
    for before, after in zip(original.entries, written.entries[:count], strict=True):
        if before is after:  # an appended file read back shares the original's entries (read_pi_appended)
            continue
        if before.id in pruned:
            if before.data.get("message", {}).get("toolCallId") != after.data.get("message", {}).get("toolCallId"):
                problems.append(f"pruned entry on line {before.line} is not the same tool result")
            continue
        if before.data != after.data:
            problems.append(f"original entry on line {before.line} changed")
            break
    try:
        from batchcompact.adapters.pi.schema import validate_entry

        for entry in written.entries[count:]:
            for message in validate_entry(entry.data):
                problems.append(f"line {entry.line}: schema: {message}")
    except ImportError:  # pragma: no cover - schemas ship with the package
        problems.append("schemas are not installed")
    path = written.path_entries()
    if not path or path[-1].type != "compaction":
        problems.append("the active leaf is not the new compaction")
        return problems
    context = written_context(written).messages
    if not context or context[0].message.get("role") != "compactionSummary":
        problems.append("the rebuilt context does not start with the summary")
    elif len(context) > 1 and context[1].message.get("role") == "toolResult":
        problems.append("the kept region starts with a tool result separated from its call")
    return problems


def build_handoff(session: Session, plan: CompactionPlan, document: str, *, usage: JsonObject | None, now_iso: str,
                  parent: str) -> tuple[str, list[JsonObject]]:
    """A new session handed off from `session` (pure): its file name and lines. The header names the original
    in `parentSession`; one `custom_message` (oh-my-pi's `customType: "handoff"`, shown, attributed to the
    agent) holds the document, with the call's `usage` as a compaction entry records it; nothing else of the
    old history. The name is pi's and oh-my-pi's (`<timestamp>_<id>.jsonl`); the id is the same for the
    same session and leaf (`core/handoff.py`), which is how a rerun finds it."""
    from batchcompact.core.handoff import handoff_content, handoff_session_id

    new_id = handoff_session_id(session.session_id or session.path, plan.leaf_id)
    header: JsonObject = {"type": "session", "version": 3, "id": new_id, "timestamp": now_iso,
                              "cwd": (session.header or {}).get("cwd") or "", "parentSession": parent}
    message: JsonObject = {"type": "custom_message", "id": new_id[-8:], "parentId": None, "timestamp": now_iso,
                               "customType": "handoff", "content": handoff_content(document), "display": True,
                               "attribution": "agent",
                               "details": {"readFiles": list(plan.read_files), "modifiedFiles": list(plan.modified_files),
                                           "tokensBefore": plan.tokens_before}}
    if usage is not None:
        message["usage"] = usage
    name = now_iso.replace(":", "-").replace(".", "-") + f"_{new_id}.jsonl"
    return name, [header, message]


def handoff_file_suffix(session: Session, plan: CompactionPlan) -> str:
    """How the name of `session`'s handoff file for `plan` ends (whatever its timestamp)."""
    from batchcompact.core.handoff import handoff_session_id

    return f"_{handoff_session_id(session.session_id or session.path, plan.leaf_id)}.jsonl"


def verify_handoff(written: Session, parent: str, document: str) -> list[str]:
    """What is wrong with a written handoff session (empty when it is good): read as a pi session with no
    problem, its header naming the original, and a context of exactly the document."""
    from batchcompact.core.context import session_context
    from batchcompact.core.handoff import handoff_content

    problems = [str(p) for p in written.problems]
    if (written.header or {}).get("parentSession") != parent:
        problems.append("the header does not name the original session")
    messages = [m.message for m in session_context(written).messages]
    if len(messages) != 1 or messages[0].get("customType") != "handoff" \
            or messages[0].get("content") != handoff_content(document):
        problems.append("the new session's context is not the handoff document alone")
    return problems
