"""docs/eval.md's tables and goals: what the built-in summary, the agents' own summaries and the baselines
keep of what the agent's next turns needed, on the tuning set and on the held-out set (docs/eval.md, "The
two sets"), and whether the built-in meets #47's goals on the held-out set.

    .venv/bin/python bench/eval_table.py                     # print the tables (markdown)
    .venv/bin/python bench/eval_table.py --write docs/eval.md  # replace them in the doc
    .venv/bin/python bench/eval_table.py --set tuning          # one set's cut-inside table only
    .venv/bin/python bench/eval_table.py --set tuning --summary-budget 1000  # at a tight budget (pi's length)
    PYTHONPATH=tests .venv/bin/python bench/eval_table.py --set heldout --summarizer eval_goal_hooks:as_list

Runs the installed `batchcompact eval` (JSON rows) on each set's sessions: `--cut-at 30,...,90` (cut inside,
compacted as `run --force --keep-recent-tokens 3000` would) and, for the held-out set, `--existing` on the
sessions that hold an agent's own compactions. Each table pools every probe over its cuts
(`eval.pooling.mean_rows`); `overall` is the mean over the probe kinds present. Deterministic: the same
fixtures and summarizer give the same bytes. tests/test_eval_goals.py checks that docs/eval.md holds what
this prints.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("BATCHCOMPACT_TEST_FIXTURES") or REPO.parent / "shared" / "fixtures")
SPOTTER = "claude/projects/-home-USER-projects-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
# The two sets (docs/eval.md). Paths under FIXTURES, or under REPO when they start with "repo:". A rule
# that helps only the tuning set is overfitting: goals are reported on the held-out set.
SETS = {
    "tuning": ("pi/large-session.jsonl", "claude/projects/sample-project", "repo:sample_sessions",
               "codex/sessions/2026/02/23/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl",
               "codex/sessions/2026/02/23/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
               "claude/projects/-Users-chip-dev-ai-music", "synth:long-refactor", "synth:long-refactor-codex"),
    "heldout": ("pi/before-compaction.jsonl", SPOTTER),
}
EXISTING = ("pi/before-compaction.jsonl", SPOTTER)  # pi's two LLM compactions, Claude Code's one
PERCENTS = "30,40,50,60,70,80,90"
KEEP_RECENT = "3000"
# The goals of #47 (docs/eval.md, "Goals"), on the held-out set at the default budget.
BUDGET = 2000  # the built-in's default --summary-budget (at most 2,000 by #47)
FILE_RECALL_GOAL = 0.6
NAMES_OVER_FIRST = 0.2
OVERALL_OVER_LIST = 0.1
START, END = "<!-- eval-table:start -->", "<!-- eval-table:end -->"
KINDS = ("file", "symbol", "command", "value", "rule", "task")
COLUMNS = (("shown", "summary"), ("cuts", "cuts"), ("summary_tokens", "tokens"),
           ("max_summary_tokens", "max tokens"), ("file_recall", "files"), ("symbol_recall", "code names"),
           ("names_recall", "files + names"), ("command_recall", "commands"), ("value_recall", "values"),
           ("rule_recall", "rules"), ("task_recall", "requests"), ("overall", "overall¹"),
           ("lift_first", "vs first N"), ("lift_list", "vs list"))
FOOTNOTE = ("¹ `overall` is the mean of the recalls of the probe kinds present (files, code names, commands, "
            "values, rules, requests: each kind weighs the same), not pooled by probe count.")


# Sessions made by synth/ when the table is built (a generator call, not a committed file): "synth:NAME".
SYNTH_DIR = Path(tempfile.gettempdir()) / f"batchcompact-eval-synth-{os.getuid() if hasattr(os, 'getuid') else 0}"


def long_refactor(target: Path) -> None:
    """A long refactoring session (pi) across the 61 files of synth's `platform` project, 1.2 MB: more
    files than a 2,000-token summary can list, the weakness the fixtures' short synth projects hide."""
    from synth.pi import PiSpec, write_pi_session

    write_pi_session(target, PiSpec(seed=201, target_bytes=1_200_000, project="platform", label_at=None,
                                    start=dt.datetime(2026, 10, 20, 9, 0, tzinfo=dt.UTC)))


def long_refactor_codex(target: Path) -> None:
    """The same kind of refactor as a Codex rollout (seed 202, 1.2 MB): Codex reads files with shell
    commands (`sed -n '1,400p' PATH`), so only the patched files reach the summary's file tags and the
    trail must carry the files the agent read."""
    from synth.codex import CodexRolloutWriter, CodexSpec

    writer = CodexRolloutWriter(CodexSpec(seed=202, target_bytes=1_200_000, project="platform",
                                          start=dt.datetime(2026, 10, 21, 9, 0, tzinfo=dt.UTC)))
    with open(target, "w", encoding="utf-8", newline="") as handle:
        handle.writelines(writer.iter_lines())


SYNTH = {"long-refactor": long_refactor, "long-refactor-codex": long_refactor_codex}
_WRITTEN: set[str] = set()


def path_of(name: str) -> str:
    if name.startswith("synth:"):
        target = SYNTH_DIR / f"{name[6:]}.jsonl"
        if name not in _WRITTEN:  # written afresh by each process (0.1 s): never a stale generator's bytes
            SYNTH_DIR.mkdir(exist_ok=True)
            handle, partial = tempfile.mkstemp(dir=SYNTH_DIR, suffix=".tmp")  # another process may write too
            os.close(handle)
            SYNTH[name[6:]](Path(partial))
            os.replace(partial, target)  # the same bytes whoever writes last
            _WRITTEN.add(name)
        return str(target)
    return str(REPO / name[5:]) if name.startswith("repo:") else str(FIXTURES / name)


def eval_rows(*args: str) -> list[dict[str, Any]]:
    env = dict(os.environ)  # eval runs in the fixtures' folder: a relative PYTHONPATH (hooks) made absolute
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    done = subprocess.run([sys.executable, "-m", "batchcompact", "eval", *args, "--format", "json", "-q"],
                          capture_output=True, text=True, cwd=FIXTURES, env=env, check=False)
    if done.returncode != 0:
        sys.exit(f"eval failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)["rows"]


def cut_inside(name: str, summarizers: tuple[str, ...] = ("builtin",), budget: int | None = None) -> list[dict[str, Any]]:
    """The rows of `eval --cut-at` on one set's sessions (at `budget` tokens a summary when given, else the
    default)."""
    extra = [arg for spec in summarizers for arg in ("--summarizer", spec)]
    extra += ["--summary-budget", str(budget)] if budget else []
    return eval_rows(*map(path_of, SETS[name]), "--cut-at", PERCENTS, "--keep-recent-tokens", KEEP_RECENT, *extra)


def existing(summarizers: tuple[str, ...] = ("builtin",)) -> list[dict[str, Any]]:
    extra = [arg for spec in summarizers for arg in ("--summarizer", spec)]
    return eval_rows("--existing", *map(path_of, EXISTING), *extra)


def means_by_label(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    from batchcompact.eval.pooling import mean_rows

    return {m["summarizer"] + (f"@{m['baseline_for']}" if m["baseline_for"] else ""): m for m in mean_rows(rows)}


def goals(rows: list[dict[str, Any]], label: str, budget: int = BUDGET) -> dict[str, tuple[bool, str]]:
    """#47's goals for summarizer `label` on cut-inside rows: name -> (met, the figures)."""
    means = means_by_label(rows)
    mine, first, listed = means[label], means[f"baseline:first@{label}"], means[f"baseline:list@{label}"]
    over = [r for r in rows if r["summarizer"] == label and r["status"] == "ok" and r["summary_tokens"] > budget]
    return {
        f"hindsight file recall ≥ {FILE_RECALL_GOAL}": (
            (mine["file_recall"] or 0) >= FILE_RECALL_GOAL, f"{mine['file_recall']:.2f}"),
        f"files + names ≥ first N + {NAMES_OVER_FIRST}": (
            mine["names_recall"] >= first["names_recall"] + NAMES_OVER_FIRST,
            f"{mine['names_recall']:.2f} vs {first['names_recall']:.2f}"),
        f"overall ≥ baseline:list + {OVERALL_OVER_LIST}": (
            mine["overall"] >= listed["overall"] + OVERALL_OVER_LIST,
            f"{mine['overall']:.2f} vs {listed['overall']:.2f}"),
        f"summary tokens ≤ {budget:,} on every row": (
            not over, f"max {mine['max_summary_tokens']:,}; {len(over)} of {mine['cuts']} rows over"),
    }


def recorded_goal(rows: list[dict[str, Any]]) -> dict[str, tuple[bool, str]]:
    """At pi's recorded compactions: the built-in keeps at least what pi's LLM summary keeps, at most at its
    length (rows of `eval --existing` on pi's session with the built-in run at pi's summary length)."""
    out = {}
    pi = [r for r in rows if r["path"].endswith("before-compaction.jsonl")]
    for number in sorted({r["compaction"] for r in pi}):
        recorded, builtin = (next(r for r in pi if r["compaction"] == number and r["summarizer"] == label)
                             for label in ("recorded", "builtin"))
        met = ((builtin["hindsight_recall"] or 0) >= (recorded["hindsight_recall"] or 0)
               and builtin["overall"] >= recorded["overall"]
               and builtin["summary_tokens"] <= recorded["summary_tokens"])
        out[f"pi's compaction {number}: ≥ pi's LLM summary at its length"] = (
            met, f"overall {builtin['overall']:.2f} vs {recorded['overall']:.2f}, "
                 f"{builtin['summary_tokens']:,} vs {recorded['summary_tokens']:,} tokens")
    return out


def table(rows: list[dict[str, Any]]) -> str:
    from batchcompact.eval.baselines import BASELINE, LABEL
    from batchcompact.eval.pooling import mean_rows

    means = mean_rows(rows)
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for mean in means:
        label = mean["summarizer"]
        if label.startswith(BASELINE):
            label = f"↳ {LABEL[label[len(BASELINE):]]}" + (f" ({mean['baseline_for']})" if mean["baseline_for"] else "")
        mean["shown"] = label
        cells = []
        for column, _ in COLUMNS:
            value = mean.get(column)
            if value is None:
                cells.append("–")
            elif column.startswith("lift_"):
                cells.append(f"{value:+.2f}" + (" **!**" if value <= 0 else ""))
            elif isinstance(value, float):
                cells.append(f"{value:.2f}")
            else:
                cells.append(f"{value:,}" if isinstance(value, int) else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    if means:
        lines += ["", "Probes: " + ", ".join(f"{means[0][f'{k}_probes']} {k}" for k in KINDS) + ". " + FOOTNOTE]
    return "\n".join(lines)


def goal_lines(results: dict[str, tuple[bool, str]]) -> list[str]:
    return [f"| {name} | {figures} | {'met' if met else '**not met**'} |" for name, (met, figures) in results.items()]


def only(rows: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """The rows of one summarizer, its baselines and the kept tail (as `eval` gives them for it alone)."""
    return [r for r in rows if label in (r["summarizer"], r["baseline_for"]) or r["summarizer"] == "baseline:tail"]


def budget_option() -> list[str]:
    """`--summary-budget` is passed where `eval` has it (#47); before, the built-in runs at its own length."""
    done = subprocess.run([sys.executable, "-m", "batchcompact", "eval", "--help"], capture_output=True, text=True,
                          check=False)
    return ["--summary-budget"] if "--summary-budget" in done.stdout else []


def heldout_part(heldout: list[dict[str, Any]], recorded: list[dict[str, Any]], at_length: list[dict[str, Any]],
                 at_pis_length: bool) -> str:
    """The goals and the held-out tables (what tests/test_eval_goals.py checks in docs/eval.md)."""
    length = ("at pi's summary length" if at_pis_length
              else "the built-in at its own length: this commit's `eval` has no `--summary-budget`")
    return "\n".join([
        "**Goals on the held-out set** (the built-in summarizer as it is on this commit; `bench/eval_table.py`):",
        "",
        "| goal | figures | |",
        "|---|---|---|",
        *goal_lines(goals(only(heldout, "builtin"), "builtin")),
        *goal_lines(recorded_goal(at_length)),
        "",
        f"At pi's recorded compactions: {length}.",
        "",
        f"**Held-out set, cut inside** ({', '.join(SETS['heldout'])}; `--cut-at {PERCENTS} --keep-recent-tokens "
        f"{KEEP_RECENT}`):",
        "",
        table(only(heldout, "builtin")),
        "",
        "**Held-out set, the agents' own compactions** (pi's two, Claude Code's one; `--existing --summarizer "
        "builtin`: the built-in summary re-summarizes the same spans, at its own length):",
        "",
        table(recorded),
    ])


def recorded_at_pis_length(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """`rows` (of `eval --existing` on pi's session) with, where `eval` has `--summary-budget`, the built-in's
    row at each of pi's compactions from a run at that compaction's recorded summary length."""
    option = budget_option()
    if not option:
        return rows, False
    pi = [r for r in rows if r["path"].endswith("before-compaction.jsonl") and r["summarizer"] == "recorded"]
    for recorded in pi:
        again = eval_rows("--existing", path_of(EXISTING[0]), "--summarizer", "builtin", *option,
                          str(recorded["summary_tokens"]))
        mine = [r for r in again if r["compaction"] == recorded["compaction"] and r["summarizer"] == "builtin"]
        rows = [r for r in rows if not (r["path"] == recorded["path"] and r["compaction"] == recorded["compaction"]
                                        and r["summarizer"] == "builtin")] + mine
    return rows, True


def build() -> str:
    heldout = cut_inside("heldout")
    tuning = cut_inside("tuning")
    recorded = existing()
    at_length, budgeted = recorded_at_pis_length(recorded)
    return "\n".join([
        START,
        heldout_part(heldout, recorded, at_length, budgeted),
        "",
        f"**Tuning set, cut inside** ({', '.join(SETS['tuning'])}; the same options):",
        "",
        table(tuning),
        END,
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="FILE", help="replace the tables between the markers in FILE")
    parser.add_argument("--set", dest="which", choices=sorted(SETS), help="print one set's cut-inside table")
    parser.add_argument("--summarizer", action="append", default=[], metavar="NAME",
                        help="with --set: the summarizers to score (repeat) [default: builtin]")
    parser.add_argument("--summary-budget", dest="budget", type=int, metavar="TOKENS",
                        help="with --set: the summaries' budget (e.g. 1000: pi's own length) [default: 2,000]")
    args = parser.parse_args()
    if args.budget and not args.which:
        parser.error("--summary-budget goes with --set (the doc's tables are at the default budget)")
    if not FIXTURES.is_dir():
        sys.exit(f"{FIXTURES} not found: the shared fixtures lie beside the repository")
    sys.path.insert(0, str(REPO))
    if args.which:
        rows = cut_inside(args.which, tuple(args.summarizer) or ("builtin",), args.budget)
        print(table(rows))
        for spec in tuple(args.summarizer) or ("builtin",):
            print(f"\nGoals for {spec} on the {args.which} set:\n\n| goal | figures | |\n|---|---|---|")
            print("\n".join(goal_lines(goals(rows, spec, args.budget or BUDGET))))
        return
    text = build()
    if not args.write:
        print(text)
        return
    target = Path(args.write)
    doc = target.read_text()
    if START not in doc or END not in doc:
        sys.exit(f"{target}: no {START} … {END} markers")
    target.write_text(doc[: doc.index(START)] + text + doc[doc.index(END) + len(END):])
    print(f"{target}: tables written")


if __name__ == "__main__":
    main()
