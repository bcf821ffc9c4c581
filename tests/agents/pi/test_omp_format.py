"""oh-my-pi's sessions where they differ from pi's, without its code (its code judges them in
test_judge_omp.py): the title slot line, its context rules, its settings files and its reserve rule."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SAMPLES, cli_invoker

from batchcompact.adapters.pi.omp import OMP_RULES, omp_settings, read_yaml_compaction
from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.adapters.pi.trigger import omp_threshold
from batchcompact.core.context import build_session_context, session_context
from batchcompact.formats.detect import detect_session_agent

SLOT = '{"type":"title","v":1,"title":"fix the export","updatedAt":"2026-05-01T10:00:00.000Z","pad":"        "}\n'


def omp_file(folder: Path, name: str = "small-fix.jsonl", slot: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    target.write_text((SLOT if slot else "") + (SAMPLES / "pi" / name).read_text())
    return target


def test_a_title_slot_first_is_read_as_an_omp_session(tmp_path):
    path = omp_file(tmp_path)
    assert detect_session_agent(path) == "pi"
    session = read_pi_session(path)
    assert session.problems == [] and session.header["type"] == "session"
    assert session.entries[0].line == 3  # line numbers stay the file's
    assert session.context_rules == OMP_RULES
    plain = read_pi_session(SAMPLES / "pi" / "small-fix.jsonl")
    assert plain.context_rules is None
    # under an oh-my-pi home without the slot (older oh-my-pi): its rules too
    older = omp_file(tmp_path / ".omp" / "agent" / "sessions" / "--p--", slot=False)
    assert read_pi_session(older).context_rules == OMP_RULES


def test_validate_accepts_omps_own_entry_shapes(tmp_path, capsys, monkeypatch):
    path = omp_file(tmp_path)
    with open(path, "a") as handle:
        last = json.loads(path.read_text().splitlines()[-1])["id"]
        handle.write(json.dumps({"type": "model_change", "id": "aa000001", "parentId": last,
                                 "timestamp": "2026-05-01T10:00:00.000Z", "model": "judge/judge-model"}) + "\n")
        handle.write(json.dumps({"type": "thinking_level_change", "id": "aa000002", "parentId": "aa000001",
                                 "timestamp": "2026-05-01T10:00:00.000Z", "thinkingLevel": None,
                                 "configured": None}) + "\n")
    code, out, err = cli_invoker(capsys, monkeypatch)("validate", path)
    assert code == 0, out + err


def test_omps_context_leaves_out_failed_turns_and_dangling_calls():
    """small-fix.jsonl holds one failed request (stopReason error, no content): pi replays it, oh-my-pi not."""
    session = read_pi_session(SAMPLES / "pi" / "small-fix.jsonl")
    pi = [m.message for m in build_session_context(session.path_entries()).messages]
    omp = [m.message for m in build_session_context(session.path_entries(), OMP_RULES).messages]
    failed = [m for m in pi if m.get("stopReason") == "error"]
    assert len(failed) == 1 and len(omp) == len(pi) - 1
    assert all(m.get("stopReason") not in ("error", "aborted") for m in omp)
    results = {m["toolCallId"] for m in omp if m["role"] == "toolResult"}
    calls = {b["id"] for m in omp if m["role"] == "assistant" for b in m["content"] if b.get("type") == "toolCall"}
    assert calls <= results


def test_show_context_is_omps_for_an_omp_session(tmp_path, capsys, monkeypatch):
    path = omp_file(tmp_path)
    code, out, _ = cli_invoker(capsys, monkeypatch)("show", "--context", "--format", "json", path)
    assert code == 0
    (row,) = json.loads(out)["rows"]
    assert len(row["context_messages"]) == len(session_context(read_pi_session(path)).messages) == 22


def test_report_reads_the_header_after_the_title_slot(tmp_path, capsys, monkeypatch):
    path = omp_file(tmp_path)
    code, out, _ = cli_invoker(capsys, monkeypatch)("report", path, "--by", "session", "--format", "json")
    assert code == 0
    (row,) = json.loads(out)["rows"]
    header = json.loads(SAMPLES.joinpath("pi", "small-fix.jsonl").read_text().splitlines()[0])
    assert (row["session_id"], row["project"]) == (header["id"], header["cwd"])


def test_omp_settings_files(tmp_path):
    agent = tmp_path / "home" / ".omp" / "agent"
    agent.mkdir(parents=True)
    (agent / "config.yml").write_text("compaction:\n  thresholdPercent: 70   # a comment\n  keepRecentTokens: 9000\n"
                                      "  strategy: context-full\nother:\n  thresholdTokens: 5\n")
    assert read_yaml_compaction(agent / "config.yml") == {"thresholdPercent": 70, "keepRecentTokens": 9000,
                                                         "strategy": "context-full"}
    project = tmp_path / "project"
    (project / ".omp").mkdir(parents=True)
    (project / ".omp" / "settings.json").write_text(json.dumps({"compaction": {"thresholdTokens": 120000,
                                                                               "reserveTokens": 20000}}))
    session = agent / "sessions" / "--p--" / "s.jsonl"
    values, files, reserve_set = omp_settings(str(session), str(project))
    assert values == {"threshold_percent": 70.0, "keep_recent_tokens": 9000, "threshold_tokens": 120000,
                      "reserve_tokens": 20000}
    assert files == [str(agent / "config.yml"), str(project / ".omp" / "settings.json")] and reserve_set
    (project / ".omp" / "config.yml").write_text("compaction:\n  strategy: off\n  thresholdTokens: -1\n")
    values, _, _ = omp_settings(str(session), str(project))
    assert values["enabled"] is False and values["threshold_tokens"] is None


def test_omps_reserve_rule():
    assert omp_threshold(200_000, 16_384, False) == 170_000  # 15% of the window beats the reserve
    assert omp_threshold(200_000, 50_000, True) == 150_000
    assert omp_threshold(16_000, 16_384, False) == 13_600  # a default reserve that leaves no room: 15%
    assert omp_threshold(16_000, 16_384, True) == 13_600  # any reserve over the window: 15%
    assert omp_threshold(20_000, 16_384, True) == 3_616  # an explicit one that fits is kept
