"""Which agent wrote a session file, from its first lines, and the reader for it.

Rules (first non-empty lines within the first `PROBE_BYTES`; a line that is no JSON, torn by a write cut
short, is judged by its leading bytes as a line cut by the probe is, else skipped): each
registered agent's `detect_line` in the registry's order (`batchcompact/agents/<name>/detect.py`), e.g.
- pi: the first object has `type: "session"`;
- Codex: an object `{timestamp, type, payload}` whose `type` is a rollout item type;
- Claude Code: an object whose `type` is a Claude line type and that has `sessionId`, `uuid`,
  `leafUuid` or `messageId`;
- else None. A first line longer than the probe (a huge file-history-snapshot or session_meta) is
  judged by its leading bytes instead.
(`batchcompact/report/detect.py`'s `detect_usage_source`, which file a report reads and with which reader,
reuses `detect_line` and adds run reports, usage exports and the files agents claim by name and place.)
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import orjson

from batchcompact.agents import AGENTS, contracts, describe, file_detectors, find, store_agent, store_database
from batchcompact.core.jsontypes import JsonValue
from batchcompact.core.session import Session
from batchcompact.errors import NotCompacted, SessionReadError, reported_not_compacted
from batchcompact.formats.compressed import is_decompress_error, open_session

PROBE_BYTES = 64 * 1024
PROBE_LINES = 20
_TYPE_RE = re.compile(rb'"type"\s*:\s*"([^"]{1,64})"')


def detect_line(obj: dict, *, first: bool = False) -> str | None:
    """The format one parsed line belongs to, or None when it says nothing (the registry's rules, in order).
    A line whose `type` is not a string (a list, an object: damaged) says nothing: the rules compare it to
    sets of names."""
    if not isinstance(obj.get("type", ""), str):
        return None
    for agent in AGENTS:
        if agent.matches_line(obj, first):
            return agent.name
    return None


def probe_line(raw: bytes) -> JsonValue:
    """A probed line's JSON value: orjson first, `json` decides what orjson refuses (NaN, integers beyond 64
    bits, lone surrogates, a byte order mark); raises ValueError for what neither accepts."""
    try:
        return orjson.loads(raw)
    except ValueError:
        try:
            return json.loads(raw)
        except RecursionError:  # nested deeper than json's recursion allows (orjson stops at 1,024 levels)
            raise ValueError("JSON nested too deeply to parse") from None


def detect_prefix(raw: bytes, *, first: bool) -> str | None:
    """Judge a line cut by the probe from its leading bytes (top-level keys come first in every format)."""
    match = _TYPE_RE.search(raw[:4096])
    kind = match.group(1).decode("utf-8", "replace") if match else None
    for agent in AGENTS:
        if agent.matches_prefix(raw, kind, first):
            return agent.name
    return None


def detect_session_agent(path: str | Path) -> str | None:
    """The name of the agent whose session reader reads the file ("pi", "claude", "codex"…), or None (not a
    transcript this program reads; the report's `report.detect.detect_usage_source` also names run reports,
    usage exports and the files agents claim by name and place). Reads at most 64 KB. A session kept in an agent's database (`<db>#<id>`), or the
    database itself, is that agent's."""
    store = store_agent(path) or store_database(Path(path).name)
    if store is not None:
        return store.name
    parts = Path(os.path.abspath(path)).parts
    for agent in AGENTS:  # a file under an agent's own folder that writes another's format (OpenClaw: pi's)
        if agent.homes and agent.reader is not None and agent.claims(parts[-1], parts[:-1]):
            return agent.name
    try:
        with open_session(path) as handle:
            data = handle.read(PROBE_BYTES)
    except OSError:
        return None
    except Exception as exc:
        if is_decompress_error(exc):
            raise SessionReadError(f"zstd data damaged: {exc}") from None
        raise
    lines = data.split(b"\n")
    complete = len(data) < PROBE_BYTES  # else the last piece may be cut
    first = True
    for index, raw in enumerate(lines[:PROBE_LINES]):
        if not raw.strip():
            continue
        cut = index == len(lines) - 1 and not complete
        kind = None
        if not cut:
            try:
                obj = probe_line(raw)
            except ValueError:  # a torn line (a write cut short) still says whose it is by its leading bytes
                obj = None
                kind = detect_prefix(raw, first=first)
            if isinstance(obj, dict):
                kind = detect_line(obj, first=first)
        else:
            kind = detect_prefix(raw, first=first)
        if kind is not None:
            return kind
        first = False
    for agent in file_detectors():  # formats that are one JSON document, not lines
        if agent.matches_file(Path(path), data):
            return agent.name
    return None


def read_session(path: str | Path, agent_name: str | None = None, *, digest: bool = False) -> Session:
    """Read a session of any registered agent's format (`detect_session_agent` when `agent_name` is None).
    `digest`: a format whose reader can (`Agent.read_appended`) also records what it was read from
    (`formats.jsonl.SourceDigest`)."""
    agent = find(agent_name or detect_session_agent(path))
    if agent is None:
        with open(path, "rb"):  # a file that cannot be opened says why (OSError), not "not a transcript"
            pass
        readable = [a for a in AGENTS if a.reader is not None]  # report-only agents are not read as sessions
        raise SessionReadError(f"not a {describe(readable)} transcript (none of its first {PROBE_LINES} lines is "
                               "an entry of theirs)")
    if agent.reader is None:
        raise NotCompacted(reported_not_compacted(f"a {agent.display_name} transcript"))
    if digest and agent.read_appended:
        return contracts.digest_reader(agent)(path, digest=True)
    return contracts.reader(agent)(path)
