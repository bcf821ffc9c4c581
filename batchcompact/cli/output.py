"""Writing rows as a table, JSON, CSV or Parquet. stdout carries results; stderr carries the rest."""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeAlias, TypeVar

import click

from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.times import iso_text
from batchcompact.core.words import COUNTED_NOUNS, plural
from batchcompact.pipeline import statuses

# Any: a click command function takes each option's value by name, each of its option's own type
_Command = TypeVar("_Command", bound=Callable[..., Any])
# What a machine format writes after the rows: a JSON object, or a function that gives it once they are written.
Summary: TypeAlias = JsonObject | Callable[[], JsonObject] | None


def _cell(value: object, cut: bool = True) -> str:
    """A value as a table cell; `cut`: a text past 60 characters ends in '…' (a terminal's table)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}" if value < 100 else f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return str(len(value))
    text = str(value)
    return text if len(text) <= 60 or not cut else text[:59] + "…"


LEFT_ALIGNED = frozenset({"status", "model", "reason", "format", "source"})
STATUS_COLORS = {statuses.PLAN_COMPACT: "yellow", statuses.COMPACTED: "green", statuses.PLAN_SKIP: None,
                 statuses.SKIPPED: None, statuses.PLAN_ERROR: "red", statuses.FAILED: "red", statuses.YOUNG: "cyan",
                 statuses.KNOWN_INVALID: "magenta"}


# Numbers a reason's kind keeps: those of an address (a URL, an IP address, host:port) and of a code (HTTP
# 503, errno 28, Error code: 429): two reasons that differ in them are two kinds of failure.
KEPT_NUMBERS = re.compile(
    r"[a-z][a-z0-9+.-]*://[^\s,;)]+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?|\blocalhost:\d+"
    r"|\b(?:HTTP|status|code|errno)\b[\s:]*\d+", re.IGNORECASE)
FIGURE = re.compile(r"(?<![\w.-])\d[\d,.]*(?![\w-])")  # a count, a size, a line number: per file
ONE_OF = re.compile(r"(?<![\w.-])1 (" + "|".join(sorted(COUNTED_NOUNS, key=len, reverse=True)) + r")\b(?!s)")


def reason_kind(reason: str | None, min_age: str = "") -> str:
    """A reason without the per-file figures, so skips and failures can be counted by kind: counts, sizes
    and line numbers become N; an address or a code stays (`cannot reach http://127.0.0.1:8000/v1`)."""
    text = (reason or "no reason given").strip()
    if "--min-age" in text:
        return f"modified within --min-age {min_age} (live?)"
    if text.startswith("known invalid since"):
        return "known invalid (unchanged since first reported; --strict fails them)"
    if text.startswith("internal error:"):
        return "internal error"
    text = re.sub(r"\s*\([^)]*\d[^)]*\)", _figures_aside, text)  # "(12,345 <= 100,000 tokens)"
    text = re.sub(r"^\S+:\d+:\s*(error:\s*)?", "", text).strip()  # "path:line: error: ..." -> the problem
    text = re.sub(r"^line \d[\d,]*:\s*", "", text)  # "line 5: invalid JSON": the kind is "invalid JSON"
    text = re.sub(r" at column \d+$", "", text)  # where on the line is per file too
    text = ONE_OF.sub(lambda m: f"N {plural(m.group(1))}", text)  # "1 attempt" is of the kind "N attempts"
    parts, end = [], 0
    for kept in KEPT_NUMBERS.finditer(text):
        parts += [FIGURE.sub("N", text[end:kept.start()]), kept.group()]
        end = kept.end()
    return "".join([*parts, FIGURE.sub("N", text[end:])])


def _figures_aside(match: re.Match) -> str:
    """A parenthesis of figures, dropped; one that holds an address or a code is part of the kind."""
    return match.group() if KEPT_NUMBERS.search(match.group()) else ""


def middle_ellipsis(text: str, width: int) -> str:
    """`/home/me/…/project/session.jsonl`: keep both ends of a path, which say the most."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = (width - 1) * 3 // 5
    head = width - 1 - tail
    return text[:head] + "…" + text[len(text) - tail:]


def table_width(out: TextIO | None = None) -> int | None:
    """Width to fit: the terminal's when writing to one, else $COLUMNS if set, else no limit (pipes, files)."""
    import os
    import shutil

    out = out if out is not None else sys.stdout
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def _fit(columns: list[tuple[str, str]], widths: list[int], limit: int, path_index: int | None,
         drop_first: Sequence[str] = ()) -> tuple[list[int], list[int]]:
    """Column indexes to show and their widths: shrink the path and reason columns, then drop columns
    (`drop_first` in order, then from the right; the first column, status and reason stay), then shrink
    the path column further."""
    keep = list(range(len(columns)))
    natural = list(widths)
    widths = list(widths)
    keys = [key for key, _ in columns]

    def total() -> int:
        return sum(widths[i] for i in keep) + 2 * (len(keep) - 1)

    def shrink(index: int | None, floor: int) -> None:
        if index is not None and total() > limit:
            widths[index] = max(min(floor, widths[index]), widths[index] - (total() - limit))

    reason_index = keys.index("reason") if "reason" in keys else None
    shrink(path_index, 32)
    shrink(reason_index, 24)
    order = [keys.index(k) for k in drop_first if k in keys]
    order += [i for i in reversed(keep) if i not in order]
    order = [i for i in order if i != 0 and i not in (path_index, reason_index) and keys[i] != "status"]
    while total() > limit and order:
        keep.remove(order.pop(0))
    shrink(path_index, 12)
    shrink(reason_index, 12)
    for index in (reason_index, path_index):  # room freed by dropped columns goes back
        if index is not None and total() < limit:
            widths[index] = min(natural[index], widths[index] + limit - total())
    return keep, widths


def format_table(rows: Sequence[JsonObject], columns: Sequence[tuple[str, str]], width: int | None = None,
                 color: bool = False, drop_first: Sequence[str] = ()) -> str:
    """An aligned text table that fits `width` (None: no limit). `columns` are (key, heading) pairs;
    path columns lose their middle first, then columns are dropped from the right. Without a width (a
    pipe, a file) no cell is cut: a reason is read whole."""
    columns = list(columns)
    cells = [[heading for _, heading in columns]]
    cells += [[str(row.get(key)) if "path" in key and row.get(key) else _cell(row.get(key), width is not None)
               for key, _ in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    path_index = next((i for i, (key, _) in enumerate(columns) if "path" in key), None)
    keep = list(range(len(columns)))
    if width is not None:
        keep, widths = _fit(columns, widths, width, path_index, drop_first)
    left = [i == 0 or key in LEFT_ALIGNED for i, (key, _) in enumerate(columns)]
    status_index = next((i for i, (key, _) in enumerate(columns) if key == "status"), None)
    lines = []
    for index, row in enumerate(cells):
        parts = []
        for i in keep:
            text = row[i]
            if len(text) > widths[i]:
                text = middle_ellipsis(text, widths[i]) if i == path_index else text[: widths[i] - 1] + "…"
            padded = text.ljust(widths[i]) if left[i] else text.rjust(widths[i])
            if color and index > 0 and i == status_index and STATUS_COLORS.get(row[i]):
                padded = click.style(padded, fg=STATUS_COLORS[row[i]])
            elif color and index == 0:
                padded = click.style(padded, bold=True)
            parts.append(padded)
        lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("  ".join("-" * widths[i] for i in keep))
    return "\n".join(lines)


def print_table(rows: Sequence[JsonObject], columns: Sequence[tuple[str, str]], out: TextIO,
                drop_first: Sequence[str] = ()) -> None:
    """A table fitted to where it goes, coloured only on a terminal without NO_COLOR."""
    from batchcompact.cli.config import color_enabled

    out.write(format_table(rows, columns, width=table_width(out), color=color_enabled(out),
                           drop_first=drop_first) + "\n")


SPOOL_BYTES = 16 << 20  # machine output held in memory up to this size before it spills to a temp file


@contextmanager
def open_output(path: str | None, whole: bool = False) -> Iterator[TextIO]:
    """FILE opened for writing and renamed into place once written whole (outfile.py), or stdout (left
    open). `whole`: standard output too gets nothing unless the block ends without an exception (held in
    a spooled buffer, then copied): a program reading JSON, JSONL or CSV never gets half of it followed by
    an error, just as a FILE is never left half written."""
    if not path and whole:
        import shutil
        import tempfile

        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+", encoding="utf-8",
                                           newline="") as buffer:
            yield buffer  # type: ignore[misc]  # SpooledTemporaryFile[str] is no TextIO to its stub; its writer uses write() only
            buffer.seek(0)
            shutil.copyfileobj(buffer, sys.stdout)
        return
    if not path:
        yield sys.stdout
        return
    from batchcompact.outfile import open_text

    with open_text(path) as handle:
        yield handle


def write_csv_rows(rows: Iterable[JsonObject], columns: Sequence[str], out: TextIO) -> int:
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore")
    writer.writeheader()
    count = 0
    for row in rows:
        writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        count += 1
    return count


FORMATS = ("table", "json", "jsonl", "csv", "parquet")


class FormatChoice(click.Choice[str]):
    """A --format choice that also accepts old names (e.g. `text` for `table`) without listing them."""

    def __init__(self, choices: Sequence[str], aliases: dict[str, str] | None = None) -> None:
        super().__init__(list(choices))
        self.aliases = aliases or {}

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if isinstance(value, str) and value in self.aliases:
            if ctx is not None:
                from batchcompact.cli.command import deprecated

                deprecated(ctx, f"--format {value}", f"--format {self.aliases[value]}")
            return self.aliases[value]
        return super().convert(value, param, ctx)


def _json_flag(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        from batchcompact.cli.command import deprecated

        deprecated(ctx, "--json", "--format json")
    return value


def output_options(formats: tuple[str, ...] = FORMATS, aliases: dict[str, str] | None = None,
                   dir_okay: bool = False) -> Callable[[_Command], _Command]:
    """--format and -o/--output FILE (the same on every command), plus the hidden old --json flag."""

    def decorator(func: _Command) -> _Command:
        func = click.option("--json", "json_flag", is_flag=True, hidden=True, callback=_json_flag,
                            help="Deprecated: use --format json.")(func)
        func = click.option("--output", "-o", type=click.Path(dir_okay=dir_okay), default=None, metavar="FILE",
                            callback=None if dir_okay else _writable,
                            help="Write the result to FILE instead of stdout"
                                 + (" (parquet needs it)." if "parquet" in formats else "."))(func)
        func = click.option("--format", "fmt", type=FormatChoice(formats, aliases), default="table",
                            show_default=True, help=_format_help(formats))(func)
        return func

    return decorator


FORMAT_HELP = {"table": "table for people", "json": "json (one object with a `rows` list)",
               "jsonl": "jsonl (one row per line)", "csv": "csv", "parquet": "parquet (needs -o FILE)"}


def _format_help(formats: Sequence[str]) -> str:
    """--format's help, naming only the formats this command offers (`show` has no csv or parquet)."""
    return "; ".join(FORMAT_HELP.get(name, name) for name in formats) + "."


def _writable(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """-o FILE whose folder is missing or cannot be written in is refused before the command's work;
    `-o -` is standard output, as no -o."""
    if value == "-":
        return None
    check_output(value, "-o/--output")
    return value


def folder_checked(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An output FOLDER option (`run --output-dir`, `--report-dir`) checked while the options are parsed,
    before any work, as -o FILE is (outfile.check_folder): a usage error naming the option."""
    from batchcompact.errors import UsageError
    from batchcompact.outfile import check_folder

    try:
        check_folder(value, param.opts[0] if param.opts else param.name or "FOLDER")
    except UsageError as exc:
        raise click.UsageError(str(exc)) from exc
    return value


def check_output(path: str | None, option: str, made: str | None = None) -> None:
    """Refuse, before the command's work, an output FILE that cannot be written (outfile.check_writable)
    or that is a session transcript: `plan ARCHIVE -o ARCHIVE/s.jsonl` would put rows over a session. A
    FILE inside the folder `made` (`run`'s --output-dir, which the run makes) may be in a folder not there
    yet: the command makes it before it writes the FILE."""
    from batchcompact.errors import UsageError
    from batchcompact.outfile import check_writable

    try:
        check_writable(path, option, made=made)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from exc
    if path and os.path.isfile(path):
        from batchcompact.agents import session_suffixes
        from batchcompact.formats.detect import detect_session_agent

        try:
            agent = detect_session_agent(path) if path.endswith(session_suffixes()) else None
        except Exception:  # a file that cannot even be probed is no transcript to protect
            agent = None
        if agent is not None:
            raise click.UsageError(f"{option} {path}: that is a {agent} session transcript; results are never "
                                   "written over a session (name another file)")


def pick_format(fmt: str, json_flag: bool) -> str:
    return "json" if json_flag and fmt == "table" else fmt


def write_rows(fmt: str, output: str | None, rows: Iterable[JsonObject], columns: Sequence[str] | None = None,
               summary: Summary = None) -> int:
    """Rows in a machine format. json: `{"rows": [...], **summary()}` (summary called after the rows; one
    row per line, then one key per line: json_rows.py);
    jsonl: one row per line; csv: `columns` (or the first row's keys); parquet: to `output`."""
    require_output(fmt, output)
    if fmt == "parquet":
        import polars as pl

        collected = list(rows)
        frame = pl.DataFrame(collected, infer_schema_length=None) if collected else pl.DataFrame(
            {c: [] for c in columns or ()})
        from batchcompact.outfile import replacing

        assert output is not None  # require_output refused parquet without one
        with replacing(output) as where:
            frame.write_parquet(where)
        return len(collected)
    with open_output(output, whole=True) as out:
        if fmt == "json":  # the one shape of every command (json_rows.py, docs/cli.md)
            from batchcompact.json_rows import write_rows_object

            counted_rows = [0]

            def counting(items: Iterable[JsonObject]) -> Iterator[JsonObject]:
                for item in items:
                    counted_rows[0] += 1
                    yield item

            def rest() -> JsonObject:  # `totals` in every command's JSON: at least how many rows
                extra = dict(summary() if callable(summary) else (summary or {}))
                return extra if "totals" in extra else {"totals": {"rows": counted_rows[0]}, **extra}

            return write_rows_object(counting(rows), out, rest, default=_plain)
        if fmt == "jsonl":
            count = 0
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False, default=_plain) + "\n")
                count += 1
            return count
        if fmt == "csv":
            iterator = iter(rows)
            first = next(iterator, None)
            names = list(columns) if columns else list(first or {})
            if first is None:
                return write_csv_rows([], names, out)
            import itertools

            return write_csv_rows(itertools.chain([first], iterator), names, out)
    raise click.UsageError(f"unknown format {fmt!r}")


def _plain(value: object) -> str:
    """A value JSON has no type for: a time in ISO 8601 (`2026-11-26T13:29:32.524680+00:00`, the form the
    report's JSON and CSV use), anything else as its text."""
    from datetime import date

    return iso_text(value) if isinstance(value, date) else str(value)


def _csv_cell(value: object) -> object:
    from datetime import date

    if isinstance(value, date):
        return iso_text(value)
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return ";".join(value)
        return json.dumps(value, ensure_ascii=False, default=_plain)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, default=_plain)
    return value


def require_output(fmt: str, output: str | None) -> None:
    if fmt == "parquet" and not output:
        raise click.UsageError("--format parquet needs --output FILE")


def echo_err(text: str) -> None:
    click.echo(text, err=True)


def old_output_dir(ctx: click.Context, command: str, output: str | None, output_dir: str | None, fmt: str,
                   json_flag: bool) -> tuple[str | None, str | None]:
    """(output_dir, output): the old `COMMAND -o DIR` meant the output folder; -o is now the results FILE on
    every command. An -o with no --output-dir that names a folder, or that comes with the table format
    (whose results are not a file), is taken as the folder, with a deprecation warning. `-o -` is
    standard output."""
    if output == "-":
        return output_dir, None
    if output and not output_dir and (fmt == "table" or json_flag or Path(output).is_dir()):
        from batchcompact.cli.command import deprecated

        deprecated(ctx, f"{command} -o DIR", "--output-dir DIR (-o/--output is now the results FILE)")
        return output, None
    check_output(output, "-o/--output", made=output_dir)  # a results FILE: checked before the work
    return output_dir, output


TEXT_FLOOR = 8  # a text column elided to fit keeps at least this many characters


def fit_rendered_table(text: str, width: int | None) -> str:
    """An already rendered table (a header, a rule of dashes per column, rows, a rule, a total row; other lines
    around it untouched) made to fit `width` by eliding its text columns, the widest first, never below
    TEXT_FLOOR: paths lose their middle, other values their end ('…'). Numbers are never cut. None: as is
    (piped output keeps every value whole)."""
    lines = text.split("\n")
    rules = [i for i, line in enumerate(lines) if line and set(line) <= {"-", " "} and "--" in line]
    if width is None or not rules or rules[0] != 1:
        return text
    end = min(rules[-1] + 1, len(lines) - 1)  # the total row after the last rule
    if max(len(line) for line in lines[: end + 1]) <= width:
        return text
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[1])]
    table = [[line.ljust(spans[-1][1])[a:b] for a, b in spans] for line in lines[: end + 1]]
    header, body = table[0], [row for i, row in enumerate(table) if i not in rules and i != 0]
    text_columns = [c for c, cell in enumerate(header)
                    if cell[:1] != " " and (cell[-1:] == " " or any(row[c][-1:] == " " and row[c].strip() for row in body))]
    widths = [b - a for a, b in spans]
    total = sum(widths) + 2 * (len(widths) - 1)
    while total > width:
        candidates = [c for c in text_columns if widths[c] > TEXT_FLOOR]
        if not candidates:
            break
        column = max(candidates, key=lambda c: (widths[c], -c))
        cut = min(total - width, widths[column] - TEXT_FLOOR,
                  max(1, widths[column] - max((widths[c] for c in candidates if c != column), default=0)))
        widths[column] -= cut
        total -= cut
    out = []
    for index, row in enumerate(table):
        if index in rules:
            out.append("  ".join("-" * w for w in widths))
            continue
        cells = []
        for c, cell in enumerate(row):
            if c in text_columns and len(cell.rstrip()) > widths[c]:
                value = cell.rstrip()
                cell = middle_ellipsis(value, widths[c]) if "/" in value else value[: widths[c] - 1] + "…"
            cells.append(cell[: widths[c]].ljust(widths[c]) if c in text_columns else cell)
        out.append("  ".join(cells).rstrip())
    return "\n".join(out + lines[end + 1:])
