"""--executor ray on a two-node cluster on this machine: a node lost mid-run loses no file.

`ray.cluster_utils.Cluster` starts a head (no CPUs: it runs no task) and two worker nodes as separate
raylets on loopback. Ray would
advertise the machine's outward address for a "cluster"; Ray's own switch for single-machine clusters
(`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read by the processes it starts and patched in this one) keeps
every address on 127.0.0.1, so the test never leaves loopback.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, required_module

ray = required_module("ray", "ray")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster():
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    saved_env, saved_flag = os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"), ray_constants.ENABLE_RAY_CLUSTER
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False  # this process resolves "localhost" to 127.0.0.1 too
    # The head runs no tasks: every task runs on one of the two workers, so removing one surely loses some.
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    nodes.add_node(num_cpus=1)
    worker = nodes.add_node(num_cpus=1)
    ray.init(address=nodes.address, log_to_driver=False, configure_logging=False)
    try:
        yield nodes, worker
    finally:
        ray.shutdown()
        nodes.shutdown()
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        else:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = saved_env


def test_a_node_removed_mid_plan_loses_no_file(cluster, tmp_path):
    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.executor import LocalExecutor, RayExecutor
    from batchcompact.pipeline.planning import PlanOptions, iter_plan_rows

    nodes, worker = cluster
    for copy in range(6):
        shutil.copytree(SAMPLES, tmp_path / f"c{copy}", ignore=shutil.ignore_patterns("*.md", "*.json"))
    paths = sorted(str(p) for p in Path(tmp_path).rglob("*.jsonl"))
    settings, options = CompactionSettings(force=True), PlanOptions()
    local = list(iter_plan_rows(paths, settings, options, executor=LocalExecutor(1)))

    executor = RayExecutor()
    assert ray.cluster_resources().get("CPU") == 2  # both nodes are in
    rows = []
    for row in iter_plan_rows(paths, settings, options, executor=executor):
        rows.append(row)
        if len(rows) == 3:  # tasks are in flight on both nodes: take one away
            nodes.remove_node(worker, allow_graceful=False)
    assert rows == local
    assert len(rows) == len(paths) >= 40
    assert all(row["status"] != "error" for row in rows), [r["reason"] for r in rows if r["status"] == "error"]


def test_a_node_removed_mid_run_still_compacts_every_session_as_local_does(cluster, tmp_path, monkeypatch):
    """`run` with the built-in summarizer compacts each session inside its Ray task (read, summarize,
    write, verify). Tasks lost with their node are run again elsewhere: every session ends as it does
    locally, with byte-identical outputs (SOURCE_DATE_EPOCH fixes the time new entries carry)."""
    import time

    from batchcompact.core.planner import CompactionSettings
    from batchcompact.pipeline.executor import RayExecutor
    from batchcompact.pipeline.run import Runner, RunOptions, run_archive
    from batchcompact.summarize import BuiltinSummarizer, PoolSettings

    nodes, _ = cluster
    before = ray.cluster_resources().get("CPU", 0)  # 1 when the test above took a node away
    worker = nodes.add_node(num_cpus=1)
    deadline = time.monotonic() + 60
    while ray.cluster_resources().get("CPU") != before + 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.cluster_resources().get("CPU") == before + 1
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767323045")
    inputs = tmp_path / "in"
    for copy in range(4):
        shutil.copytree(SAMPLES, inputs / f"c{copy}", ignore=shutil.ignore_patterns("*.md", "*.json"))
    settings = CompactionSettings(force=True)

    def run(name, executor=None):
        options = RunOptions(output_dir=tmp_path / name, min_age_s=0, jobs=1)
        summary = run_archive([str(inputs)], settings, options, BuiltinSummarizer(), PoolSettings(),
                              executor=executor)
        rows = {Path(r["input_path"]).relative_to(inputs): (r["status"], r["reason"]) for r in summary.rows}
        files = {p.relative_to(tmp_path / name): p.read_bytes() for p in (tmp_path / name).rglob("*.jsonl")}
        return rows, files

    local_rows, local_files = run("local")
    finished = []
    real_finish = Runner.finish

    def finish(self, row, status, reason=None):
        real_finish(self, row, status, reason)
        finished.append(status)
        if len(finished) == 3:  # tasks are in flight on both nodes: take one away
            nodes.remove_node(worker, allow_graceful=False)

    monkeypatch.setattr(Runner, "finish", finish)
    ray_rows, ray_files = run("ray", RayExecutor())
    assert len(finished) > 3 and worker not in nodes.worker_nodes  # it went mid-run
    assert ray_rows == local_rows
    assert ray_files == local_files
    assert sum(status == "compacted" for status, _ in local_rows.values()) >= 20
