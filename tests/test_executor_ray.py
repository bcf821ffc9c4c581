"""--executor ray on one local Ray instance (ray.init(num_cpus=2)): the same results as --executor local.

One Ray instance is shared by the whole module (starting Ray takes seconds); the CLI runs in this
process, so `--executor ray` finds it already initialised and uses it.
"""

from __future__ import annotations

import json
import shutil
import sys
from datetime import UTC, datetime

import pytest

from tests.conftest import SAMPLES, copy_archive, required_module, session_outputs, shared_fixtures

ray = required_module("ray", "ray")

pytestmark = pytest.mark.slow

FROZEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address="127.0.0.1")
    yield
    ray.shutdown()


@pytest.fixture
def bc(capsys, monkeypatch):
    from batchcompact.cli import main

    for name in ("BATCHCOMPACT_MODEL", "BATCHCOMPACT_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    # byte-comparable outputs: new entries carry this time, on whichever node they are written
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(FROZEN.timestamp())))

    def invoke(*args):
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["batchcompact", *map(str, args)])
        with pytest.raises(SystemExit) as exit_info:
            main()
        out, err = capsys.readouterr()
        return exit_info.value.code or 0, out, err

    return invoke


def test_plan_rows_equal_local(bc, tmp_path):
    inputs = copy_archive(tmp_path / "in")
    code, local, err = bc("plan", inputs, "--force", "--format", "json")
    assert code == 0, err
    code, remote, err = bc("plan", inputs, "--force", "--format", "json", "--executor", "ray")
    assert code == 0, err
    assert json.loads(remote) == json.loads(local)
    assert len(json.loads(local)["rows"]) >= 9


def test_run_outputs_byte_identical_to_local(bc, tmp_path):
    inputs = copy_archive(tmp_path / "in")
    results = {}
    for kind in ("local", "ray"):
        out = tmp_path / kind
        code, text, err = bc("run", inputs, "--output-dir", out, "--force", "--min-age", "0", "--format", "json",
                             "--executor", kind)
        assert code in (0, 1), err
        rows = json.loads(text)["rows"]
        results[kind] = ({r["input_path"]: (r["status"], r["reason"], r["tokens_before"]) for r in rows},
                         session_outputs(out))
    assert results["ray"][0] == results["local"][0]
    assert results["ray"][1] == results["local"][1]
    assert any(status == "compacted" for status, _, _ in results["local"][0].values())


def test_report_identical_to_local(bc, tmp_path):
    inputs = copy_archive(tmp_path / "in")
    # other agents' SQLite databases and JSON documents too (read on the nodes as well)
    from agent_homes import build_home

    build_home(shared_fixtures() / "agents", inputs / "agents", agents=("opencode", "kilo", "gemini", "qwen"))
    texts = {}
    for kind in ("local", "ray"):
        code, text, err = bc("report", inputs, "--no-cache", "--format", "json", "--by", "session",
                             "--executor", kind)
        assert code == 0, err
        texts[kind] = text
    assert json.loads(texts["local"])["totals"]["cost_usd"] > 0
    # byte for byte: costs are summed exactly (batchcompact/money.py), whatever order the parts come in
    assert texts["ray"] == texts["local"]
    assert {"opencode", "kilo", "gemini", "qwen"} <= set(json.loads(texts["ray"])["totals"]["agents"])


def test_team_views_identical_to_local(bc, tmp_path):
    """`--by branch`, `--by provider` and `--by group` (with [report.projects] aliases and groups) on Ray's
    nodes: the same bytes as the local report."""
    from teams import write_home

    home = write_home(tmp_path / "home")
    inputs = copy_archive(tmp_path / "in")
    config = tmp_path / "config.toml"
    config.write_text('[report.projects.aliases]\n"/home/ana/src/shop" = "shop"\n'
                      '[report.projects.groups]\nstorefront = ["shop", "/home/bo/code/shop-api"]\n')
    for view in (("--by", "branch", "--breakdown"), ("--by", "provider"), ("--by", "group", "--since", "2026-03-02"),
                 ("--by", "machine", "--machine", "ana")):
        texts = {}
        for kind in ("local", "ray"):
            code, text, err = bc("report", inputs, home / ".claude", home / ".codex", "--config", config,
                                 "--no-cache", "--format", "csv", *view, "--executor", kind)
            assert code == 0, err
            texts[kind] = text
        assert texts["ray"] == texts["local"]
        assert any(word in texts["local"] for word in ("feature/login", "anthropic", "storefront", "ana,"))


def test_exports_on_ray_count_as_locally_and_a_newer_one_stops_the_report(bc, tmp_path):
    """Exports read on Ray's nodes: the same bytes as locally; an export of a newer schema version is the
    same one-line error (exit 2), not a node's traceback."""
    from teams import write_home

    home = write_home(tmp_path / "home")
    shared = tmp_path / "shared"
    shared.mkdir()
    code, _, err = bc("report", home / ".claude", home / ".codex", "--by", "request", "--format", "jsonl",
                      "-o", shared / "a.jsonl", "--machine", "ana", "--no-cache")
    assert code == 0, err
    texts = {}
    for kind in ("local", "ray"):
        code, texts[kind], err = bc("report", shared, "--by", "machine", "--format", "csv", "--no-cache",
                                    "--executor", kind)
        assert code == 0, err
    assert texts["ray"] == texts["local"] and "ana," in texts["local"]
    newer = shared / "b.jsonl"
    newer.write_text((shared / "a.jsonl").read_text().replace('"export_version":2', '"export_version":3'))
    code, out, err = bc("report", shared, "--no-cache", "--executor", "ray")
    assert code == 2 and out == ""
    assert f"Error: {newer}: a usage export of schema version 3; this batchcompact reads version 2" in err


def test_a_file_a_node_cannot_see_fails_alone_with_a_reason(tmp_path):
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.executor import RayExecutor
    from batchcompact.pipeline.planning import PlanOptions, iter_plan_rows

    present = shutil.copy(SAMPLES / "pi" / "big-refactor.jsonl", tmp_path / "present.jsonl")
    absent = tmp_path / "elsewhere" / "absent.jsonl"
    rows = list(iter_plan_rows([str(present), str(absent)], CompactionSettings(force=True), PlanOptions(),
                               executor=RayExecutor()))
    assert rows[0]["status"] == "compact"
    assert rows[1]["status"] == "error"
    assert "not found on host" in rows[1]["reason"] and "same path" in rows[1]["reason"]


def test_in_flight_is_bounded(tmp_path):
    """The driver never has more than HELD_PER_IN_FLIGHT x `in_flight` tasks submitted and not yet handed
    on, however many items there are."""
    from batchcompact.pipeline.executor import HELD_PER_IN_FLIGHT, RayExecutor

    executor = RayExecutor(in_flight=3)
    submitted = []

    def items():
        for n in range(60):
            submitted.append(n)
            yield n

    consumed = 0
    for value in executor.map(abs, items()):
        consumed += 1
        assert len(submitted) - consumed < HELD_PER_IN_FLIGHT * 3
        assert value == consumed - 1
    assert consumed == 60


def test_a_long_task_at_the_head_does_not_leave_the_cluster_idle(tmp_path):
    """While the first task is still running, the next ones run (up to the bound) and wait for their turn:
    the head waits for the last item's marker, which a window that waited for the head never reached."""
    from batchcompact.pipeline.executor import HELD_PER_IN_FLIGHT, RayExecutor

    def head_waits_for_the_last(item: tuple[int, str, int]) -> tuple[int, bool]:  # pickled by value for Ray
        import time
        from pathlib import Path

        index, folder, last = item
        if index != 0:
            Path(folder, str(index)).write_text("ran")
            return index, True
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if Path(folder, str(last)).exists():
                return index, True
            time.sleep(0.01)
        return index, False

    count = HELD_PER_IN_FLIGHT * 2
    items = [(i, str(tmp_path), count - 1) for i in range(count)]
    results = list(RayExecutor(in_flight=2).map(head_waits_for_the_last, items))
    assert [index for index, _ in results] == list(range(count))
    assert results[0] == (0, True), "the last item did not run while the head was working"


def test_a_task_the_cluster_keeps_losing_is_one_clear_error():
    """Our tasks never raise; a Ray error means the task was lost (its worker or node died) more often than
    it is retried: one line, exit 3 (RunAborted), for map and submit alike."""
    import os

    from batchcompact.pipeline.executor import RAY_TASK_RETRIES, ExecutorLost, RayExecutor

    executor = RayExecutor()
    with pytest.raises(ExecutorLost, match=f"^Ray lost a task after {RAY_TASK_RETRIES} retries: ") as lost:
        list(executor.map(os._exit, [1]))  # the worker process dies with each attempt
    assert "\n" not in str(lost.value) and lost.value.exit_code == 3
    with pytest.raises(ExecutorLost):
        executor.submit(os._exit, 1).result(timeout=300)
