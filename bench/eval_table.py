"""docs/eval.md's tables: what the built-in summary, the agents' own summaries and the baselines keep of
what the agent's next turns needed, on the real sessions in ../shared/fixtures.

    .venv/bin/python bench/eval_table.py                   # print the tables (markdown)
    .venv/bin/python bench/eval_table.py --write docs/eval.md

Runs the installed `batchcompact eval` twice: `--cut-at 30,...,90` on the real pi and Claude Code
sessions (cut inside, compacted as `run --force --keep-recent-tokens 3000` would), and `--existing` on the
sessions that hold an agent's own compactions (pi's two in before-compaction.jsonl, Claude Code's in the
spotter run). Each table pools every probe over its cuts (`eval.run.mean_rows`). The Codex rollouts in the
fixtures are redacted (every text is `[REDACTED_TEXT len=… sha=…]`), so they name nothing to probe.
Deterministic: the same fixtures give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO.parent / "shared" / "fixtures"
CUT_INSIDE = ("pi/large-session.jsonl", "pi/before-compaction.jsonl",
              "claude/projects/-home-USER-projects-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
EXISTING = ("pi/before-compaction.jsonl",
            "claude/projects/-home-USER-projects-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
PERCENTS = "30,40,50,60,70,80,90"
START, END = "<!-- eval-table:start -->", "<!-- eval-table:end -->"
COLUMNS = (("shown", "summary"), ("cuts", "cuts"), ("summary_tokens", "tokens"), ("file_recall", "files"),
           ("symbol_recall", "code names"), ("names_recall", "files + names"), ("command_recall", "commands"),
           ("rule_recall", "rules"), ("task_recall", "requests"), ("overall", "all probes"),
           ("lift_first", "vs first N"), ("lift_words", "vs words"))


def eval_rows(*args: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "batchcompact", "eval", *args, "--format", "json", "-q"],
                          capture_output=True, text=True, cwd=FIXTURES, check=False)
    if done.returncode != 0:
        sys.exit(f"eval failed ({done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)["rows"]


def table(rows: list[dict], probes_line: bool = True) -> str:
    from batchcompact.eval.baselines import LABEL
    from batchcompact.eval.run import BASELINE, mean_rows

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
    if probes_line and means:
        first = means[0]
        kinds = ("file", "symbol", "command", "value", "rule", "task")
        lines.append("")
        lines.append("Probes: " + ", ".join(f"{first[f'{k}_probes']} {k}" for k in kinds) + ".")
    return "\n".join(lines)


def build() -> str:
    inside = eval_rows(*CUT_INSIDE, "--cut-at", PERCENTS, "--keep-recent-tokens", "3000")
    existing = eval_rows("--existing", *EXISTING, "--summarizer", "builtin")
    return "\n".join([
        START,
        "**Cut inside** (pi's large-session and before-compaction, the Claude Code spotter run; "
        f"`--cut-at {PERCENTS} --keep-recent-tokens 3000`):",
        "",
        table(inside),
        "",
        "**The agents' own compactions** (pi's two, Claude Code's one; `--existing --summarizer builtin`: the "
        "built-in summary re-summarizes the same spans):",
        "",
        table(existing),
        END,
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="FILE", help="replace the tables between the markers in FILE")
    args = parser.parse_args()
    if not FIXTURES.is_dir():
        sys.exit(f"{FIXTURES} not found: the shared fixtures lie beside the repository")
    sys.path.insert(0, str(REPO))
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
