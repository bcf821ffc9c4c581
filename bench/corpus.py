"""Benchmark corpus: a thin wrapper over `synth.corpus` for the bench suite.

    .venv/bin/python bench/corpus.py --out /tmp/bc-corpus --total 1GB --seed 1 [--formats pi,claude,codex]

is the same as `python -m synth corpus ...`. Import `write_corpus`, `plan_corpus` and
`parse_size` from here (or from the package) in other benchmarks.
"""

from __future__ import annotations

import sys

from synth.__main__ import main as _synth_main
from synth.corpus import FORMATS, parse_size, plan_corpus, write_corpus
from synth.pi import PiSpec, write_pi_session

__all__ = ["FORMATS", "parse_size", "plan_corpus", "write_corpus", "PiSpec", "write_pi_session", "main"]


def main(argv: list[str] | None = None) -> int:
    """`corpus` command of the synth CLI."""
    return _synth_main(["corpus", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
