"""batchcompact's own spend: the run reports (`compactions-<run_id>.parquet`, pipeline/runreport/) read
back as the report's usage rows.

Columns are read by name and missing ones tolerated. A row with `calls > 0` made with a model (the
built-in offline summarizer makes no request and is left out) becomes one usage row
(source `batchcompact`, kind `compaction`) that aggregates that session's summary calls; `requests`
in reports therefore counts sessions compacted, and the calls are in `calls`.
Assumption (litellm's convention): `prompt_tokens` INCLUDES cache-read and cache-write tokens, so
non-cached input = prompt - cache_read - cache_write (never below 0). Recorded cost = `cost_usd`.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from batchcompact.adapters.common.lines import ExtractStats, as_float, as_int
from batchcompact.adapters.common.usage_rows import UsageRows, entry_key
from batchcompact.pipeline.runreport.schema import not_a_run_report

WANTED = (
    "run_id",
    "started_at",
    "ended_at",
    "input_path",
    "session_id",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "model",
    "branch_calls",
    "branch_prompt_tokens",
    "branch_completion_tokens",
    "branch_cost_usd",
    "written_entries",
)


def extract_runs(path: str | Path, rows: UsageRows, stats: ExtractStats) -> None:
    path = Path(path)
    try:
        parquet = pq.ParquetFile(path)
        refused = not_a_run_report(parquet.schema_arrow)
        if refused is not None:
            stats.refuse(refused)
            return
        present = [c for c in WANTED if c in parquet.schema_arrow.names]
        table = parquet.read(columns=present)
    except Exception as exc:  # a torn or foreign parquet file is bad input, not a crash
        stats.malformed += 1
        stats.refuse(f"cannot read run report: {exc}")
        return
    data = table.to_pylist()
    stats.lines += len(data)
    for index, record in enumerate(data, start=1):
        stats.parsed += 1
        if as_int(record.get("calls")) <= 0 or record.get("model") == "builtin":
            continue  # the built-in summarizer makes no model request and costs nothing
        cache_read = as_int(record.get("cache_read_tokens"))
        cache_write = as_int(record.get("cache_write_tokens"))
        prompt = as_int(record.get("prompt_tokens"))
        when = record.get("ended_at") or record.get("started_at")
        input_path = record.get("input_path")
        model = record.get("model")
        common = dict(
            source="batchcompact",
            file=str(path),
            line=index,
            session_id=record.get("session_id") or input_path,
            project=str(Path(input_path).parent) if input_path else None,
            timestamp=when,
            provider=model.split("/", 1)[0] if isinstance(model, str) and "/" in model else None,
            model=model,
        )
        written = record.get("written_entries") or []
        if written:  # one row per entry written, keyed like the same entry read from the session file
            for entry in written:
                rows.add(
                    **common,
                    kind=entry.get("kind") or "compaction",
                    input_tokens=max(as_int(entry.get("input")) - as_int(entry.get("cache_read"))
                                     - as_int(entry.get("cache_write")), 0),
                    output_tokens=as_int(entry.get("output")),
                    cache_read_tokens=as_int(entry.get("cache_read")),
                    cache_write_tokens=as_int(entry.get("cache_write")),
                    recorded_cost_usd=as_float(entry.get("cost_usd")),
                    dedupe_key=entry_key(common["session_id"], entry.get("entry_id")),
                )
            continue
        # Branch summaries (run --branch-summaries) are their own kind; the compaction gets the rest.
        branch_prompt = as_int(record.get("branch_prompt_tokens"))
        branch_output = as_int(record.get("branch_completion_tokens"))
        branch_cost = as_float(record.get("branch_cost_usd"))
        if as_int(record.get("branch_calls")) > 0:
            rows.add(
                **common,
                kind="branch_summary",
                input_tokens=branch_prompt,
                output_tokens=branch_output,
                cache_read_tokens=0,
                cache_write_tokens=0,
                recorded_cost_usd=branch_cost,
            )
        cost = as_float(record.get("cost_usd"))
        if as_int(record.get("calls")) > as_int(record.get("branch_calls")):
            rows.add(
                **common,
                kind="compaction",
                input_tokens=max(prompt - cache_read - cache_write - branch_prompt, 0),
                output_tokens=max(as_int(record.get("completion_tokens")) - branch_output, 0),
                cache_read_tokens=cache_read,
                cache_write_tokens=cache_write,
                recorded_cost_usd=None if cost is None else cost - (branch_cost or 0.0),
            )
