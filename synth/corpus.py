"""A benchmark corpus: many generated sessions with a long-tailed size distribution, in on-disk layouts.

`plan_corpus` is pure (seed + total → list of items); `write_corpus` writes them, in parallel processes.
Each file depends only on its own item, so the bytes do not depend on the number of workers.
Layout under the output folder:

    pi/--home-user-proj--/<time>_<uuid>.jsonl
    claude/projects/-home-user-proj/<uuid>.jsonl        (+ <uuid>/subagents/agent-<id>.jsonl)
    codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl
"""

from __future__ import annotations

import json
import math
import os
import random
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from .claude import ClaudeSpec, write_claude_session
from .codex import CodexSpec, write_codex_session
from .pi import PiSessionWriter, PiSpec

FORMATS = ("pi", "claude", "codex")
KB, MB, GB = 1000, 1000**2, 1000**3
_UNITS = {"": 1, "B": 1, "K": KB, "KB": KB, "M": MB, "MB": MB, "G": GB, "GB": GB}


def parse_size(text: str | int) -> int:
    """'1GB', '250MB', '64KB' or a byte count (decimal units: 1 MB = 1,000,000 bytes)."""
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMG]?B?)\s*", text.upper())
    if not match:
        raise ValueError(f"cannot read size {text!r}: use a number with an optional KB, MB or GB suffix")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


@dataclass(frozen=True)
class CorpusItem:
    """One file to generate."""

    index: int
    format: str
    target_bytes: int
    seed: int


def _log_uniform(rng: random.Random, low: float, high: float) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def plan_corpus(total_bytes: int, seed: int = 1, formats: tuple[str, ...] = FORMATS) -> list[CorpusItem]:
    """File sizes that add up to about `total_bytes`: ~90% of files 10 KB-1 MB, ~8% 1-20 MB, ~2% 20-100 MB."""
    unknown = set(formats) - set(FORMATS)
    if unknown or not formats:
        raise ValueError(f"unknown format(s) {sorted(unknown)}: choose from {', '.join(FORMATS)}")
    rng = random.Random(f"corpus-{seed}")
    items: list[CorpusItem] = []
    remaining = total_bytes
    while remaining >= 4 * KB:
        roll = rng.random()
        if roll < 0.02 and remaining >= 20 * MB:
            size = _log_uniform(rng, 20 * MB, min(100 * MB, remaining))
        elif roll < 0.10 and remaining >= MB:
            size = _log_uniform(rng, MB, min(20 * MB, remaining))
        else:
            size = min(_log_uniform(rng, 10 * KB, MB), remaining)
        items.append(CorpusItem(len(items), rng.choice(formats), size, rng.getrandbits(31)))
        remaining -= size
    return items


def pi_dir_name(cwd: str) -> str:
    """pi's session folder for a cwd: leading '/' removed, '/', '\\' and ':' replaced by '-', wrapped in '--'."""
    return "--" + re.sub(r"[/\\:]", "-", cwd.lstrip("/\\")) + "--"


def _pi_spec(item: CorpusItem, pool_seed: int) -> PiSpec:
    rng = random.Random(item.seed)
    model = rng.choice(
        ("claude-sonnet-4-5", "claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "gpt-4.1", "gpt-5")
    )
    switches = (
        ((rng.uniform(0.3, 0.8), rng.choice(("claude-opus-4-5", "gpt-4.1", model))),)
        if rng.random() < 0.2
        else ()
    )
    branches = (
        tuple(sorted(rng.uniform(0.2, 0.9) for _ in range(rng.choice((1, 1, 2, 3)))))
        if rng.random() < 0.2
        else ()
    )
    return PiSpec(
        seed=item.seed,
        target_bytes=item.target_bytes,
        model=model,
        model_switches=switches,
        branch_at=branches,
        branch_summary=rng.random() < 0.5,
        auto_compact_tokens=170_000,
        thinking_level=rng.choice(("off", "low", "medium", "high")),
        pool_seed=pool_seed,
    )


def write_item(out: str | Path, item: CorpusItem, pool_seed: int) -> dict:
    """Generate one corpus file; returns its manifest row."""
    out = Path(out)
    if item.format == "pi":
        writer = PiSessionWriter(_pi_spec(item, pool_seed))
        path = out / "pi" / pi_dir_name(writer.project.cwd) / writer.file_name()
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.writelines(writer.iter_lines())
        written = writer.result.bytes
    elif item.format == "claude":
        rng = random.Random(item.seed)
        probe = ClaudeSpec(
            seed=item.seed, target_bytes=item.target_bytes, subagent=rng.random() < 0.15, pool_seed=pool_seed
        )
        result = write_claude_session(out / "claude" / "projects", probe)
        path, written = result.path, result.bytes
    else:
        result = write_codex_session(
            out / "codex" / "sessions",
            CodexSpec(seed=item.seed, target_bytes=item.target_bytes, pool_seed=pool_seed),
        )
        path, written = result.path, result.bytes
    return {**asdict(item), "path": str(Path(path).relative_to(out)), "bytes": written}


def _write_star(args: tuple) -> dict:
    return write_item(*args)


def write_corpus(
    out: str | Path,
    total: int | str,
    seed: int = 1,
    formats: tuple[str, ...] = FORMATS,
    workers: int | None = None,
    progress=None,
) -> list[dict]:
    """Write a corpus of about `total` bytes under `out` and `out/corpus.json` (one row per file)."""
    out = Path(out)
    items = plan_corpus(parse_size(total), seed, tuple(formats))
    out.mkdir(parents=True, exist_ok=True)
    workers = workers or min(4, os.cpu_count() or 1)
    jobs = [(out, item, seed) for item in sorted(items, key=lambda i: -i.target_bytes)]
    rows: list[dict] = []
    if workers == 1:
        results = map(_write_star, jobs)
    else:
        from batchcompact.lifecycle import pool_kwargs

        pool = ProcessPoolExecutor(max_workers=workers, **pool_kwargs())  # workers die with the parent
        results = pool.map(_write_star, jobs, chunksize=1)
    for row in results:
        rows.append(row)
        if progress:
            progress(row)
    if workers != 1:
        pool.shutdown()
    rows.sort(key=lambda r: r["index"])
    (out / "corpus.json").write_text(
        json.dumps({"seed": seed, "total": sum(r["bytes"] for r in rows), "files": rows}, indent=1) + "\n"
    )
    return rows
