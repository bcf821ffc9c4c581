"""Claude Code transcripts (reference transcripts.md section 1) as a pi-shaped planning view.

Mapping, one planning `Entry` per line unless said otherwise (`Entry.line` = the line's number):
- `assistant` lines of one API response (same `message.id`, each the nearest conversational ancestor of
  the next) merge into ONE assistant `message` entry: id = the first line's uuid, every line's uuid is an
  alias of it, content = all blocks in order, usage = the largest of the repeated `usage` objects (never a
  sum, never the first), so a response is one cut point and its usage counts once.
- `user` lines: `tool_result` blocks -> one `toolResult` message (`toolCallId` = the first result's id,
  `toolCallIds` = all of them), never a cut point; otherwise a `user` message (`isMeta` injections too:
  the model sees them). The `isCompactSummary` line -> a `compaction` entry (summary = its text without
  Claude's preamble, `tokensBefore` = the boundary's `compactMetadata.preTokens`).
- a `system`/`compact_boundary` line -> a `claude_meta` entry (the root of its part of the tree).
- every other line is left out of the tree and looked through: a line whose parent is a progress,
  system, attachment or sidechain line hangs from that line's nearest ancestor in the tree (chains pass
  through progress lines; leaving them out keeps `show` free of hundreds of side branches). Lines
  without a uuid (file-history-snapshot, queue-operation, summary titles) are not in the tree either.
  Later copies of a uuid are ignored with a warning; a parent missing from the file makes a root with a
  warning (Claude Code tolerates both). Consequence: attachments are not part of the planned context.
- A sub-agent's own file (every user/assistant line `isSidechain: true`) reads its sidechain as the chain.
- The active leaf is the last non-sidechain user/assistant line, as Claude resumes; a boundary has
  `parentUuid: null`, so the path (and the context) restarts at the latest boundary.
- A boundary written by batchcompact carries `compactMetadata.batchcompact.keptHeadUuid/keptTailUuid`:
  the kept tail re-appended after the summary. The planning view then puts those copies BEFORE the
  compaction entry (`firstKeptEntryId` = the head), exactly pi's shape: the context is summary + kept
  tail, a re-compaction may summarize the copies, and a session ending there is "already compacted".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.adapters.claude.extra import ClaudeSessionExtra
from batchcompact.adapters.claude.messages import (
    SUMMARY_PREAMBLE,
    assistant_message,
    summary_text,
    user_message,
)
from batchcompact.adapters.claude.write import build_compaction, verify
from batchcompact.adapters.common.lines import as_name, object_at
from batchcompact.core.context import build_session_context, convert_to_llm
from batchcompact.core.entries import ERROR, WARNING, Entry, Problem
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.session import Session
from batchcompact.core.tree import SessionTree
from batchcompact.formats.jsonl import file_size, iter_json_lines

if TYPE_CHECKING:
    from collections.abc import Iterable


FORMAT = "claude"
META_TYPE = "claude_meta"
MARKER_KEY = "batchcompact"
CONVERSATIONAL = ("user", "assistant")
# What is kept of a non-conversational line (the tree needs its links; boundaries their metadata).
SLIM_KEYS = (
    "type",
    "subtype",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "isSidechain",
    "timestamp",
    "compactMetadata",
    "sessionId",
    "cwd",
    "version",
    "gitBranch",
)
# Envelope fields copied onto the lines we write, in the order Claude Code writes them.
ENVELOPE_KEYS = ("userType", "cwd", "sessionId", "version", "gitBranch", "agentId", "slug")


def _on_chain(obj: JsonObject, side: bool) -> bool:
    """Whether a line is on the file's own chain: the main chain, or in a sub-agent's own file (`side`:
    every conversational line is a sidechain line) the sidechain."""
    return bool(obj.get("isSidechain")) == side


def _is_conversational(obj: JsonObject, side: bool = False) -> bool:
    return obj.get("type") in CONVERSATIONAL and _on_chain(obj, side)


def _in_tree(obj: JsonObject, side: bool = False) -> bool:
    """The chain's user/assistant lines and compact boundaries; other lines are looked through."""
    if not _on_chain(obj, side):
        return False
    return obj.get("type") in CONVERSATIONAL or (
        obj.get("type") == "system" and obj.get("subtype") == "compact_boundary"
    )


def _message_id(obj: JsonObject) -> str | None:
    message = obj.get("message")
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str) else None


def _is_tool_results(obj: JsonObject) -> bool:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return (
        obj.get("type") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _open_group(line: str | None, message_id: str, raw: dict[str, tuple[int, JsonObject]], group_of: dict[str, str],
                group_lines: dict[str, list[str]]) -> str | None:
    """The group whose last line is `line`, if that response has id `message_id`."""
    owner = group_of.get(line) if line is not None else None
    if owner is not None and group_lines[owner][-1] == line and _message_id(raw[line][1]) == message_id:
        return owner
    return None


def _group_responses(order: list[str], raw: dict[str, tuple[int, JsonObject]],
                     conversational_ancestor: Callable[[object], str | None],
                     side: bool = False) -> tuple[dict[str, str], dict[str, str], dict[str, list[str]]]:
    """Merge the assistant lines of one API response (same `message.id`) into one group.

    A line joins the group when its nearest conversational ancestor is the group's last line (streamed
    blocks), or a tool-result-only user line answering the group's last line (Claude writes parallel
    tool calls as A1 <- R1 <- A2 <- R2). Returns (alias, group_of, group_lines): `alias[uuid]` is the
    entry a child of that line hangs from, so A1 <- R1 <- A2 <- R2 reads as A(1+2) <- R1 <- R2, the
    order the API sees; `group_of[uuid]` is the group (= its first line's uuid) of an assistant line.
    """
    alias: dict[str, str] = {}
    group_of: dict[str, str] = {}
    group_lines: dict[str, list[str]] = {}
    for uuid in order:
        obj = raw[uuid][1]
        alias[uuid] = uuid
        if obj.get("type") != "assistant" or not _on_chain(obj, side):
            continue
        message_id = _message_id(obj)
        anc = conversational_ancestor(obj.get("parentUuid"))
        group = None
        if message_id and anc is not None:
            group = _open_group(anc, message_id, raw, group_of, group_lines)
            if group is not None:
                alias[uuid] = alias[anc]
            elif _is_tool_results(raw[anc][1]) and _on_chain(raw[anc][1], side):
                before = conversational_ancestor(raw[anc][1].get("parentUuid"))
                group = _open_group(before, message_id, raw, group_of, group_lines)
                if group is not None:
                    alias[uuid] = anc
        if group is None:
            group = uuid
            group_lines[uuid] = []
        group_lines[group].append(uuid)
        group_of[uuid] = group
    return alias, group_of, group_lines


@dataclass
class _Lines:
    """The transcript's lines that carry a uuid, in file order (non-conversational ones slimmed), and what
    the header needs from the others."""

    raw: dict[str, tuple[int, JsonObject]] = field(default_factory=dict)  # uuid -> (line number, object)
    order: list[str] = field(default_factory=list)
    first: JsonObject = field(default_factory=dict)  # envelope of the first line with a sessionId
    count: int = 0
    last_line: int = 0
    side: bool = False  # a sub-agent's own file: its sidechain lines are its chain (`_on_chain`)

    def conversational_ancestor(self, parent: JsonValue) -> str | None:
        """The nearest user/assistant line at or above `parent` (through any other lines)."""
        raw = self.raw
        seen: set[str] = set()
        while isinstance(parent, str) and parent in raw and parent not in seen:
            seen.add(parent)
            if raw[parent][1].get("type") in CONVERSATIONAL:
                return parent
            parent = raw[parent][1].get("parentUuid")
        return None

    def tree_ancestor(self, parent: JsonValue) -> tuple[str | None, str | None]:
        """(nearest ancestor that is in the tree, a parent uuid missing from the file or None)."""
        raw = self.raw
        seen: set[str] = set()
        while isinstance(parent, str) and parent not in seen:
            if parent not in raw:
                return None, parent
            seen.add(parent)
            if _in_tree(raw[parent][1], self.side):
                return parent, None
            parent = raw[parent][1].get("parentUuid")
        return None, None


def _read_lines(path: str | Path, name: str, problems: list[Problem]) -> _Lines:
    lines = _Lines()
    try:
        for lineno, obj in iter_json_lines(path, problems):
            lines.count += 1
            lines.last_line = lineno
            if not lines.first and isinstance(obj.get("sessionId"), str):
                lines.first = {k: obj[k] for k in ENVELOPE_KEYS if k in obj}
            uuid = obj.get("uuid")
            if not isinstance(uuid, str):
                continue  # file-history-snapshot, queue-operation, summary titles...: not in the tree
            if uuid in lines.raw:
                problems.append(
                    Problem(name, lineno, WARNING, f"uuid {uuid!r} repeats line {lines.raw[uuid][0]}; copy ignored")
                )
                continue
            if obj.get("type") not in CONVERSATIONAL:
                obj = {k: obj[k] for k in SLIM_KEYS if k in obj}  # progress lines can be megabytes
            lines.raw[uuid] = (lineno, obj)
            lines.order.append(uuid)
    except OSError as exc:
        problems.append(Problem(name, None, ERROR, f"cannot read file: {exc.strerror or exc}"))
    return lines


def read(path: str | Path) -> Session:
    """Read a Claude Code transcript. Never raises on bad content: problems are collected on the Session."""
    name = str(path)
    problems: list[Problem] = []
    size = file_size(path)
    lines = _read_lines(path, name, problems)
    raw, order = lines.raw, lines.order
    # A Task sub-agent's own file (2.0.x `agent-*.jsonl`, 2.1.x `<session>/subagents/agent-*.jsonl`) has
    # only sidechain lines: they are its conversation. Claude Code never resumes it (planning skips it
    # unless --force), but it is read, shown and compacted like any other.
    talk = [raw[u][1] for u in order if raw[u][1].get("type") in CONVERSATIONAL]
    lines.side = side = bool(talk) and all(obj.get("isSidechain") for obj in talk)
    # Group the lines of one streamed assistant response (see `_group_responses`).
    alias, group_of, group_lines = _group_responses(order, raw, lines.conversational_ancestor, side)
    datas, entry_lines, boundaries = _entry_datas(name, lines, alias, group_of, group_lines, problems)
    _chain_sibling_results(order, datas)
    redirect = _relink_kept_tails(name, boundaries, raw, group_of, datas, problems)
    entries = [Entry(datas[u], raw[u][0]) for u in order if u in datas]
    tree = SessionTree(entries, name)
    leaf_uuid = next((u for u in reversed(order) if _is_conversational(raw[u][1], side)), None)
    leaf_id = group_of.get(leaf_uuid, leaf_uuid) if leaf_uuid is not None else None
    leaf_id = redirect.get(leaf_id, leaf_id) if leaf_id is not None else None
    tree.leaf = tree.get(leaf_id)
    problems.extend(tree.problems)

    last = raw[leaf_uuid][1] if leaf_uuid is not None else lines.first
    header: JsonObject = {
        "id": lines.first.get("sessionId") or Path(name).name.split(".")[0],
        "cwd": last.get("cwd") or lines.first.get("cwd"),
        "version": last.get("version"),
        "gitBranch": last.get("gitBranch"),
    }
    extra = ClaudeSessionExtra(entry_lines=entry_lines, uuids=set(raw), leaf_uuid=leaf_uuid,
                               envelope={k: last[k] for k in ENVELOPE_KEYS if k in last})
    if not any(p.severity == ERROR for p in problems) and not lines.count:
        problems.append(Problem(name, None, ERROR, "no transcript lines"))
    # a sub-agent's file: the lines we write are sidechain lines too (claude_write)
    return Session(name, FORMAT, header, entries, problems=problems, tree=tree, subagent=side, size=size,
                   last_line=lines.last_line, extra=extra)


def _entry_datas(name: str, lines: _Lines, alias: dict[str, str], group_of: dict[str, str],
                 group_lines: dict[str, list[str]], problems: list[Problem],
                 ) -> tuple[dict[str, JsonObject], dict[str, list[tuple[int, JsonObject]]], list[str]]:
    """The pi-shaped entry of every tree line (one per response group): (datas by uuid, the raw lines of
    each message entry, the boundaries' uuids)."""
    raw = lines.raw
    tool_names = _tool_names(raw.values())
    last_model: str | None = None
    datas: dict[str, JsonObject] = {}
    entry_lines: dict[str, list[tuple[int, JsonObject]]] = {}
    boundaries: list[str] = []
    for uuid in lines.order:
        if group_of.get(uuid, uuid) != uuid:
            continue
        lineno, obj = raw[uuid]
        if not _in_tree(obj, lines.side):
            continue
        parent, missing = lines.tree_ancestor(obj.get("parentUuid"))
        if missing is not None and not lines.side:  # a sub-agent's lines may hang from its parent session's
            problems.append(
                Problem(name, lineno, WARNING, f"parentUuid {missing!r} is not in this file; a root")
            )
        parent_id = alias.get(parent) if parent is not None else None
        base = {"id": uuid, "parentId": parent_id, "timestamp": obj.get("timestamp")}
        kind = obj.get("type")
        if kind == "user" and _on_chain(obj, lines.side) and obj.get("isCompactSummary"):
            data = _compaction_data(obj, raw[parent][1] if isinstance(parent, str) else {}, base)
        elif _is_conversational(obj, lines.side):
            if kind == "assistant":
                message = assistant_message([raw[u][1] for u in group_lines[uuid]], tool_names)
                if message["model"] == "<synthetic>" or not message["model"]:
                    # Made locally (e.g. an API error text): report the session's real model instead.
                    message["model"] = last_model
                    message["syntheticModel"] = True
                last_model = message["model"]
            else:
                message = user_message(obj, tool_names)
            data = {"type": "message", **base, "message": message}
            entry_lines[uuid] = [raw[u] for u in group_lines.get(uuid, [uuid])]
        else:
            # A boundary; `logicalParentId` names the entry the old history ended on, so a consumer can
            # tell that history (now a separate root) from a branch the user abandoned.
            logical = lines.tree_ancestor(obj.get("logicalParentUuid"))[0]
            logical = alias.get(logical, logical) if logical is not None else None
            data = {"type": META_TYPE, **base, "lineType": kind, "subtype": obj.get("subtype")}
            data["logicalParentId"] = logical
            boundaries.append(uuid)
        datas[uuid] = data
    return datas, entry_lines, boundaries


def _tool_names(raw: Iterable[tuple[int, JsonObject]]) -> dict[str, str]:
    """The name of every tool call in the file, by call id, whatever the order its lines are taken in: a
    result's `toolName` must not depend on whether its call's line was taken first (a written file, whose
    appended lines change that order, would then read differently from its original)."""
    names: dict[str, str] = {}
    for _, obj in raw:
        message = obj.get("message") if obj.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                names.setdefault(as_name(block.get("id")), as_name(block.get("name")))
    return names


def _compaction_data(obj: JsonObject, boundary: JsonObject, base: JsonObject) -> JsonObject:
    """A compact summary line (and the `compact_boundary` it hangs from) as a pi `compaction` entry."""
    is_boundary = boundary.get("subtype") == "compact_boundary"
    meta = boundary.get("compactMetadata") if is_boundary else None
    meta = meta if isinstance(meta, dict) else {}
    # Claude keeps nothing from before its boundary: the first kept entry is the boundary itself
    # (metadata), or the summary's own id when it has no boundary parent (then nothing is kept).
    marker = object_at(meta, MARKER_KEY)
    data = {
        "type": "compaction",
        **base,
        "summary": summary_text(obj),
        "firstKeptEntryId": base["parentId"] if is_boundary else base["id"],
        "tokensBefore": meta.get("preTokens") or 0,
        "fromHook": bool(marker.get("fromHook")),
    }
    if "readFiles" in marker or "modifiedFiles" in marker:
        data["details"] = {
            "readFiles": marker.get("readFiles") or [],
            "modifiedFiles": marker.get("modifiedFiles") or [],
        }
    return data


def _chain_sibling_results(order: list[str], datas: dict[str, JsonObject]) -> None:
    """Results of parallel tool calls written as siblings (each under the line of its own tool_use) are
    chained in file order, and the conversation continues from the last one: all stay on the path."""
    children: dict[JsonValue, list[str]] = {}  # by parentId (None: the roots)
    for uuid in order:
        if uuid in datas:
            children.setdefault(datas[uuid]["parentId"], []).append(uuid)

    def is_result(uuid: str) -> bool:
        data = datas[uuid]
        return data["type"] == "message" and data["message"].get("role") == "toolResult"

    for uuid, data in datas.items():
        if data["type"] != "message" or data["message"].get("role") != "assistant":
            continue
        results = [c for c in children.get(uuid, ()) if is_result(c)]
        if len(results) < 2:
            continue
        for before, after in zip(results, results[1:], strict=False):
            datas[after]["parentId"] = before
        for result in results[:-1]:
            for child in children.get(result, ()):
                if child not in results and datas[child]["type"] in ("message", "compaction"):
                    datas[child]["parentId"] = results[-1]


def _relink_kept_tails(
    name: str,
    boundaries: list[str],
    raw: dict[str, tuple[int, JsonObject]],
    group_of: dict[str, str],
    datas: dict[str, JsonObject],
    problems: list[Problem],
) -> dict[str, str]:
    """Put a batchcompact kept tail before its compaction entry (see the module docstring).

    Returns {tail entry id: compaction id}, so a leaf on the tail moves to the compaction."""
    redirect: dict[str, str] = {}
    for boundary in boundaries:
        lineno, obj = raw[boundary]
        meta = object_at(obj, "compactMetadata")
        marker = meta.get(MARKER_KEY)
        if not isinstance(marker, dict) or not marker.get("keptHeadUuid"):
            continue
        summary = next(
            (d for d in datas.values() if d["type"] == "compaction" and d["parentId"] == boundary), None
        )
        head = group_of.get(marker["keptHeadUuid"], marker["keptHeadUuid"])
        tail_uuid = marker.get("keptTailUuid")
        tail = group_of.get(tail_uuid, tail_uuid) if tail_uuid is not None else None
        if (
            summary is None
            or head not in datas
            or tail not in datas
            or datas[head]["parentId"] != summary["id"]
        ):
            problems.append(
                Problem(name, lineno, WARNING, "batchcompact kept tail not found after this boundary")
            )
            continue
        for data in datas.values():
            if data["parentId"] == tail and data is not summary:
                data["parentId"] = summary["id"]
        datas[head]["parentId"] = boundary
        summary["parentId"] = tail
        summary["firstKeptEntryId"] = head
        redirect[tail] = summary["id"]
    return redirect


def context_messages(session: Session) -> list[JsonObject]:
    """The LLM messages Claude Code would resume with, in pi's shape (for `show --context`)."""
    context = build_session_context(session.path_entries())
    return convert_to_llm([m.message for m in context.messages])


__all__ = ["read", "build_compaction", "verify", "context_messages", "FORMAT", "SUMMARY_PREAMBLE"]
