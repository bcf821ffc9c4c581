"""A person's (and a program's) view of one session: counts, tree, compactions, context, problems."""

from __future__ import annotations

from collections import Counter

from batchcompact.core.context import build_session_context, convert_message, rules_of
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.session import Session
from batchcompact.core.tokens import estimate_context_tokens


def describe_branches(session: Session) -> list[JsonObject]:
    """Abandoned branches: leaves off the active path, their common ancestor with it, their size."""
    from batchcompact.core.branches import find_abandoned_branches, find_summarized_leaves

    assert session.tree is not None  # Session.__post_init__ builds it
    summarized = find_summarized_leaves(session.tree)
    return [
        {
            "leaf_id": branch.leaf.id,
            "leaf_line": branch.leaf.line,
            "common_ancestor_id": branch.ancestor.id if branch.ancestor is not None else None,
            "common_ancestor_line": branch.ancestor.line if branch.ancestor is not None else None,
            "entries": len(branch.entries),
            "tokens": branch.tokens,
            "summary_id": summarized[branch.leaf.id].id if branch.leaf.id in summarized else None,
        }
        for branch in find_abandoned_branches(session.tree)
    ]


def describe_session(session: Session, with_context: bool = False) -> JsonObject:
    tree = session.tree
    assert tree is not None
    types = Counter(e.type if isinstance(e.type, str) else "(no type)" for e in session.entries)
    roles = Counter(e.role if isinstance(e.role, str) else "(no role)" for e in session.entries if e.type == "message")
    path = tree.path() if session.entries else []
    context = build_session_context(path, rules_of(session))
    messages = [m.message for m in context.messages]
    # Usage recorded before the latest compaction measured the old context: ignore it.
    estimate = estimate_context_tokens(messages, usage_from=context.stale_count)
    compactions = [
        {
            "id": e.id,
            "line": e.line,
            "first_kept_entry_id": e.data.get("firstKeptEntryId"),
            "tokens_before": e.data.get("tokensBefore"),
            "from_hook": bool(e.data.get("fromHook")),
            # Codex's remote compaction: the provider encrypted the summary (its characters; else None)
            "encrypted_summary_chars": e.data.get("encryptedSummaryChars"),
        }
        for e in path
        if e.type == "compaction"
    ]
    context_messages = []
    for item in context.messages:
        llm = convert_message(item.message)
        if llm is None:
            continue
        record: JsonObject = {"role": llm.get("role"), "source_role": item.message.get("role"), "line": item.line}
        if with_context:
            record["message"] = llm
        context_messages.append(record)
    return {
        "path": session.path,
        "format": session.agent,
        "session_id": session.session_id,
        # pi: the session format version; Claude Code / Codex: the version of the agent that wrote it.
        "version": session.version if session.version is not None else _agent_version(session.header),
        "header": session.header,
        "entries": len(session.entries),
        "entry_types": dict(types),
        "message_roles": {str(k): v for k, v in roles.items()},
        "leaf_id": tree.leaf.id if tree.leaf is not None else None,
        "leaf_line": tree.leaf.line if tree.leaf is not None else None,
        "path_entries": len(path),
        "branches": describe_branches(session),
        "compactions": compactions,
        "model": context.model,
        "thinking_level": context.thinking_level,
        "context": {
            "messages": len(context_messages),
            "tokens": estimate.tokens,
            "usage_tokens": estimate.usage_tokens,
            "trailing_tokens": estimate.trailing_tokens,
        },
        "context_messages": context_messages,
        "problems": [p.as_dict() for p in session.problems],
        "compactable": session.compactable,
    }


def _agent_version(header: JsonObject | None) -> str | None:
    """Claude Code's `version` or Codex's `cli_version` from a transcript's header."""
    header = header or {}
    value = header.get("version") or header.get("cli_version")
    return str(value) if value else None
