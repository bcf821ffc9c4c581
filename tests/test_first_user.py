"""What a new user found on a fresh clone (#56, items 1-11): each from the CLI, as the user typed it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES, cli_invoker


@pytest.fixture
def bc(capsys, monkeypatch):
    return cli_invoker(capsys, monkeypatch)


@pytest.fixture
def samples(tmp_path) -> Path:
    """A fresh copy of sample_sessions, as a clone has it (every file modified a moment ago)."""
    copy = tmp_path / "sample_sessions"
    shutil.copytree(SAMPLES, copy)
    return copy


# -- 2. a free summarizer and --max-cost ------------------------------------------------------------------
def test_a_budget_of_zero_never_refuses_the_free_built_in(bc, samples, tmp_path):
    code, out, err = bc("run", samples, "--output-dir", tmp_path / "out", "--min-age", "0", "--max-cost", "0",
                        "--jobs", "1")
    assert code == 0, err
    assert "6 compacted" in out and "budget of" not in out + err
