"""Read benchmark: the readers' throughput next to a bare `orjson.loads` of the same lines (the fastest parser).

    .venv/bin/python bench/bench_read.py              # fixtures + a generated 40 MB pi session
    .venv/bin/python bench/bench_read.py --quick      # fixtures + 8 MB, fewer repeats
    .venv/bin/python bench/bench_read.py --size 200MB --repeat 3

Both sides run in the same process on files already in the page cache, taking turns in each of
`--repeat` rounds; each figure is the median of its rounds, in CPU time of this process (one thread:
what the machine's load moves least; MB/s are MB per CPU second). Two readers are measured: the line reader (`iter_json_lines`: every line parsed, line
numbers and problems kept) and the whole pi session reader (plus migration, the entry tree, structural
checks). A third row keeps every object `orjson.loads` returns until the file is read, then frees them:
the floor of any reader that returns the parsed lines. Two more measure the lazy design issue 28 named
(keep each line's bytes and the tree's fields, parse `data` on first use): alone, and with every
entry's data then used, as `plan` uses it. The ratios against `orjson.loads` are the numbers to compare over time (aim: line reader
>= 0.8); `json.loads` stays as a second column. `run()` returns the rows for `python -m bench`.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from batchcompact.formats.jsonl import READ_BUFFER

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root: `synth` is not installed
from synth.corpus import parse_size  # noqa: E402
from synth.pi import PiSpec, write_pi_session  # noqa: E402

try:
    from bench.figures import emit
except ImportError:  # run as a script from bench/
    from figures import emit

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures" / "pi"



def _bare(loads: Callable[[bytes], object]) -> Callable[[Path], int]:
    def parse(path: Path) -> int:
        count = 0
        with open(path, "rb", buffering=READ_BUFFER) as handle:  # the readers' buffer: only parsing differs
            for line in handle:
                try:
                    loads(line)
                except ValueError:
                    pass
                count += 1
        return count

    return parse


def _kept(path: Path) -> int:
    """`orjson.loads` of every line with every object kept until the end, then freed: what any reader that
    returns the parsed lines pays at least (the bare baseline drops each object at once, so its memory is
    reused while still in the CPU cache). Under `paused_gc`, as the readers."""
    from batchcompact.formats.jsonl import paused_gc

    loads = orjson.loads
    with paused_gc(), open(path, "rb", buffering=READ_BUFFER) as handle:
        kept = []
        for line in handle:
            try:
                kept.append(loads(line))
            except ValueError:
                pass
        return len(kept)


class _LazyEntry:
    """An entry of the lazy design measured (and not adopted) for issue 28: the line's bytes plus the
    fields the tree needs; `data` parsed again on first use."""

    __slots__ = ("raw", "line", "type", "id", "parent_id", "_data")

    def __init__(self, raw: bytes, line: int, obj: dict) -> None:
        self.raw, self.line, self._data = raw, line, None
        self.type, self.id, self.parent_id = obj.get("type"), obj.get("id"), obj.get("parentId")

    @property
    def data(self) -> dict:
        if self._data is None:
            self._data = orjson.loads(self.raw)
        return self._data


def _lazy(path: Path) -> list:
    """The lazy design's best case: every line parsed (that is what reports a bad line at read time) and
    its message role looked at, then only the bytes and the tree's fields kept; no tree, no checks, no
    problems: less than a reader does, so an upper bound of what it could reach."""
    from batchcompact.core.entries import MESSAGE_ROLES
    from batchcompact.formats.jsonl import paused_gc

    loads = orjson.loads
    entries, flagged = [], []
    with paused_gc(), open(path, "rb", buffering=READ_BUFFER) as handle:
        for lineno, raw in enumerate(handle, 1):
            try:
                obj = loads(raw)
            except ValueError:
                continue
            if type(obj) is dict and obj.get("type") != "session":
                if obj.get("type") == "message":
                    message = obj.get("message")
                    if not isinstance(message, dict) or message.get("role") not in MESSAGE_ROLES:
                        flagged.append(lineno)
                entries.append(_LazyEntry(raw, lineno, obj))
    return entries


def _lazy_used(path: Path) -> int:
    """`_lazy` and then every entry's `data` used, as `plan` does (it reads 99% of the entries, all of
    their bytes, with the default threshold as with --force: the trigger, the token estimate and the
    branches read every message): the lazy design's cost in the pipeline."""
    from batchcompact.formats.jsonl import paused_gc

    with paused_gc():
        entries = _lazy(path)
        used = [entry.data for entry in entries]
    return len(used)


def _interleaved(funcs: dict[str, Callable[[Path], object]], path: Path, repeat: int) -> dict[str, float]:
    """Median seconds of each function over `path`; the functions take turns within each round, so that a
    change of machine load hits every side alike."""
    samples: dict[str, list[float]] = {name: [] for name in funcs}
    for _ in range(repeat):
        for name, func in funcs.items():
            gc.collect()
            start = time.process_time()
            func(path)
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def _line_reader(path: Path) -> int:
    from batchcompact.formats.jsonl import iter_json_lines, paused_gc

    with paused_gc():  # as the session readers use it
        return sum(1 for _ in iter_json_lines(path, []))


def _reader() -> Callable[[Path], object] | None:
    try:
        from batchcompact.adapters.pi.read import read_pi_session
    except ImportError:
        return None
    return read_pi_session


def run(quick: bool = False, size: int | None = None, repeat: int | None = None, seed: int = 1) -> list[dict]:
    """Measure every fixture and one generated file; one row per file with MB/s figures."""
    reader = _reader()
    if reader is None:
        raise SystemExit("batchcompact.adapters.pi.read.read_pi_session is not available yet: nothing to measure")
    repeat = repeat or (3 if quick else 5)
    size = size or (8_000_000 if quick else 40_000_000)
    files = sorted(FIXTURES.glob("*.jsonl")) if FIXTURES.is_dir() else []
    rows = []
    with tempfile.TemporaryDirectory(prefix="bc-bench-read-") as tmp:
        generated = write_pi_session(
            Path(tmp) / "generated.jsonl",
            PiSpec(seed=seed, target_bytes=size, auto_compact_tokens=170_000, branch_at=(0.3, 0.6)),
        ).path
        for path in [*files, generated]:
            mb = path.stat().st_size / 1e6
            path.read_bytes()  # warm the page cache
            row = {"file": path.name if path != generated else f"generated ({mb:.0f} MB)", "mb": mb}
            seconds = _interleaved({"lines": _line_reader, "reader": reader, "json": _bare(json.loads),
                                    "orjson": _bare(orjson.loads), "kept": _kept,
                                    "lazy": _lazy, "lazy_used": _lazy_used}, path, repeat)
            row.update({name: mb / value for name, value in seconds.items()})
            row["ratio"] = row["lines"] / row["orjson"]
            row["session_ratio"] = row["reader"] / row["orjson"]
            rows.append(row)
    return rows


def format_rows(rows: list[dict]) -> str:
    """A fixed-width table."""
    head = f"{'file':<28} {'MB':>7} {'lines MB/s':>11} {'session MB/s':>13} {'orjson MB/s':>12} {'json MB/s':>10}"
    lines = [head + f" {'kept MB/s':>10} {'lines/orjson':>13} {'session/orjson':>15} {'kept/orjson':>12}"
                    f" {'lazy/orjson':>12} {'lazy+used/orjson':>17}"]
    for r in rows:
        lines.append(
            f"{r['file']:<28} {r['mb']:>7.1f} {r['lines']:>11.1f} {r['reader']:>13.1f} {r['orjson']:>12.1f} "
            f"{r['json']:>10.1f} {r['kept']:>10.1f} {r['ratio']:>13.2f} {r['session_ratio']:>15.2f} "
            f"{r['kept'] / r['orjson']:>12.2f} {r['lazy'] / r['orjson']:>12.2f} {r['lazy_used'] / r['orjson']:>17.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 MB generated file, 3 repeats")
    parser.add_argument("--size", default=None, help="generated pi file size, e.g. 40MB")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 5)
    rows = run(args.quick, parse_size(args.size) if args.size else None, repeat, args.seed)
    print(format_rows(rows))
    worst = min(r["ratio"] for r in rows)
    print(f"\nslowest line reader / orjson ratio: {worst:.2f} (aim >= 0.80)")
    for row in rows:
        emit("read", f"line reader, {row['file']}", row["lines"], "MB/s", "orjson.loads", row["orjson"],
             goal="ratio >= 0.8", runs=repeat)
        emit("read", f"pi session reader, {row['file']}", row["reader"], "MB/s", "orjson.loads", row["orjson"],
             goal="ratio >= 0.6", runs=repeat)
        emit("read", f"json.loads, {row['file']}", row["json"], "MB/s", "orjson.loads", row["orjson"], runs=repeat)
        emit("read", f"orjson.loads, every object kept (a reader's floor), {row['file']}", row["kept"], "MB/s",
             "orjson.loads", row["orjson"], runs=repeat)
        emit("read", f"lazy entries, bytes kept, data parsed on use (not adopted), {row['file']}", row["lazy"],
             "MB/s", "orjson.loads", row["orjson"], runs=repeat)
        emit("read", f"lazy entries, then every entry's data used (as plan does), {row['file']}", row["lazy_used"],
             "MB/s", "orjson.loads", row["orjson"], runs=repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
