"""Behaviour unchanged across a refactor: run the same commands with an earlier commit's code and with this
tree's, and compare what they print and write, byte for byte.

    python bench/same_behaviour.py --before aede928            # fixtures from ../shared/fixtures
    python bench/same_behaviour.py --before HEAD --keep /tmp/x # keep both outputs to inspect

The commands, each on `sample_sessions/` and on `../shared/fixtures/` (when present):
- `report PATHS --by K --format json` for every `--by` (and the default), `--by request` as jsonl too;
- the usage export (`--by request --format parquet -o FILE`), then that export read back beside the same files
  by a clone of this machine (the same name, another id): its rows and the duplicate-machine warning;
- `plan PATHS --format json`, with and without `--force`;
- `run PATHS --output-dir OUT` (and with `--force`: every session a writer can take), offline with the built-in summarizer: its stdout, every file it writes (the
  compacted sessions, and the run report's Parquet as rows).

Both runs see the same inputs at the same paths, an empty HOME and cache, TZ=UTC and a fixed machine name and id.
Masked before comparing: run ids, this run's clock (timestamps of today, durations) and the temporary
folder; the run state database (`.batchcompact/`) is not compared. Prints one line per command (`same` or `DIFFERS` with the first differing line) and exits 1 when
anything differs. The earlier commit is unpacked whole (`schemas/` too) with `git archive` and imported through PYTHONPATH from the
same interpreter, so both use the same dependencies."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"
CLONE_ID = "clone-id"  # a cloned image: another machine id under the same machine name
BYS = ("day", "week", "month", "session", "project", "branch", "group", "model", "provider", "agent", "machine",
       "block")


def commands(inputs: dict[str, Path], out: Path) -> list[tuple[str, list[str]]]:
    """(label, argv) of every command, in order."""
    found: list[tuple[str, list[str]]] = []
    for label, path in inputs.items():
        found.append((f"report {label}", ["report", str(path), "--format", "json"]))
        for by in BYS:
            found.append((f"report {label} --by {by}", ["report", str(path), "--by", by, "--format", "json"]))
        found.append((f"report {label} --by request", ["report", str(path), "--by", "request", "--format", "jsonl"]))
        found.append((f"report {label} --by model --breakdown",
                      ["report", str(path), "--by", "model", "--breakdown", "--format", "json"]))
        # a usage export, then read back beside this machine's own files by a clone of the same name (another
        # machine id, CLONE_ID): the export's columns and the duplicate-machine warning
        export = out / f"{label}-export.parquet"
        found.append((f"report {label} export", ["report", str(path), "--by", "request", "--format", "parquet",
                                                 "-o", str(export)]))
        found.append((f"report {label} export read by a clone",
                      ["report", str(export), str(path), "--by", "machine", "--format", "json"]))
        found.append((f"plan {label}", ["plan", str(path), "--format", "json"]))
        found.append((f"plan {label} --force", ["plan", str(path), "--format", "json", "--force"]))
        found.append((f"run {label}", ["run", str(path), "--output-dir", str(out / label), "--min-age", "0",
                                      "--report-dir", str(out / f"{label}-reports"), "--format", "json", "-q"]))
        found.append((f"run {label} --force", ["run", str(path), "--output-dir", str(out / f"{label}-forced"),
                                              "--min-age", "0", "--force", "--format", "json", "-q",
                                              "--report-dir", str(out / f"{label}-forced-reports")]))
    return found


def mask(text: str, work: Path) -> str:
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    text = text.replace(str(work), "<work>")
    text = re.sub(rf"{today}[T ][0-9:.+\-Z]+", "<now>", text)
    text = re.sub(r"\b\d{10}(\.\d+)?\b", "<epoch>", text)  # wall-clock seconds
    text = re.sub(r'("(?:run_id|run|started|finished|started_at|ended_at|finished_at|elapsed_s|duration_s|latency_s|seconds)"\s*:\s*)'
                  r'("[^"]*"|[0-9.eE+-]+)', r"\1<masked>", text)
    text = re.sub(r"\b\d+(\.\d+)? ?(ms|s)\b", "<time>", text)
    text = re.sub(r"compactions-[0-9A-Za-z_-]+\.parquet", "compactions-<run>.parquet", text)
    return text


def parquet_text(path: Path) -> str:
    import polars as pl

    frame = pl.read_parquet(path)
    return "\n".join(json.dumps(row, sort_keys=True, default=str) for row in frame.to_dicts())


def run_tree(tree: Path, sources: dict[str, Path], work: Path) -> dict[str, str]:
    """Every command's masked output (and every written file's) under this tree's code."""
    if work.exists():
        shutil.rmtree(work)
    inputs: dict[str, Path] = {}
    for label, source in sources.items():
        inputs[label] = work / "in" / label
        shutil.copytree(source, inputs[label], symlinks=True)
    home = work / "home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""), "HOME": str(home), "XDG_CACHE_HOME": str(work / "cache"),
        "XDG_CONFIG_HOME": str(home / ".config"), "TZ": "UTC", "PYTHONPATH": str(tree), "COLUMNS": "160",
        "BATCHCOMPACT_MACHINE": "machine", "BATCHCOMPACT_MACHINE_ID": "machine-id", "LANG": "C.UTF-8",
    }
    where = subprocess.run([sys.executable, "-c", "import batchcompact; print(batchcompact.__file__)"], env=env,
                           capture_output=True, text=True, check=True, cwd=work).stdout.strip()
    if not where.startswith(str(tree)):
        raise SystemExit(f"same_behaviour: {tree}: the interpreter imports batchcompact from {where}")
    out = work / "out"
    out.mkdir()  # the export's -o names a file in it
    found: dict[str, str] = {}
    for label, argv in commands(inputs, out):
        if argv[0] == "report":
            argv = [*argv, "--machine", "machine"]
        clone = {"BATCHCOMPACT_MACHINE_ID": CLONE_ID} if label.endswith("read by a clone") else {}
        done = subprocess.run([sys.executable, "-m", "batchcompact", *argv], env={**env, **clone}, capture_output=True,
                              cwd=work)
        if done.returncode not in (0, 1):  # a usage error or an abort compares nothing: the command is wrong
            raise SystemExit(f"same_behaviour: {tree}: `batchcompact {' '.join(argv)}` exited {done.returncode}: "
                             + done.stderr.decode("utf-8", "replace").strip().splitlines()[-1])
        found[label] = mask(f"exit {done.returncode}\n" + done.stdout.decode("utf-8", "replace"), work)
        found[label + " (stderr)"] = mask(done.stderr.decode("utf-8", "replace"), work)
    for path in sorted(p for p in out.rglob("*") if p.is_file() and ".batchcompact" not in p.parts):
        name = mask(str(path.relative_to(out)), work)
        body = parquet_text(path) if path.suffix == ".parquet" else path.read_bytes().decode("utf-8", "replace")
        found[f"file {name}"] = mask(body, work)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the commit whose behaviour is the reference")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    parser.add_argument("--keep", type=Path, help="keep both trees' outputs in this folder")
    args = parser.parse_args()
    sources = {"sample": ROOT / "sample_sessions"}
    if args.fixtures.is_dir():
        sources["fixtures"] = args.fixtures
    else:
        print(f"same_behaviour: {args.fixtures}: no such folder; comparing sample_sessions/ only", file=sys.stderr)
    scratch = Path(tempfile.mkdtemp(prefix="same-behaviour-"))
    try:
        before_tree = scratch / "before-tree"
        before_tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before_tree)], input=archive, check=True)
        # the same work path for both runs, so the paths they print are equal
        before = run_tree(before_tree, sources, scratch / "work")
        if args.keep:
            shutil.copytree(scratch / "work", args.keep / "before", dirs_exist_ok=True)
        after = run_tree(ROOT, sources, scratch / "work")
        if args.keep:
            shutil.copytree(scratch / "work", args.keep / "after", dirs_exist_ok=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    differ = 0
    for label in sorted(before.keys() | after.keys()):
        a, b = before.get(label), after.get(label)
        if a == b:
            print(f"same     {label}")
            continue
        differ += 1
        if a is None or b is None:
            print(f"DIFFERS  {label}: only {'after' if a is None else 'before'} has it")
            continue
        first = next((line for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
                      if line[:1] in "+-" and not line.startswith(("+++", "---"))), "")
        print(f"DIFFERS  {label}: {first[:200]}")
    print(f"{len(before.keys() | after.keys())} outputs compared, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
