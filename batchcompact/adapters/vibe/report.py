"""Mistral Vibe usage: one row per session, from the session's cumulative token counters.

Where the files are: `${VIBE_HOME:-~/.vibe}/logs/session/`, one folder per session, each with a
`meta.json`. Recorded with the real CLI (`mistral-vibe` 2.26.1 from PyPI, tests/agents/vibe/test_judge_vibe.py)
against a loopback OpenAI-compatible provider (and by hand with 3.0.3, the newest, whose Unified store,
format minor 10, is read alike; it has no legacy harness); Vibe writes two layouts:

- The legacy Python harness (`--legacy-harness`, and every Vibe before the Unified Harness):
  `session_<YYYYMMDD_HHMMSS>_<id8>/meta.json` beside `messages.jsonl`; a sub-agent's session is a folder
  of its own under its parent's `agents/`. `meta.json` `stats` holds the session's running totals
  (`session_prompt_tokens`, `session_completion_tokens`, `session_cached_tokens`, `session_cost`), and
  `config` the settings snapshot: `active_model` is an alias of `config.models` (a table by alias, or a
  list in older files), whose `name` is the model and `provider` the provider.
- The Unified Harness (the default since 2.2x): `unified/<session id>/meta.json` (no `stats`, `config`
  null) beside `CURRENT`, which names the current generation; its
  `generations/<gen>/projection-state.json` `snapshot.session.tokenUsage` is the running total
  (`inputTokens`, `outputTokens`, `cachedInputTokens`), and `runtime-state.json`
  `session_metadata.active_model` the alias. The alias is resolved through `$VIBE_HOME/config.toml`'s
  `[[models]]` (the folder three levels up); an empty alias is Vibe's default model
  (`mistral-vibe-cli-latest`, provider `mistral`); an alias found nowhere is taken as the model, and a
  session that records no alias (no config snapshot) has no model: counted, unpriced and flagged.

Counting: Vibe's prompt count INCLUDES the cached tokens (its Anthropic backend folds cache reads and
writes into it), so input = prompt − cached, cache read = cached; a cache write is not recorded apart
(it is inside input). Reasoning is inside the completion count. Vibe records no per-call usage in a
form that survives (the Unified Harness prunes each call's result from its state), so a session is one
row at its last activity (`end_time`; the projection's `updatedAt`) with `requests` counting the
session, not its calls. `stats.session_cost` > 0 (Vibe's own, from the prices in its config) is the
recorded cost in `auto` mode. Rows are keyed by session id: a copy of a session counts once, and of
two copies at different points the one with more tokens is kept (the dedupe rank). The Unified Harness
rewrites `meta.json` (its `end_time`) with every saved turn, so the report's cache, keyed by that file,
sees a new turn.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from batchcompact.adapters.common.documents import read_object
from batchcompact.adapters.common.lines import ExtractStats, as_int, first_str, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.formats.scan import printable

AGENT = "vibe"
DEFAULT_MODEL = ("mistral-vibe-cli-latest", "mistral")  # Vibe's DEFAULT_ACTIVE_MODEL_CONFIG (name, provider)


def configured_model(models: object, alias: str | None) -> tuple[str | None, str | None]:
    """(model name, provider) of `alias` in a `models` table (by alias) or list; (None, None) if absent or
    not recorded (None); Vibe's default model for the empty alias (unpinned)."""
    if alias is None:
        return None, None
    if not alias:
        return DEFAULT_MODEL
    entries = models.values() if isinstance(models, dict) else models if isinstance(models, list) else ()
    for entry in entries:
        if isinstance(entry, dict) and (entry.get("alias") or entry.get("name")) == alias:
            return first_str(entry, "name") or alias, first_str(entry, "provider")
    return None, None


def _read_json_quietly(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def unified_usage(folder: Path, stats: ExtractStats) -> tuple[dict, str | None, object] | None:
    """(tokenUsage, active model alias, updatedAt) of a Unified Harness session folder, or None (warned)."""
    try:
        current = json.loads((folder / "CURRENT").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stats.warn(None, "a Unified Harness session without a readable CURRENT; not counted")
        return None
    generation = current.get("generation") if isinstance(current, dict) else None
    if not isinstance(generation, str) or "/" in generation or generation in ("", ".", ".."):
        stats.warn(None, "CURRENT names no generation; not counted")
        return None
    state = _read_json_quietly(folder / "generations" / generation / "projection-state.json")
    snapshot = state.get("snapshot") if isinstance(state, dict) else None
    session = snapshot.get("session") if isinstance(snapshot, dict) else None
    usage = session.get("tokenUsage") if isinstance(session, dict) else None
    if not isinstance(usage, dict):
        stats.warn(None, f"generation {generation} has no readable projection-state.json tokenUsage; not counted")
        return None
    runtime = _read_json_quietly(folder / "generations" / generation / "runtime-state.json")
    meta = runtime.get("session_metadata") if isinstance(runtime, dict) else None
    alias = meta.get("active_model") if isinstance(meta, dict) else None
    updated = session.get("updatedAt") if isinstance(session, dict) else None  # (a dict: it held the usage)
    return usage, alias if isinstance(alias, str) else None, updated


def home_models(folder: Path) -> object:
    """`[[models]]` of the config.toml of the Vibe home a Unified Harness session folder is in."""
    try:
        with open(folder.parents[3] / "config.toml", "rb") as handle:
            return tomllib.load(handle).get("models")
    except (OSError, IndexError, tomllib.TOMLDecodeError):
        return None


def extract_vibe(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    if path.name != "meta.json":
        return  # a transcript or a journal segment beside it: the usage is in meta.json (and its state)
    doc = read_object(path, stats)
    if doc is None:
        return
    session_id = first_str(doc, "session_id")
    if session_id is None:
        stats.refuse("no `session_id`: not a Mistral Vibe session's meta.json")
        return
    environment = doc.get("environment")
    environment = environment if isinstance(environment, dict) else {}
    project = first_str(environment, "working_directory") or first_str(doc, "origin_directory")
    recorded_cost = None
    if isinstance(doc.get("stats"), dict):  # the legacy harness
        counters = doc["stats"]
        prompt, output = as_int(counters.get("session_prompt_tokens")), as_int(counters.get("session_completion_tokens"))
        cached = as_int(counters.get("session_cached_tokens"))
        cost = counters.get("session_cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0:
            recorded_cost = float(cost)
        config = doc.get("config")
        config = config if isinstance(config, dict) else {}
        alias = config.get("active_model") if isinstance(config.get("active_model"), str) else None
        model, provider = configured_model(config.get("models"), alias)
        when = parse_timestamp(doc.get("end_time")) or parse_timestamp(doc.get("start_time"))
    elif (path.parent / "CURRENT").exists():  # the Unified Harness
        found = unified_usage(path.parent, stats)
        if found is None:
            return
        usage, alias, updated = found
        prompt, output = as_int(usage.get("inputTokens")), as_int(usage.get("outputTokens"))
        cached = as_int(usage.get("cachedInputTokens"))
        model, provider = configured_model(home_models(path.parent), alias)
        when = parse_timestamp(updated) or parse_timestamp(doc.get("end_time"))
    else:
        return  # a session with no turn saved yet: nothing to count
    if model is None:
        model = alias
    cached = min(cached, prompt)  # Vibe's own cost clamps the cached count to the prompt count
    if not (prompt or output or recorded_cost):
        return
    if when is None:
        stats.warn(None, f"session {session_id} has usage but no time; not counted")
        return
    rows.add(
        source=AGENT,
        file=str(path),
        line=None,
        session_id=session_id,
        project=printable(project) if project else None,
        timestamp=when,
        provider=provider,
        model=model,
        kind="main",
        dedupe_key=f"{AGENT}:{session_id}",
        input_tokens=prompt - cached,
        output_tokens=output,
        cache_read_tokens=cached,
        recorded_cost_usd=recorded_cost,
        branch=first_str(doc, "git_branch"),
    )
