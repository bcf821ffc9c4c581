"""Deterministic generators of realistic synthetic sessions (pi, Claude Code, Codex) for samples and benchmarks.

Stdlib only; every byte follows from the seed (no wall clock). CLI: `python -m synth --help` from the
repository root. Not part of the installed package (pyproject.toml installs `batchcompact*` only): its
users are beside it, `bench/`, `tests/` (pytest puts the root on the path) and the bundled samples.
"""

from .claude import ClaudeSpec, write_claude_session
from .codex import CodexSpec, write_codex_session
from .corpus import parse_size, plan_corpus, write_corpus
from .pi import PiSpec, iter_pi_lines, write_pi_session
from .samples import write_samples

__all__ = [
    "ClaudeSpec",
    "CodexSpec",
    "PiSpec",
    "iter_pi_lines",
    "parse_size",
    "plan_corpus",
    "write_claude_session",
    "write_codex_session",
    "write_corpus",
    "write_pi_session",
    "write_samples",
]
