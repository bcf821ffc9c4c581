"""Devin CLI usage: one ATIF (Agent Trajectory Interchange Format) JSON transcript per session.

Where the files are: `${DEVIN_TRANSCRIPTS_DIR:-${XDG_DATA_HOME:-~/.local/share}/devin/cli/transcripts}/*.json`
(`DEVIN_TRANSCRIPTS_DIR` comma-separated); installs from before the `cognition` → `devin` rename keep
`~/.local/share/cognition/cli/transcripts`, which the installer links to the new one. Devin CLI is on
neither npm nor PyPI, so the format comes from public fixtures: ccusage's Devin reader and its tests
(tests/data/devin, with their licence notice).

Usage: `{"schema_version": "ATIF-v1.7", "session_id", "agent": {"version", "model_name"}, "steps": [...]}`;
each step with `source: "agent"` and metrics is one model call. ATIF 1.7: `step.metrics {prompt_tokens,
completion_tokens, cached_tokens, extra.cache_creation_input_tokens}`, where `prompt_tokens` is the whole
prompt INCLUDING both cache counters: input = prompt − cache read − cache write (not below 0); time
`step.timestamp`. ATIF 1.4: `step.metadata.metrics {input_tokens, output_tokens, cache_read_tokens,
cache_creation_tokens}` with the input already uncached; time `metadata.created_at`. Older transcripts
carry no metrics and add nothing. The model is `extra.generation_model` (1.4: `metadata.generation_model`),
else the step's or the agent's display `model_name` made an id ("SWE-2 High" → `swe-2-high`). The
provider is Cognition (`cognition`: its service serves every call; the price lookup tries
`cognition/<model>` first, as ccusage does). Devin bills ACUs, which transcripts do not record.

Dedupe: rows are keyed by session and `step_id`, so the same transcript reached through two folders (the
legacy link) counts once.
"""

from __future__ import annotations

import re
from pathlib import Path

from batchcompact.adapters.common.documents import read_object
from batchcompact.adapters.common.lines import ExtractStats, as_int, first_str, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows

AGENT = "devin"


def model_id(name: str) -> str:
    """A display name as the API-style id price maps list: "SWE-2 High" → "swe-2-high" (dots and slashes kept)."""
    return re.sub(r"[^a-z0-9./]+", "-", name.strip().lower()).strip("-")


def step_usage(step: dict) -> tuple[int, int, int, int] | None:
    """(uncached input, output, cache read, cache write) of an agent step, or None without metrics."""
    metrics = step.get("metrics")
    if isinstance(metrics, dict):
        extra = metrics.get("extra")
        extra = extra if isinstance(extra, dict) else {}
        read, write = as_int(metrics.get("cached_tokens")), as_int(extra.get("cache_creation_input_tokens"))
        return (max(as_int(metrics.get("prompt_tokens")) - read - write, 0), as_int(metrics.get("completion_tokens")),
                read, write)
    metadata = step.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    legacy = metadata.get("metrics")
    if isinstance(legacy, dict):
        return (as_int(legacy.get("input_tokens")), as_int(legacy.get("output_tokens")),
                as_int(legacy.get("cache_read_tokens")), as_int(legacy.get("cache_creation_tokens")))
    return None


def extract_devin(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    doc = read_object(path, stats)
    if doc is None:
        return
    schema = doc.get("schema_version")
    if not (isinstance(schema, str) and schema.startswith("ATIF")) or not isinstance(doc.get("steps"), list):
        stats.refuse("not a Devin transcript (no ATIF `schema_version` and `steps` list)")
        return
    session_id = first_str(doc, "session_id") or path.stem
    agent = doc.get("agent")
    agent = agent if isinstance(agent, dict) else {}
    fallback_model = first_str(agent, "model_name")
    for position, step in enumerate(doc["steps"]):
        if not isinstance(step, dict) or step.get("source") != "agent":
            continue
        usage = step_usage(step)
        if usage is None or not any(usage):
            continue
        metadata = step.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        when = parse_timestamp(step.get("timestamp")) or parse_timestamp(metadata.get("created_at"))
        if when is None:
            stats.warn(None, f"step {position + 1} has usage but no time; not counted")
            continue
        extra = step.get("extra")
        extra = extra if isinstance(extra, dict) else {}
        model = first_str(extra, "generation_model") or first_str(metadata, "generation_model")
        if model is None:
            display = first_str(step, "model_name") or fallback_model
            model = model_id(display) if display else None
        step_id = step.get("step_id")
        identity = step_id if isinstance(step_id, str) else str(step_id) if step_id is not None else f"{path.stem}:{position}"
        uncached, output, read, write = usage
        rows.add_request(
            AGENT, path, session_id, identity,
            project=None,
            timestamp=when,
            provider="cognition",
            model=model,
            input_tokens=uncached,
            output_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=write,
        )
