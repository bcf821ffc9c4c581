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
  compacted sessions, and the run report's Parquet as rows);
- `report PATHS --html FILE` (the page, with the run reports of the runs above beside the sessions), `validate
  PATHS --format json`, `show FILE` (table, `--context`, `--format json`) of one session of each set, `eval PATHS
  --summarizer builtin --format json` (at the end, with `--cut-at 50`, and `--existing`), `batches --output-dir
  OUT --format json` of the runs above;
- the database agents written in place: OpenCode's and Kilo's databases (the recorded one of
  tests/data/recorded/opencode) and OpenClaw's SQLite store (tests/data/recorded/openclaw): `plan`, `run
  --in-place --force`, then `report` of what was written, and every table's rows of each database after.

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
        found.append((f"report {label} --html", ["report", str(path), str(out / f"{label}-reports"),
                                                 "--html", str(out / f"{label}.html")]))
        found.append((f"validate {label}", ["validate", str(path), "--format", "json"]))
        session = next(iter(sorted(p for p in path.rglob("*.jsonl") if p.is_file())), None)
        if session is not None:
            found.append((f"show {label}", ["show", str(session)]))
            found.append((f"show {label} --context", ["show", str(session), "--context"]))
            found.append((f"show {label} --format json", ["show", str(session), "--format", "json"]))
        found.append((f"eval {label}", ["eval", str(path), "--summarizer", "builtin", "--format", "json",
                                        "--state", str(out / f"{label}-eval.sqlite")]))
        found.append((f"eval {label} --cut-at 50", ["eval", str(path), "--summarizer", "builtin", "--cut-at", "50",
                                                    "--format", "json", "--state", str(out / f"{label}-eval.sqlite")]))
        found.append((f"eval {label} --existing", ["eval", str(path), "--existing", "--summarizer", "builtin",
                                                   "--format", "json", "--state", str(out / f"{label}-eval.sqlite")]))
        found.append((f"batches {label}", ["batches", "--output-dir", str(out / label), "--format", "json"]))
    return found


def database_commands(folder: Path, out: Path) -> list[tuple[str, list[str]]]:
    """(label, argv) of the database agents' commands: plan, run --in-place, and the report of what was written."""
    found: list[tuple[str, list[str]]] = []
    for name, db in databases(folder).items():
        found.append((f"plan {name}", ["plan", str(db), "--format", "json", "--force"]))
        found.append((f"run {name} --in-place", ["run", str(db), "--in-place", "--force", "--min-age", "0",
                                                 "--keep-recent-tokens", "1", "--format", "json", "-q",
                                                 "--state", str(out / f"{name}-state.sqlite"),
                                                 "--report-dir", str(out / f"{name}-reports")]))
        found.append((f"report {name} after --in-place", ["report", str(db), "--by", "session", "--format", "json"]))
    return found


def databases(folder: Path) -> dict[str, Path]:
    """Where the database agents' copies are put under FOLDER (`write_databases`)."""
    return {"opencode": folder / "opencode" / "opencode.db", "kilo": folder / "kilo" / "kilo.db",
            "openclaw": folder / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"}


def write_databases(folder: Path) -> None:
    """The recorded OpenCode database (as OpenCode's and as Kilo's) and OpenClaw's store, with OpenClaw's
    openclaw.json naming its model's window, as tests/agents/openclaw does."""
    import gzip

    recorded = ROOT / "tests" / "data" / "recorded"
    where = databases(folder)
    for name in ("opencode", "kilo"):
        where[name].parent.mkdir(parents=True)
        shutil.copyfile(recorded / "opencode" / "compacted.db", where[name])
    where["openclaw"].parent.mkdir(parents=True)
    where["openclaw"].write_bytes(gzip.decompress((recorded / "openclaw" / "openclaw-agent.sqlite.gz").read_bytes()))
    model = {"id": "claude-judge", "contextWindow": 200000, "maxTokens": 8192}
    (folder / ".openclaw" / "openclaw.json").write_text(json.dumps({
        "models": {"providers": {"fake": {"api": "anthropic-messages", "models": [model]}}},
        "agents": {"defaults": {"model": {"primary": "fake/claude-judge"}}}}))


def database_text(path: Path) -> str:
    """Every table's rows, in rowid order where there is one, as JSON lines (bytes as hex)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        lines = []
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            try:
                rows = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()
            except sqlite3.OperationalError:  # WITHOUT ROWID
                rows = sorted(conn.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr)
            for row in rows:
                lines.append(f"{table} " + json.dumps([v.hex() if isinstance(v, bytes) else v for v in row]))
        return "\n".join(lines)
    finally:
        conn.close()


def new_ids(text: str, before: str) -> str:
    """A database's rows with what this run made up masked: the ids it generated (OpenCode's time-sortable
    `evt_`/`msg_`/`prt_` ids, not in the database before), numbered in order of appearance, and its
    millisecond clock (within a day of now)."""
    made: dict[str, str] = {}

    def named(match: re.Match) -> str:
        found = match.group(0)
        if found in before:
            return found
        return made.setdefault(found, f"<id{len(made)}>")

    text = re.sub(r"\b[a-z]{2,5}_[0-9a-f]{12}[0-9A-Za-z]{14}\b", named, text)
    now = datetime.now(UTC).timestamp() * 1000
    return re.sub(r"\b1\d{12}\b", lambda m: "<now-ms>" if abs(int(m.group(0)) - now) < 86_400_000 else m.group(0),
                  text)


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
    write_databases(work / "in" / "databases")
    written = {name: database_text(db) for name, db in databases(work / "in" / "databases").items()}
    found: dict[str, str] = {}
    for label, argv in [*commands(inputs, out), *database_commands(work / "in" / "databases", out)]:
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
    for name, db in databases(work / "in" / "databases").items():
        after = database_text(db)
        if after == written[name]:  # nothing compacted: the comparison would prove nothing
            raise SystemExit(f"same_behaviour: {tree}: `run {db} --in-place` wrote nothing")
        found[f"database {name} after --in-place"] = mask(new_ids(after, written[name]), work)
    for path in sorted(p for p in out.rglob("*") if p.is_file() and ".batchcompact" not in p.parts):
        name = mask(str(path.relative_to(out)), work)
        if ".sqlite" in path.name or path.suffix == ".db":  # the eval and database runs' state: not compared
            continue
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
