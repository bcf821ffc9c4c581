"""Which agent wrote a file (any registered agent), or batchcompact's own run report.

The line rules are the session readers' (`batchcompact.formats.detect.detect_line`); this module adds
run reports, `.jsonl.zst` files and the files agents claim by name and place (readers.py), which reports
read and the compaction pipeline does not. Rules:
- `compactions*.parquet` -> `batchcompact`;
- a usage export (`report --by request`: Parquet, CSV or JSON lines, by its content) -> `usage-export`;
- an agent claims the file by name and place (`Agent.files`, `Agent.homes`) -> that agent;
- from the first lines of the file (at most `PROBE_LINES`, torn or invalid lines ignored), each agent's
  `detect_line` in the registry's order, e.g.:
- first object has `type: "session"` -> `pi`;
- an object shaped `{timestamp, type, payload}` with a Codex item type -> `codex`;
- an object with a Claude line type and `sessionId`/`uuid`/`leafUuid`/`messageId` -> `claude`;
- otherwise None (not a transcript).
"""

from __future__ import annotations

from pathlib import Path

from batchcompact.agents import file_detectors
from batchcompact.formats.detect import detect_line, detect_prefix, probe_line

PROBE_LINES = 30


def is_run_report(path: Path) -> bool:
    return is_run_report_name(path.name)


def is_run_report_name(name: str) -> bool:
    return name.startswith("compactions") and name.endswith(".parquet")


def detect_usage_source(path: str | Path) -> str | None:
    """Whose usage the report reads from the file: an agent's name, `batchcompact` (a run report),
    `usage-export` (`report --by request`'s), or None (see the module's doc; `formats.detect.
    detect_session_agent` is the session readers' own: sessions in databases, no run reports or exports)."""
    path = Path(path)
    if is_run_report(path):
        return "batchcompact"
    if path.name.endswith((".parquet", ".csv")):  # a usage export (report --by request), by its content
        from batchcompact.report.export import detect

        return detect(path)
    from batchcompact.report.readers import claimed_by

    claimed = claimed_by(str(path), loose=True)  # the walk took only files claimed strictly; a named one
    if claimed is not None:
        return claimed.name
    from batchcompact.adapters.common.lines import open_binary
    from batchcompact.formats.jsonl import capped_lines

    with open_binary(path, buffer=64 << 10) as fh:
        # a multi-MB line is not a header we need to read whole: passed over, never read whole
        for number, raw in enumerate(capped_lines(fh, limit=4 << 20), start=1):
            if number > PROBE_LINES:
                break
            try:
                obj = probe_line(raw)
            except ValueError:  # a torn line says whose it is by its leading bytes, as plan and validate read it
                kind = detect_prefix(raw, first=number == 1)
                if kind:
                    return kind
                continue
            if not isinstance(obj, dict):
                continue
            if number == 1 and "export_version" in obj and "request_id" in obj:
                return "usage-export"  # report --by request --format jsonl, read back
            kind = detect_line(obj, first=number == 1)
            if kind:
                return kind
    whole = file_detectors()
    if whole:  # formats that are one JSON document, not lines
        with open_binary(path) as fh:
            head = fh.read(64 * 1024)
        for agent in whole:
            if agent.matches_file(path, head):
                return agent.name
    return None
