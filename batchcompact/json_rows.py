"""The one JSON shape of every command's `--format json`: an object whose `rows` come first, one row per
line, then the command's other keys (`totals` and the rest), one per line:

    {"rows": [
    {"path": "a.jsonl", ...},
    {"path": "b.jsonl", ...}
    ],
    "totals": {"sessions": 2, ...},
    "exit_code": 0
    }

It is one JSON document (`json.load` reads it whole), and it streams: a row is written as it is made, and
`grep`/`head` see one row per line. Standard library only (the report and the CLI both write it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TextIO

from batchcompact.core.jsontypes import JsonValue


def write_rows_object(rows: Iterable[JsonValue], out: TextIO, rest: Mapping[str, JsonValue]
                      | Callable[[], Mapping[str, JsonValue]] | None = None,
                      default: Callable[[object], JsonValue] | None = None) -> int:
    """Write `{"rows": [...], **rest}` in the shape above; `rest` may be a callable, called after the rows
    (totals added up while they were written). Returns the number of rows."""
    count = 0
    out.write('{"rows": [')
    for row in rows:
        out.write(",\n" if count else "\n")
        out.write(json.dumps(row, ensure_ascii=False, default=default))
        count += 1
    out.write("\n]" if count else "]")
    extra = rest() if callable(rest) else (rest or {})
    for key, value in extra.items():
        if key != "rows":
            out.write(f",\n{json.dumps(key)}: {json.dumps(value, ensure_ascii=False, default=default)}")
    out.write("\n}\n")
    return count


def rows_object_text(doc: Mapping[str, JsonValue], default: Callable[[object], JsonValue] | None = None) -> str:
    """A document that holds `rows` as text in the shape above (its other keys after the rows, in order)."""
    import io

    buffer = io.StringIO()
    write_rows_object(doc.get("rows") or [], buffer, {k: v for k, v in doc.items() if k != "rows"}, default)
    return buffer.getvalue()
