"""The cold report's rows (`fast.py`) as the renderers read them: plain dicts behind the two things they use
of a polars frame (`height`, `iter_rows`), and CSV written as polars' `write_csv` writes the frame, so both
engines print the same bytes (`tests/test_report_fast.py`). Standard library only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import cast

from batchcompact.core.times import iso_time


class RowList:
    """Report rows as dicts, read by the renderers through the two things they use of a polars frame."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    @property
    def height(self) -> int:
        return len(self.rows)

    def iter_rows(self, *, named: bool = True) -> Iterator[dict]:
        return iter(self.rows)

    def csv(self, columns: list[str]) -> str:
        """The rows as polars' `write_csv` writes the frame (`models` and `agents` joined by ';')."""
        lines = [",".join(columns)]
        for row in self.rows:
            lines.append(",".join(_csv_cell(row[c], c in ("models", "agents")) for c in columns))
        return "\n".join(lines) + "\n"


# Times in CSV as in JSON (ISO 8601, `+00:00`), not polars' default `+0000`: one form across formats.
CSV_DATETIME = "%Y-%m-%dT%H:%M:%S%.6f%:z"


def _csv_cell(value: object, joined: bool) -> str:
    if joined:
        value = ";".join(cast("list[str]", value))  # `models`, `agents`: lists of names
    if value is None:
        return ""
    if isinstance(value, str):
        if value == "" or any(ch in value for ch in ',"\n\r'):
            return '"' + value.replace('"', '""') + '"'
        return value
    if isinstance(value, float):
        return csv_float(value)
    if isinstance(value, datetime):
        return iso_time(value)  # CSV_DATETIME's, polars' with the frame
    return str(value)


def csv_float(value: float) -> str:
    """A float as polars writes it: Python's shortest repr, but 1e-5 <= |x| < 1e-4 in decimals and
    negative exponents without a leading zero (1e-7, not 1e-07)."""
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if not e or exponent[0] != "-":
        return text
    power = int(exponent)
    if power == -5:
        sign = "-" if mantissa.startswith("-") else ""
        return sign + "0.0000" + mantissa.lstrip("-").replace(".", "").rstrip("0").ljust(1, "0")
    return f"{mantissa}e{power}"
