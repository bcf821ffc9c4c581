"""The bundled `sample_sessions/`: small, deterministic files, each made to show one property.

`write_samples(dir)` writes them, a `manifest.json` with the facts each one was built to have (the tests
check those facts with plain json), and a README. Samples that are broken on purpose go to a folder of their
own (by default `examples/broken/` beside `dir`, with its own manifest and README), so that the first
command of the README, run over `sample_sessions/`, succeeds, and `validate examples/broken` shows off the
error reports.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from .claude import ClaudeSpec, write_claude_session
from .codex import CodexSpec, write_codex_session
from .pi import PiSpec, write_pi_session

PI_SAMPLES: dict[str, tuple[PiSpec, str]] = {
    "big-refactor": (
        PiSpec(
            seed=101,
            target_bytes=1_250_000,
            project="webapp",
            model="claude-sonnet-4-5",
            model_switches=((0.45, "claude-opus-4-5"), (0.7, "claude-sonnet-4-5")),
            start=dt.datetime(2026, 10, 2, 9, 14, tzinfo=dt.UTC),
        ),
        "Far beyond a 128k context window (>= 200k estimated tokens, last usage > 128k); "
        "claude-sonnet-4-5 with a switch to claude-opus-4-5 and back; a label and a session name.",
    ),
    "small-fix": (
        PiSpec(
            seed=102,
            target_bytes=None,
            turns=2,
            project="ledgerkit",
            model="gpt-4.1",
            start=dt.datetime(2026, 10, 3, 16, 2, tzinfo=dt.UTC),
        ),
        "Two short turns, well under any threshold (openai gpt-4.1).",
    ),
    "second-compaction": (
        PiSpec(
            seed=103,
            target_bytes=690_000,
            project="feedcrawler",
            compaction_at=0.2,
            model="gpt-4o",
            start=dt.datetime(2026, 10, 5, 11, 40, tzinfo=dt.UTC),
        ),
        "An earlier compaction (firstKeptEntryId on a user message some turns back), then enough "
        "conversation that the rebuilt context is over gpt-4o's 128k threshold again.",
    ),
    "huge-last-turn": (
        PiSpec(
            seed=104,
            target_bytes=500_000,
            project="tilemapper",
            huge_last_turn_tokens=26_000,
            model="gpt-4o",
            start=dt.datetime(2026, 10, 7, 8, 5, tzinfo=dt.UTC),
        ),
        "The last turn (one user message, then many tool steps) alone exceeds 20k estimated tokens, "
        "so a cut must split it; the whole session is over the threshold.",
    ),
    "branched": (
        PiSpec(
            seed=105,
            target_bytes=1_000_000,
            project="dashboard",
            branch_at=(0.15, 0.3, 0.45),
            nested_branches=True,
            branch_summary=True,
            abandon_fork=True,
            model="gpt-4o",
            start=dt.datetime(2026, 10, 9, 14, 30, tzinfo=dt.UTC),
        ),
        "Nested abandoned branches: the second forks inside the first branch's continuation, the third "
        "returns before the second fork (so an abandoned subtree holds a fork itself); the first left "
        "with a branch_summary entry; the active path is over the threshold.",
    ),
    "legacy-v1": (
        PiSpec(
            seed=106,
            target_bytes=260_000,
            project="proj",
            legacy_v1=True,
            compaction_at=0.6,
            start=dt.datetime(2025, 11, 28, 20, 11, tzinfo=dt.UTC),
        ),
        "Legacy v1: no version, no ids or parentIds, header with provider/modelId/thinkingLevel, "
        "no usage.totalTokens, one compaction with firstKeptEntryIndex (line index, header = 0).",
    ),
    "malformed": (
        PiSpec(
            seed=107,
            target_bytes=45_000,
            project="ledgerkit",
            malformed=True,
            start=dt.datetime(2026, 10, 11, 10, 0, tzinfo=dt.UTC),
        ),
        "Malformed lines: invalid JSON in the middle, a JSON array instead of an object, and a torn "
        "last line without a newline.",
    ),
}

CLAUDE_SAMPLE = ClaudeSpec(
    seed=201,
    target_bytes=1_180_000,
    project="webapp",
    subagent=True,
    auto_compact=False,
    start=dt.datetime(2026, 10, 12, 13, 20, tzinfo=dt.UTC),
)
CODEX_SAMPLE = CodexSpec(
    seed=301,
    target_bytes=980_000,
    project="ledgerkit",
    model="gpt-4o",
    context_window=128_000,
    start=dt.datetime(2026, 10, 14, 9, 45, tzinfo=dt.UTC),
)


def default_broken_dir(out: str | Path) -> Path:
    return Path(out).resolve().parent / "examples" / "broken"


def write_samples(out: str | Path, broken_out: str | Path | None = None) -> dict:
    """Write every sample under `out` (broken ones under `broken_out`); returns the manifest of `out`
    with the broken folder's manifest under the key "broken"."""
    out = Path(out)
    broken_dir = Path(broken_out) if broken_out is not None else default_broken_dir(out)
    manifest: dict = {"files": {}}
    broken: dict = {"files": {}}
    for name, (spec, purpose) in PI_SAMPLES.items():
        root, target = (broken_dir, broken) if spec.malformed else (out, manifest)
        result = write_pi_session(root / "pi" / f"{name}.jsonl", spec)
        target["files"][f"pi/{name}.jsonl"] = {
            "format": "pi-v1" if spec.legacy_v1 else "pi-v3",
            "purpose": purpose,
            "bytes": result.bytes,
            "lines": result.lines,
            "entries": result.entries,
            "context_tokens": result.context_tokens,
            "last_total_tokens": result.last_total_tokens,
            "compactions": result.compactions,
            "branch_points": result.branch_points,
            "malformed_lines": result.malformed_lines,
        }
    claude = write_claude_session(out / "claude" / "projects", CLAUDE_SAMPLE)
    manifest["files"][str(claude.path.relative_to(out))] = {
        "format": "claude",
        "bytes": claude.bytes,
        "lines": claude.lines,
        "last_context_tokens": claude.last_context_tokens,
        "subagent": str(claude.subagent_path.relative_to(out)),
        "purpose": "Claude Code 2.1.x transcript over a 128k-context threshold, with a Task sub-agent file.",
    }
    codex = write_codex_session(out / "codex" / "sessions", CODEX_SAMPLE)
    manifest["files"][str(codex.path.relative_to(out))] = {
        "format": "codex",
        "bytes": codex.bytes,
        "lines": codex.lines,
        "last_input_tokens": codex.last_input_tokens,
        "purpose": "Codex 0.104 rollout whose last model call was sent over 128k tokens.",
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    (out / "README.md").write_text(_readme(manifest))
    (broken_dir / "manifest.json").write_text(json.dumps(broken, indent=1) + "\n")
    (broken_dir / "README.md").write_text(_readme(broken, broken=True))
    return {**manifest, "broken": broken}


def _readme(manifest: dict, broken: bool = False) -> str:
    intro = [
        "# Broken sample sessions",
        "",
        "Sessions damaged on purpose, so `batchcompact validate examples/broken` shows how problems are",
        "reported (file, line, what is wrong). They live apart from `sample_sessions/` so that a run over",
        "the samples succeeds. Written by `python -m synth samples sample_sessions` (do not edit",
        "by hand; rerun the command); `tests/test_synth.py` checks each file has the property it claims.",
    ] if broken else [
        "# Sample sessions",
        "",
        "Synthetic, deterministic sessions written by `python -m synth samples sample_sessions`",
        "(do not edit by hand; rerun the command). All text is invented. `manifest.json` holds the same facts",
        "in machine-readable form; `tests/test_synth.py` checks each file has the property it claims.",
        "Files broken on purpose are in `../examples/broken/`.",
    ]
    lines = [
        *intro,
        "",
        "| file | bytes | context tokens | last usage | what it is for |",
        "|---|---|---|---|---|",
    ]
    for path, info in manifest["files"].items():
        purpose = info["purpose"]
        if info.get("malformed_lines"):
            purpose += f" Malformed lines: {', '.join(map(str, info['malformed_lines']))}."
        if info.get("branch_points"):
            purpose += f" Branch points: {len(info['branch_points'])}."
        if info.get("subagent"):
            purpose += f" Sub-agent: `{info['subagent']}`."
        context = f"{info['context_tokens']:,}" if "context_tokens" in info else "-"
        usage = (
            info.get("last_total_tokens") or info.get("last_context_tokens") or info.get("last_input_tokens")
        )
        lines.append(f"| `{path}` | {info['bytes']:,} | {context} | {usage:,} | {purpose} |")
    lines += [
        "",
        "*context tokens*: chars/4 estimate of the context pi rebuilds from the active path (summary + kept",
        "entries after a compaction; `../shared/reference/pi-sessions.md` section 3.1). *last usage*: the last",
        "usable assistant's `usage.totalTokens` (pi; v1 has no totalTokens, so the sum of its parts), input +",
        "cache read + cache creation + output (Claude Code), or `last_token_usage.input_tokens` (Codex).",
    ]
    return "\n".join(lines) + "\n"
