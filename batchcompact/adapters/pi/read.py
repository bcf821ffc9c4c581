"""Reader of pi JSONL sessions (reference sections 1, 2, 6): strict, streaming, line-numbered (the writer: write.py)."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.adapters.pi.extra import PiSessionExtra
from batchcompact.adapters.pi.omp import (
    OMP_RULES,
    has_omp_entries,
    is_title_slot,
    under_omp_home,
    written_under_omp_rules,
)
from batchcompact.core.entries import ERROR, KNOWN_ENTRY_TYPES, MESSAGE_ROLES, WARNING, Entry, Problem
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.migrate import header_version, migrate
from batchcompact.core.session import Session
from batchcompact.formats.jsonl import SourceDigest, iter_json_lines, paused_gc

if TYPE_CHECKING:
    from collections.abc import Iterable



def read_pi_session(path: str | Path, *, digest: bool = False) -> Session:
    """Read one pi session file. Never raises on bad content: problems are collected on the Session.

    With `digest`, `session.source` is the SourceDigest of exactly the bytes that were parsed
    (a fingerprint taken from the read itself, and what `read_pi_appended` needs to trust them)."""
    with paused_gc():
        return _read_pi_session(path, SourceDigest() if digest else None)


def _read_pi_session(path: str | Path, digest: SourceDigest | None = None) -> Session:
    name = str(path)
    problems: list[Problem] = []
    header: JsonObject | None = None
    entries: list[Entry] = []
    slot = False
    try:
        lines = iter_json_lines(path, problems, digest=digest)
        first_line = next(lines, None)
        if first_line is not None:
            slot = first_line[0] == 1 and is_title_slot(first_line[1])
            if not slot:
                lines = itertools.chain((first_line,), lines)
        header, entries = _split_lines(lines, name, problems, first=True)
    except OSError as exc:
        problems.append(Problem(name, None, ERROR, f"cannot read file: {exc.strerror or exc}"))
    version = header_version(header) if header is not None else 3
    if header is not None and version < 3:
        # v2 -> v3 changes a message role only: the id checks below see the same; v1 gains ids and parents
        migrate(header, [entry.data for entry in entries])
        for entry in entries:
            entry.id, entry.parent_id = entry.data.get("id"), entry.data.get("parentId")
    compactions = _check_entries(name, entries, problems, ids=header is not None and version >= 2)
    session = Session(name, "pi", header, entries, version=version if header is not None else None, problems=problems)
    _check_compactions(session, compactions)
    if digest is not None:
        session.source = digest
    if slot or under_omp_home(name) or has_omp_entries(entries) or written_under_omp_rules(compactions):
        session.context_rules = OMP_RULES
        session.agent_limits = {"rules": "oh-my-pi"}  # its trigger (adapters/pi/trigger.py)
    if slot:
        session.extra = PiSessionExtra(header_line=2)
    _as_pi_takes_it(session)
    if header is None and entries:
        # pi 0.73.1 starts such a file afresh (its loadEntriesFromFile gives nothing, setSessionFile rewrites
        # it with a new header) and oh-my-pi refuses to resume it: no agent rebuilds a context from it
        session.not_writable = NO_HEADER
    elif session.migrated and any(p.message.endswith(SKIPPED_LINE) for p in session.problems):
        # its v3 rewrite (ours, as pi's) holds only the entries read: the skipped line would be lost
        session.not_writable = MIGRATED_SKIPPED
    return session


NO_HEADER = ("no session header (the file starts with an entry: a tail cut from a session?): pi starts such a "
             "file afresh and oh-my-pi refuses to resume it; left as it is")
MIGRATED_SKIPPED = ("a v1/v2 session with a line pi skips: migrating it to v3 rewrites the file without that "
                    "line; left as it is")
SKIPPED_LINE = "; pi skips this line: left as it is, outside every context"
ROOT = "; a root, as pi takes it (entries before it are not in its context)"


def _as_pi_takes_it(session: Session) -> None:
    """Problems pi and oh-my-pi pass over when they open the file become warnings that say what they do
    (README.md beside this file, "What we accept of pi's files"): a whole line that is not JSON (their loaders skip
    it; a torn last line stays an error: the file is being written) and a parentId that names no entry
    (their `getBranch` stops there: the entry is a root). The file's bytes stay as they are."""
    for index, problem in enumerate(session.problems):
        if problem.severity != ERROR:
            continue
        if problem.message.startswith("invalid JSON"):
            session.problems[index] = Problem(problem.path, problem.line, WARNING, problem.message + SKIPPED_LINE)
        elif problem.message.startswith("parentId ") and problem.message.endswith(" points to no entry"):
            session.problems[index] = Problem(problem.path, problem.line, WARNING, problem.message + ROOT)


def _split_lines(items: Iterable[tuple[int, JsonObject]], name: str, problems: list[Problem], *,
                 first: bool) -> tuple[JsonObject | None, list[Entry]]:
    """(header, entries) from (line number, object) pairs; `first`: the pairs start at the file's first
    line (where the header belongs). One Entry per line as it is read (a header's is dropped)."""
    header: JsonObject | None = None
    entries: list[Entry] = []
    keep = entries.append
    for lineno, obj in items:
        entry = Entry(obj, lineno)
        if entry.type == "session":
            if first:
                header = obj
                if not isinstance(entry.id, str):
                    problems.append(Problem(name, lineno, ERROR, "session header has no string 'id'"))
            else:
                problems.append(Problem(name, lineno, WARNING, "a second session header; ignored"))
            first = False
            continue
        if first:
            first = False
            problems.append(Problem(name, lineno, WARNING, NO_HEADER))
        keep(entry)
    return header, entries


def read_pi_appended(original: Session, path: str | Path, size: int, sha256: str, *,
                     prefix_checked: bool = False) -> Session | None:
    """`read_pi_session(path)` of a file made of the bytes `original` was read from plus appended lines,
    parsing only the appended lines; None when that cannot be shown equal (the caller reads it whole).

    Equal because: `original` was read with `digest` from exactly `size` bytes hashing to `sha256`, had
    no problem at all (no skipped or warned line, no tree or compaction problem) and is v3 (nothing
    migrated); and the first `size` bytes of `path` hash to `sha256` (checked here, or by the caller
    when `prefix_checked`) and end with a newline. Parsing those bytes again would give the same header,
    entries, line numbers and no problem, so only the rest is parsed (numbered on from the prefix's
    lines) and checked; the tree and the compaction checks run over all entries. Relies on `original`
    not being mutated since it was read (planning and applying are pure functions).
    """
    source = original.source
    if (not isinstance(source, SourceDigest) or (source.size, source.sha256) != (size, sha256)
            or original.problems or original.header is None or original.version != 3 or original.agent != "pi"):
        return None
    name = str(path)
    if not _ends_a_line(path, size) or (not prefix_checked and not _prefix_is(path, size, sha256)):
        return None
    problems: list[Problem] = []
    with paused_gc():
        try:
            _, new = _split_lines(iter_json_lines(path, problems, offset=size, first_line=source.lines + 1), name,
                                  problems, first=False)
        except OSError as exc:
            problems.append(Problem(name, None, ERROR, f"cannot read file: {exc.strerror or exc}"))
            new = []
        _check_entries(name, new, problems, ids=True)
        assert original.tree is not None  # a Session always builds its tree
        tree = original.tree.extended(new, name)
        session = Session(name, "pi", original.header, tree.entries, version=3, problems=problems, tree=tree)
        if original.context_rules is not None:
            session.context_rules = original.context_rules
            session.agent_limits = dict(original.agent_limits or {})
        problems.extend(tree.problems)  # as Session does with a tree it builds
        # The original's compactions passed this check on the same paths; with no new id problem they
        # still do (no appended entry is an ancestor of theirs), so only the appended ones are checked.
        fresh = None if problems else [e for e in new if e.type == "compaction"]
        _check_compactions(session, fresh)
        _as_pi_takes_it(session)
    return session


def _ends_a_line(path: str | Path, size: int) -> bool:
    """Byte `size - 1` of `path` is a newline (the appended lines start a line of their own)."""
    with open(path, "rb") as handle:
        handle.seek(size - 1)
        return size > 0 and handle.read(1) == b"\n"


def _prefix_is(path: str | Path, size: int, sha256: str) -> bool:
    """The first `size` bytes of `path` hash to `sha256`."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        remaining = size
        while remaining > 0:
            chunk = handle.read(min(1 << 20, remaining))
            if not chunk:
                return False
            digest.update(chunk)
            remaining -= len(chunk)
    return digest.hexdigest() == sha256


def _check_entries(name: str, entries: list[Entry], problems: list[Problem], *, ids: bool) -> list[Entry]:
    """Add the entries' problems in this order: with `ids` (v2 and later) each entry's id and parentId,
    then unknown types, message entries without a message object, unknown roles. One pass; returns
    the compaction entries (for `_check_compactions`)."""
    compactions: list[Entry] = []
    id_problems: list[Problem] = []
    entry_problems: list[Problem] = []
    known = KNOWN_ENTRY_TYPES
    for entry in entries:
        kind = entry.type
        raw_kind = entry.data.get("type")
        if raw_kind is not None and not isinstance(raw_kind, str):  # a list or an object (Entry.type None), a number
            entry_problems.append(Problem(name, entry.line, ERROR, f"'type' must be a string, not {_json_kind(raw_kind)}"))
            continue
        if ids:
            # pi indexes an entry without an id under `undefined`: nothing points to it, so it is on no
            # path but its own when it is the last line; one without a parentId is a root (getBranch
            # stops at a falsy parentId). Sub-agent records merged into a session are written this way.
            entry_id = entry.data.get("id")
            if entry_id is None:
                id_problems.append(Problem(name, entry.line, WARNING, f"{kind!r} entry has no 'id': "
                                           "pi keeps it on no path; left as it is"))
            elif not isinstance(entry_id, str):
                id_problems.append(Problem(name, entry.line, ERROR, f"{kind!r} entry has no string 'id'"))
            parent = entry.data.get("parentId")
            if parent is None:
                if "parentId" not in entry.data and entry_id is not None:
                    id_problems.append(Problem(name, entry.line, WARNING,
                                               f"{kind!r} entry has no 'parentId': a root, as pi takes it"))
            elif not isinstance(parent, str):
                id_problems.append(Problem(name, entry.line, ERROR, "'parentId' must be a string or null"))
        if kind == "message":
            message = entry.data.get("message")
            if not isinstance(message, dict):
                entry_problems.append(Problem(name, entry.line, ERROR, "message entry has no 'message' object"))
            elif not isinstance(message.get("role"), str):
                entry_problems.append(Problem(name, entry.line, ERROR, "message 'role' must be a string"))
            elif message.get("role") not in MESSAGE_ROLES:
                entry_problems.append(
                    Problem(name, entry.line, WARNING, f"unknown message role {message.get('role')!r}; ignored")
                )
        elif kind == "compaction":
            compactions.append(entry)
        elif kind not in known:
            entry_problems.append(
                Problem(name, entry.line, WARNING, f"unknown entry type {kind!r}; kept and ignored for context")
            )
    problems.extend(id_problems)
    problems.extend(entry_problems)
    return compactions


def _json_kind(value: JsonValue) -> str:
    """How a JSON value is named in a message ("a list", "an object", "null", "a number")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else "a string"


def _check_compactions(session: Session, compactions: list[Entry] | None = None) -> None:
    """A compaction's firstKeptEntryId must be on the path to that compaction (`compactions`: the
    session's compaction entries in file order, when the caller has them)."""
    tree = session.tree
    assert tree is not None
    if compactions is None:
        compactions = [e for e in session.entries if e.type == "compaction"]
    if not compactions:
        return
    active = tree.path()
    # where each compaction and each kept id is on the active path (a kept id's last place, as a dict of
    # the whole path would give): one walk that indexes only those few
    wanted = {kept for e in compactions if isinstance(kept := e.data.get("firstKeptEntryId"), str)}
    position: dict[int, int] = {}
    index_by_id: dict[str, int] = {}  # only ids in `wanted`: strings
    for i, e in enumerate(active):
        if e.id in wanted:
            index_by_id[e.id] = i
        if e.type == "compaction":
            position[id(e)] = i
    for entry in compactions:
        kept = entry.data.get("firstKeptEntryId")
        if not isinstance(kept, str):
            if "retainedTail" not in entry.data:
                session.problems.append(
                    Problem(session.path, entry.line, ERROR, "compaction has no string 'firstKeptEntryId'")
                )
            continue
        if id(entry) in position:  # on the active path: one shared walk
            ok = index_by_id.get(kept, len(active)) < position[id(entry)]
        else:
            ok = any(e.id == kept for e in tree.path(entry))
        if not ok:
            session.problems.append(
                Problem(
                    session.path,
                    entry.line,
                    ERROR,
                    f"compaction firstKeptEntryId {kept!r} is not on the path to this compaction",
                )
            )
