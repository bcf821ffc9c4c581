"""Which reader a file is for: the agent that wrote it, or batchcompact's own run report.

The line rules are the session readers' (`batchcompact.formats.detect.detect_line`); this module adds
run reports, `.jsonl.zst` files and the other agents' readers (readers.py), which reports read and the
compaction pipeline does not. Rules, in order:
- `compactions*.parquet` -> `batchcompact`;
- a reader claims the file by its name and place (JSON files, SQLite databases, an agent's home
  folder) -> that reader;
- from the first lines (at most `PROBE_LINES`, torn or invalid lines ignored): a reader's `sniff`
  accepts a line -> that reader;
- first object has `type: "session"` -> `pi`;
- an object shaped `{timestamp, type, payload}` with a Codex item type -> `codex`;
- an object with a Claude line type and `sessionId`/`uuid`/`leafUuid`/`messageId` -> `claude`;
- otherwise None (not a transcript).
"""

from __future__ import annotations

import json
from pathlib import Path

from batchcompact.formats.detect import detect_line

PROBE_LINES = 30
TRANSCRIPT_SUFFIXES = (".jsonl", ".jsonl.zst")


def is_run_report(path: Path) -> bool:
    return is_run_report_name(path.name)


def is_run_report_name(name: str) -> bool:
    return name.startswith("compactions") and name.endswith(".parquet")


def is_candidate(path: Path) -> bool:
    """A file worth probing: JSONL (maybe zstd) or a batchcompact run report."""
    return path.name.endswith(TRANSCRIPT_SUFFIXES) or is_run_report(path)


def detect_format(path: str | Path) -> str | None:
    path = Path(path)
    if is_run_report(path):
        return "batchcompact"
    from batchcompact.report import readers

    claimed = readers.claimed_by(str(path))
    if claimed is not None:
        return claimed.name
    if not path.name.endswith(TRANSCRIPT_SUFFIXES):
        return None
    sniffers = [(r.name, readers.load(r.sniff)) for r in readers.READERS if r.sniff]
    from batchcompact.report.lines import open_binary

    with open_binary(path) as fh:
        for number, raw in enumerate(fh, start=1):
            if number > PROBE_LINES:
                break
            if len(raw) > 4 << 20:  # a multi-MB first line is not a header we need to read whole
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            for name, sniff in sniffers:
                if sniff(obj, number == 1):
                    return name
            kind = detect_line(obj, first=number == 1)
            if kind:
                return kind
    return None
