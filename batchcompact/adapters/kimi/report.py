"""Kimi usage: kimi-cli's `wire.jsonl` (wire protocol up to 1.3) and Kimi Code's (agent-core, 1.4).

Where the files are:
- kimi-cli: `${KIMI_SHARE_DIR:-~/.kimi}/sessions/<md5 of the work dir>/<session id>/wire.jsonl`
  (ccusage reads `$KIMI_DATA_DIR` instead). Lines `{"timestamp": <unix s>, "message": {"type":
  "StatusUpdate", "payload": {"token_usage": {...}, "message_id": ...}}}`, one per LLM step.
- Kimi Code: `${KIMI_CODE_HOME:-~/.kimi-code}/sessions/wd_<slug>_<hash>/session_<uuid>/agents/<agent
  id>/wire.jsonl`, one file per agent (sub-agents have their own). Flat records `{"type": ..., "time":
  <ms>}`; every LLM call writes one `usage.record {model, usage, usageScope}` (`turn` for agent steps,
  `session` for compaction and other session-level calls), and a turn step repeats its usage in
  `context.append_loop_event` / `step.end`. Only `usage.record` is counted (the `step.end` copy would
  count every step twice); a file with no `usage.record` falls back to `step.end`.

Counting: `input_other` / `inputOther` already EXCLUDES cached tokens (kosong subtracts them), so it
maps to input as is; cache read and creation are beside it. Forks copy history: kimi-cli's fork copies
the parent's wire lines verbatim (same `message_id`), so rows are keyed by `message_id` (the
provider's response id), numbers and time (`usage_rows.CallKeys`) and count once across sessions; Kimi Code's fork rewrites the parent's records
into the new session and appends a `forked` record, so only records after the last `forked` record are
the file's own. A kimi-cli `_usage.token_count` (context size) is never usage.

Model: a Kimi Code record names its model alias (`kimi-code/kimi-for-coding`); kimi-cli's comes from
the share dir's `config.json` `model` or `config.toml` `default_model`, else `kimi-for-coding`.
`kimi-for-coding` is priced as the model it served on that date: kimi-k2.5 before 2026-04-20 15:28:10
UTC, kimi-k2.6 after (the cut ccusage uses).
"""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from batchcompact.adapters.common.lines import (
    ExtractStats,
    as_int,
    first_str,
    iter_json_lines,
    parse_timestamp,
)
from batchcompact.adapters.common.usage_rows import CallKeys, UsageRows
from batchcompact.core.jsontypes import JsonValue
from batchcompact.formats.jsonl import capped_lines
from batchcompact.formats.scan import printable

AGENT = "kimi"
WANT = (b"token_usage", b'"usage', b'"forked"', b'"config.update"')
DEFAULT_MODEL = "kimi-for-coding"
K2_6_FROM = datetime.fromtimestamp(1_776_698_890.072, tz=UTC)


def extract_kimi(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    records: list[tuple[int, dict]] = []
    steps: list[tuple[int, dict]] = []
    legacy: list[tuple[int, dict]] = []
    project = None
    for number, obj in iter_json_lines(path, stats, want=WANT):
        kind = obj.get("type")
        if kind == "config.update":  # Kimi Code: the session's working directory
            project = first_str(obj, "cwd") or project
        elif kind == "forked":  # everything before it was copied from the parent session
            records.clear()
            steps.clear()
        elif kind == "usage.record" and isinstance(obj.get("usage"), dict):
            records.append((number, obj))
        elif kind == "context.append_loop_event":
            event = obj.get("event")
            if isinstance(event, dict) and event.get("type") == "step.end" and isinstance(event.get("usage"), dict):
                steps.append((number, obj))
        elif isinstance(obj.get("message"), dict) and obj["message"].get("type") == "StatusUpdate":
            legacy.append((number, obj))
    if records or steps:
        add_kimi_code_rows(path, records, steps, project or main_agent_cwd(path), rows)
    if legacy:
        add_kimi_cli_rows(path, legacy, rows)


def main_agent_cwd(path: Path) -> str | None:
    """For a sub-agent's wire: the working directory the main agent's wire records (a session is one
    project whichever agent made the call; the cwd never changes, so a cached part cannot go stale)."""
    if path.parent.parent.name != "agents" or path.parent.name == "main":
        return None
    main = path.parent.parent / "main" / path.name
    try:
        with open(main, "rb") as fh:
            for number, raw in enumerate(capped_lines(fh, limit=1 << 20)):
                if number >= 50:
                    break
                if b'"config.update"' in raw:
                    obj = json.loads(raw)
                    cwd = first_str(obj, "cwd") if isinstance(obj, dict) else None
                    if cwd:
                        return printable(cwd)  # "\ud800" is text to the standard library
    except (OSError, ValueError, RecursionError):  # RecursionError: a line nested deeper than json recurses
        return None
    return None


def kimi_code_session(path: Path) -> tuple[str, str]:
    """(session id, agent id) of `…/session_<uuid>/agents/<agent id>/wire.jsonl`."""
    agent = path.parent.name
    if path.parent.parent.name == "agents":
        return path.parent.parent.parent.name, agent
    return path.parent.name, "main"


def add_kimi_code_rows(path: Path, records: list, steps: list, project: str | None, rows: UsageRows) -> None:
    session_id, agent_id = kimi_code_session(path)
    for number, obj in records or steps:
        usage = obj["usage"] if records else obj["event"]["usage"]
        when = parse_timestamp(obj.get("time"))
        model = first_str(obj, "model")
        scope = obj.get("usageScope")
        if agent_id != "main":
            kind = "sidechain"
        elif scope == "session":
            kind = "compaction"
        else:
            kind = "main"
        add_row(rows, path, number, session_id, when, model, usage, camel=True, kind=kind,
                key=None, project=project)


def add_kimi_cli_rows(path: Path, lines: list, rows: UsageRows) -> None:
    model = configured_model(path)
    session_id = path.parent.name
    call_keys = CallKeys(AGENT)
    for number, obj in lines:
        payload = obj["message"].get("payload")
        if not isinstance(payload, dict) or not isinstance(payload.get("token_usage"), dict):
            continue
        seconds = obj.get("timestamp")
        when = parse_timestamp(seconds * 1000) if isinstance(seconds, (int, float)) else parse_timestamp(seconds)
        message_id = first_str(payload, "message_id")
        usage = payload["token_usage"]
        numbers = (as_int(usage.get(name)) for name in ("input_other", "output", "input_cache_read",
                                                         "input_cache_creation", "total"))
        add_row(rows, path, number, session_id, when, model, usage, camel=False, kind="main",
                key=call_keys(message_id, *numbers, seconds))


def add_row(rows: UsageRows, path: Path, number: int, session_id: str, when: JsonValue, model: str | None,
            usage: dict, *, camel: bool, kind: str, key: str | None, project: str | None = None) -> None:
    names = ("inputOther", "output", "inputCacheRead", "inputCacheCreation") if camel else (
        "input_other", "output", "input_cache_read", "input_cache_creation")
    values = [as_int(usage.get(name)) for name in names]
    if not any(values):
        total = as_int(usage.get("total"))
        if not total:
            return
        values[1] = total  # only a total: counted as output, as ccusage does
    model = model or DEFAULT_MODEL
    rows.add(
        source=AGENT,
        file=str(path),
        line=number,
        session_id=session_id,
        project=project,
        timestamp=when,
        provider="moonshot",
        model=price_model(model, when),
        kind=kind,
        dedupe_key=key,
        input_tokens=values[0],
        output_tokens=values[1],
        cache_read_tokens=values[2],
        cache_write_tokens=values[3],
    )


def price_model(model: str, when: datetime | None) -> str:
    """`kimi-code/kimi-for-coding` -> `kimi-for-coding` -> the Kimi model it served at `when`."""
    bare = model.split("/", 1)[1] if model.startswith(("kimi-code/", "kimi/", "moonshot/")) else model
    if bare == DEFAULT_MODEL:
        return "kimi-k2.6" if when is not None and when >= K2_6_FROM else "kimi-k2.5"
    return bare


def configured_model(wire: Path) -> str | None:
    """The model kimi-cli was configured with: `<share dir>/config.json` `model` or `config.toml`."""
    root = wire.parent.parent.parent.parent  # <share>/sessions/<group>/<session>/wire.jsonl
    try:
        value = json.loads((root / "config.json").read_text(encoding="utf-8"))
        model = first_str(value, "model") if isinstance(value, dict) else None
        if model:
            return printable(model)  # "\ud800" is text to the standard library
    except (OSError, ValueError):
        pass
    try:
        config = tomllib.loads((root / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    alias = config.get("default_model")
    models = config.get("models")
    models = models if isinstance(models, dict) else {}
    entry = models.get(alias) if isinstance(alias, str) else None
    if isinstance(entry, dict) and isinstance(entry.get("model"), str):
        return entry["model"]
    return alias if isinstance(alias, str) and alias else None
