"""Cline usage: one `<session>.messages.json` document per session, rewritten as the session grows.

Where the files are: the CLI (and the JetBrains plugin) write `~/.cline/data/sessions/<session>/
<session>.messages.json` with a `<session>.json` beside it (its `cwd`, `workspace_root`, status); the
VS Code extension writes the same format under its `globalStorage/saoudrizwan.claude-dev`. ccusage's
`CLINE_HOME` (comma-separated) replaces `~/.cline`. Recorded with the real CLI (`cline` 3.0.65 from npm,
tests/agents/cline/test_judge_cline.py) against a loopback OpenAI-compatible provider.

Usage: `{"sessionId", "messages": [{"id", "role": "assistant", "ts": <epoch ms>, "modelInfo": {"id",
"provider"}, "metrics": {"inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens",
"cost"?}}]}`: each assistant message is one model call with that call's own usage. Error messages
(`metadata.displayRole: "error"`) carry no metrics and add nothing.

Counting: Cline's `inputTokens` is the whole prompt, INCLUDING the cache reads and writes (the provider's
1,200 prompt tokens of which 1,000 cached are recorded as inputTokens 1,200, cacheReadTokens 1,000; Cline's
own cost is `(inputTokens − cacheRead − cacheWrite) × input price + ...`), so input = inputTokens − cache
read − cache write. A message whose inputTokens is below its cache counters cannot include them and is
taken as uncached. Reasoning is inside outputTokens and is not recorded apart. `metrics.cost` > 0 is the
recorded cost (`auto` mode). Rows are keyed by session and message id, so a copy of a session counts once.
"""

from __future__ import annotations

import json
from pathlib import Path

from batchcompact.adapters.common.documents import read_object
from batchcompact.adapters.common.lines import ExtractStats, as_int, first_str, parse_timestamp
from batchcompact.adapters.common.usage_rows import UsageRows
from batchcompact.formats.scan import printable

AGENT = "cline"
SUFFIX = ".messages.json"


def session_project(path: Path, session_id: str) -> str | None:
    """The working directory the `<session>.json` beside the transcript records."""
    stem = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else session_id
    for name in dict.fromkeys((f"{stem}.json", f"{session_id}.json")):
        try:
            meta = json.loads((path.parent / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict):
            found = first_str(meta, "cwd", "workspace_root")
            return printable(found) if found else None
    return None


def split_input(metrics: dict) -> tuple[int, int, int]:
    """(uncached input, cache read, cache write) from one message's metrics."""
    total, read, write = (as_int(metrics.get(k)) for k in ("inputTokens", "cacheReadTokens", "cacheWriteTokens"))
    if total >= read + write:
        return total - read - write, read, write
    return total, read, write  # a count below its cache counters cannot include them


def extract_cline(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    doc = read_object(path, stats)
    if doc is None:
        return
    messages = doc.get("messages")
    if not isinstance(messages, list):
        stats.refuse("no `messages` list: not a Cline session transcript")
        return
    session_id = first_str(doc, "sessionId") or path.name.removesuffix(SUFFIX)
    project = session_project(path, session_id)
    for position, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        metrics = message.get("metrics")
        if not isinstance(metrics, dict):
            continue
        info = message.get("modelInfo")
        info = info if isinstance(info, dict) else {}
        model = first_str(info, "id")
        model = model.strip() if model else None
        uncached, read, write = split_input(metrics)
        output = as_int(metrics.get("outputTokens"))
        cost = metrics.get("cost")
        cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost > 0 else None
        if not (uncached or output or read or write or cost):
            continue
        when = parse_timestamp(message.get("ts"))
        if when is None or not model:
            stats.warn(None, f"message {position + 1} has usage but no {'time' if when is None else 'model'};"
                             " not counted")
            continue
        identity = first_str(message, "id") or f"ts{message.get('ts')}"
        rows.add_request(
            AGENT, path, session_id, identity,
            project=project,
            timestamp=when,
            provider=first_str(info, "provider"),
            model=model,
            input_tokens=uncached,
            output_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=write,
            recorded_cost_usd=cost,
        )
