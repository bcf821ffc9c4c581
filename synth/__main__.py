"""Command line: `python -m synth {corpus,samples,pi,claude,codex} ...`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .claude import ClaudeSpec, write_claude_session
from .codex import CodexSpec, write_codex_session
from .corpus import FORMATS, parse_size, write_corpus
from .pi import PiSpec, write_pi_session
from .samples import write_samples


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m synth", description="Generate deterministic synthetic agent sessions."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    corpus = sub.add_parser("corpus", help="a benchmark corpus of many files with a long-tailed size mix")
    corpus.add_argument("--out", required=True, type=Path, help="output folder (outside the repo)")
    corpus.add_argument("--total", default="100MB", help="total size, e.g. 1GB, 250MB (default 100MB)")
    corpus.add_argument("--seed", type=int, default=1)
    corpus.add_argument("--formats", default=",".join(FORMATS), help="comma-separated: pi,claude,codex")
    corpus.add_argument("--workers", type=int, default=None, help="processes (default: CPUs, at most 4)")
    samples = sub.add_parser("samples", help="write the bundled sample_sessions/")
    samples.add_argument("out", type=Path)
    for name in ("pi", "claude", "codex"):
        one = sub.add_parser(name, help=f"one {name} session")
        one.add_argument(
            "out", type=Path, help="file (pi) or root folder (claude: projects/, codex: sessions/)"
        )
        one.add_argument("--seed", type=int, default=1)
        one.add_argument("--size", default=None, help="target size, e.g. 2MB")
        one.add_argument("--turns", type=int, default=None, help="number of turns instead of a size")
        if name == "pi":
            one.add_argument("--model", default="claude-sonnet-4-5")
            one.add_argument("--branches", type=int, default=0, help="abandoned branches (nested)")
            one.add_argument("--compaction", action="store_true", help="an earlier compaction at 25%%")
            one.add_argument("--huge-last-turn", type=int, default=0, metavar="TOKENS")
            one.add_argument("--legacy-v1", action="store_true")
            one.add_argument("--malformed", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    if args.command == "corpus":
        formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
        try:
            rows = write_corpus(args.out, args.total, seed=args.seed, formats=formats, workers=args.workers)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        total = sum(row["bytes"] for row in rows)
        elapsed = time.perf_counter() - started
        print(
            f"{len(rows)} files, {total / 1e6:.1f} MB in {elapsed:.1f} s ({total / 1e6 / elapsed:.0f} MB/s) -> {args.out}"
        )
        return 0
    if args.command == "samples":
        manifest = write_samples(args.out)
        for path, info in manifest["files"].items():
            print(f"{info['bytes']:>10,}  {path}")
        for path, info in manifest["broken"]["files"].items():
            print(f"{info['bytes']:>10,}  examples/broken/{path}")
        return 0
    size = parse_size(args.size) if args.size else None
    if size is None and args.turns is None:
        size = 200_000
    if args.command == "pi":
        spec = PiSpec(
            seed=args.seed,
            target_bytes=size,
            turns=args.turns,
            model=args.model,
            branch_at=tuple(0.3 + 0.6 * i / max(1, args.branches) for i in range(args.branches)),
            compaction_at=0.25 if args.compaction else None,
            huge_last_turn_tokens=args.huge_last_turn,
            legacy_v1=args.legacy_v1,
            malformed=args.malformed,
        )
        result = write_pi_session(args.out, spec)
    elif args.command == "claude":
        result = write_claude_session(
            args.out, ClaudeSpec(seed=args.seed, target_bytes=size, turns=args.turns)
        )
    else:
        result = write_codex_session(args.out, CodexSpec(seed=args.seed, target_bytes=size, turns=args.turns))
    print(f"{result.bytes:,} bytes, {result.lines} lines -> {result.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
