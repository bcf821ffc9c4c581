"""Text that is not UTF-8 in what a report reads: a lone surrogate escape in a transcript's JSON (valid JSON
to the standard library, which decodes it; no UTF-8 has it) and a folder name that is not UTF-8. Either
stopped the whole report with an internal error (exit 4) on the formats that encode text; the report now
shows them as U+FFFD and `\\xff` escapes, every other file counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import SAMPLES

CLAUDE = SAMPLES / "claude" / "projects" / "-home-user-projects-webapp" / "bd6e388f-417b-444a-b6e3-88a50c28ea27.jsonl"


def _report(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchcompact", "report", *map(str, args)], capture_output=True,
                          timeout=300, env={**os.environ, "BATCHCOMPACT_DEBUG": ""})


def _with_lone_surrogates(target: Path) -> None:
    """The Claude sample whose assistant lines name a cwd and a model holding a lone surrogate."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as out:
        for line in CLAUDE.read_text(encoding="utf-8").splitlines():
            obj = json.loads(line)
            if obj.get("type") == "assistant":
                obj["cwd"] = "/home/u\ud800x"
                obj["message"]["model"] = "claude-sonnet-4-5\ud83d"
            out.write(json.dumps(obj) + "\n")  # ensure_ascii: the surrogates are written as escapes


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "parquet"])
@pytest.mark.parametrize("cache", [True, False])
def test_a_lone_surrogate_in_a_transcript_does_not_stop_the_report(tmp_path, fmt, cache):
    _with_lone_surrogates(tmp_path / "projects" / "p" / "s.jsonl")
    out = tmp_path / "report.parquet"
    args = ["--by", "session", "--format", fmt, *(["-o", out] if fmt == "parquet" else []),
            *(["--cache-dir", tmp_path / "cache"] if cache else ["--no-cache"])]

    proc = _report(tmp_path / "projects", *args)

    assert proc.returncode == 0, proc.stderr.decode()
    text = proc.stdout.decode("utf-8")  # strict: what is printed is UTF-8
    if fmt == "parquet":
        rows = pl.read_parquet(out).rows(named=True)
        assert [(r["project"], r["models"]) for r in rows] == [("/home/u\ufffdx", ["claude-sonnet-4-5\ufffd"])]
    else:
        assert "/home/u\ufffdx" in text or "/home/u\\ufffdx" in text  # json escapes it


def test_a_folder_name_that_is_not_utf8_does_not_stop_the_report(tmp_path):
    folder = os.path.join(os.fsencode(tmp_path / "projects"), b"-home-u\xff-x")
    os.makedirs(folder)
    with open(os.path.join(folder, b"s.jsonl"), "wb") as out:
        out.write(CLAUDE.read_bytes())
    plain = _report(CLAUDE, "--no-cache", "--format", "json")

    for fmt in ("parquet", "csv"):
        out = tmp_path / f"r.{fmt}"
        proc = _report(tmp_path / "projects", "--by", "session", "--format", fmt, "-o", out,
                       "--cache-dir", tmp_path / "cache")
        assert proc.returncode == 0, proc.stderr.decode()
    assert pl.read_parquet(tmp_path / "r.parquet")["total_tokens"].sum() == json.loads(plain.stdout)["totals"][
        "total_tokens"]
