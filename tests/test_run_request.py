"""`run` as one library call (pipeline/run_request.py) and the typed records its file tasks hand back
(pipeline/task_records.py): what the command line does, without click."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from conftest import SAMPLES

from batchcompact.core.planner import CompactionSettings
from batchcompact.pipeline.planning import PlanOptions
from batchcompact.pipeline.run import RunOptions
from batchcompact.pipeline.run_request import RunRequest, SummarizerChoice, check_provider, compact
from batchcompact.pipeline.session_task import FileTask, FileWork, process_file
from batchcompact.pipeline.statuses import COMPACTED, PLAN_COMPACT, PLAN_ERROR, SKIPPED, YOUNG
from batchcompact.pipeline.task_records import Outcome, PlanRecord
from batchcompact.summarize.pool_settings import PoolSettings


def _copy_pi(tmp_path: Path) -> Path:
    inputs = tmp_path / "in"
    shutil.copytree(SAMPLES / "pi", inputs, ignore=shutil.ignore_patterns("*.md", "*.json"))
    return inputs


def test_one_request_compacts_an_archive_as_the_command_does(tmp_path):
    inputs = _copy_pi(tmp_path)
    out = tmp_path / "out"
    options = RunOptions(output_dir=out, min_age_s=0, jobs=1, report_dir=tmp_path / "reports")
    request = RunRequest((str(inputs),), CompactionSettings(force=True), options, SummarizerChoice(), PoolSettings())
    said: list[str] = []
    summary = compact(request, say=said.append)
    statuses = {Path(row["input_path"]).name: row["status"] for row in summary.rows}
    compacted = sorted(name for name, status in statuses.items() if status == COMPACTED)
    assert len(compacted) >= 3 and set(statuses.values()) <= {COMPACTED, SKIPPED}, statuses
    assert sorted(p.name for p in out.rglob("*.jsonl")) == compacted
    assert summary.exit_code == 0 and summary.report_path is not None and summary.report_path.exists()
    assert summary.wall_s > 0
    assert said == []  # nothing to say without --check


def test_the_check_of_a_summarizer_that_calls_no_provider_says_so_and_costs_nothing():
    said: list[str] = []
    assert check_provider(SummarizerChoice(check=True), said.append) is None
    assert said == ["check: nothing to check (the summarizer does not call a provider)"]
    assert check_provider(SummarizerChoice(check=True), None) is None  # quiet: nothing said
    custom = SummarizerChoice(model="openai/gpt-4o-mini", spec="my_hooks:summarize")
    assert custom.summary_model == "custom:my_hooks:summarize" and not custom.calls_a_provider
    assert SummarizerChoice(model="openai/gpt-4o-mini").calls_a_provider


def test_phase_one_answers_with_a_typed_record(tmp_path):
    inputs = _copy_pi(tmp_path)
    session = sorted(inputs.glob("*.jsonl"))[0]
    task = FileTask(CompactionSettings(force=True), PlanOptions())
    planned = process_file(FileWork(str(session), str(inputs)), task)
    assert isinstance(planned, PlanRecord) and planned.status == PLAN_COMPACT
    assert planned.fingerprint is not None and planned.prompt_tokens and planned.compaction is None

    now = time.time()
    os.utime(session, (now, now))
    young = process_file(FileWork(str(session), str(inputs)), FileTask(CompactionSettings(), PlanOptions(),
                                                                       min_age_s=600))
    assert (young.status, young.plan_row) == (YOUNG, {}) and "under --min-age" in young.reason

    gone = process_file(FileWork(str(tmp_path / "gone.jsonl"), str(tmp_path)), task)
    assert (gone.status, gone.fingerprint) == (PLAN_ERROR, None)


def test_a_session_compacted_where_it_was_planned_carries_its_outcome(tmp_path):
    from batchcompact.summarize.builtin import BuiltinSummarizer

    inputs = _copy_pi(tmp_path)
    session = sorted(inputs.glob("*.jsonl"))[0]
    task = FileTask(CompactionSettings(force=True), PlanOptions(), summarizer=BuiltinSummarizer())
    target = tmp_path / "out" / session.name
    record = process_file(FileWork(str(session), str(inputs), str(target)), task)
    assert isinstance(record.compaction, Outcome)
    assert record.compaction.status == COMPACTED and record.compaction.output_path == str(target)
    assert record.compaction.fingerprint is not None and record.compaction.columns["calls"] >= 1
    assert target.exists()
