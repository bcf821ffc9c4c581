"""Read benchmark (issue 2): the pi reader's throughput next to a bare `json.loads` of the same lines.

    .venv/bin/python bench/bench_read.py              # fixtures + a generated 40 MB pi session
    .venv/bin/python bench/bench_read.py --quick      # fixtures + 8 MB, fewer repeats
    .venv/bin/python bench/bench_read.py --size 200MB --repeat 3

Both sides run in the same process on files already in the page cache; each figure is the best of
`--repeat` runs. The ratio (reader / bare) is the number to compare over time: machines here are
noisy, ratios much less so. Aim (issue 2): ratio >= 0.5. `run()` returns the rows for `python -m bench`.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from batchcompact.synth.corpus import parse_size

try:
    from bench.figures import emit
except ImportError:  # run as a script from bench/
    from figures import emit
from batchcompact.synth.pi import PiSpec, write_pi_session

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures" / "pi"

try:  # optional second baseline
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None


def _bare(loads: Callable[[bytes], object]) -> Callable[[Path], int]:
    def parse(path: Path) -> int:
        count = 0
        with open(path, "rb") as handle:
            for line in handle:
                try:
                    loads(line)
                except ValueError:
                    pass
                count += 1
        return count

    return parse


def _best(func: Callable[[Path], object], path: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        func(path)
        best = min(best, time.perf_counter() - start)
    return best


def _reader() -> Callable[[Path], object] | None:
    try:
        from batchcompact.formats.pi import read_pi_session
    except ImportError:
        return None
    return read_pi_session


def run(quick: bool = False, size: int | None = None, repeat: int | None = None, seed: int = 1) -> list[dict]:
    """Measure every fixture and one generated file; one row per file with MB/s figures."""
    reader = _reader()
    if reader is None:
        raise SystemExit("batchcompact.formats.pi.read_pi_session is not available yet: nothing to measure")
    repeat = repeat or (2 if quick else 5)
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
            row["reader"] = mb / _best(reader, path, repeat)
            row["json"] = mb / _best(_bare(json.loads), path, repeat)
            if orjson is not None:
                row["orjson"] = mb / _best(_bare(orjson.loads), path, repeat)
            row["ratio"] = row["reader"] / row["json"]
            rows.append(row)
    return rows


def format_rows(rows: list[dict]) -> str:
    """A fixed-width table."""
    has_orjson = any("orjson" in r for r in rows)
    head = f"{'file':<28} {'MB':>7} {'reader MB/s':>12} {'json MB/s':>10}"
    head += f" {'orjson MB/s':>12}" if has_orjson else ""
    lines = [head + f" {'reader/json':>12}"]
    for r in rows:
        line = f"{r['file']:<28} {r['mb']:>7.1f} {r['reader']:>12.1f} {r['json']:>10.1f}"
        line += f" {r.get('orjson', float('nan')):>12.1f}" if has_orjson else ""
        lines.append(line + f" {r['ratio']:>12.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="8 MB generated file, 2 repeats")
    parser.add_argument("--size", default=None, help="generated pi file size, e.g. 40MB")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rows = run(args.quick, parse_size(args.size) if args.size else None, args.repeat, args.seed)
    print(format_rows(rows))
    worst = min(r["ratio"] for r in rows)
    print(f"\nslowest reader/json ratio: {worst:.2f} (aim >= 0.50)")
    for row in rows:
        emit("read", f"pi reader, {row['file']}", row["reader"], "MB/s", "json.loads", row["json"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
