"""`batchcompact eval`: probes from the replaced span, recall in the compacted context, reruns, --existing, a judge."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner
from conftest import fixture_path
from factories import Builder

from batchcompact.cli import cli
from batchcompact.eval.probes import ARTIFACT, ERROR, INSTRUCTION, TASK, derive_probes, path_spellings
from batchcompact.eval.scoring import ContextIndex, score_context

PAD = "lorem ipsum dolor sit amet " * 60  # kept-tail filler that names nothing the probes look for


def _call(b: Builder, name: str, args: dict, output: str, error: bool = False, text: str = "") -> None:
    call_id = f"call{b.counter}_0"
    b.assistant(text, calls=[(name, args)])
    b.add("message", message={"role": "toolResult", "toolCallId": call_id, "toolName": name,
                              "content": [{"type": "text", "text": output}], "isError": error, "timestamp": 3})


def work_session() -> Builder:
    """A pi session whose early half holds every probe kind and whose late half is filler."""
    b = Builder()
    b.user("Add a --verbose flag to the command line parser in src/cli.py. Never change the public API.")
    _call(b, "read", {"path": "src/cli.py"}, "import click")
    _call(b, "edit", {"path": "src/cli.py", "oldText": "x = 1", "newText": "verbose = click.option('--verbose')"},
          "ok")
    _call(b, "write", {"path": "docs/verbose.md", "content": "# Verbose\n"}, "ok")
    _call(b, "bash", {"command": "pytest tests/test_cli.py"},
          "FAILED tests/test_cli.py::test_verbose_flag - KeyError: 'verbosity'\nCommand exited with code 1",
          error=True)
    _call(b, "bash", {"command": "ruff check src"}, "src/cli.py:3: F401 unused import\nCommand exited with code 1",
          error=True)
    _call(b, "bash", {"command": "ruff check src"}, "All checks passed!")
    b.assistant("The ruff warning is fixed; the verbosity test still fails.")
    b.user("Please always run mypy before committing anything.")
    b.assistant("Understood.")
    b.user("Next, migrate the settings loader to tomllib and drop the toml dependency.")
    for index in range(12):
        b.assistant(f"Step {index}: {PAD}")
        b.user(f"continue {index} {PAD}")
    b.assistant("Done with the filler.")
    return b


@pytest.fixture
def eval_hooks(monkeypatch):
    """`examples/eval_baselines.py` importable: its `empty_sentence` is the useless summary."""
    from conftest import REPO

    monkeypatch.syspath_prepend(str(REPO / "examples"))
    yield
    sys.modules.pop("eval_baselines", None)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def eval_rows(*args: str) -> list[dict]:
    result = invoke("eval", *args, "--format", "json", "-q")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["rows"]


# -- probes and scoring ---------------------------------------------------------------------------------
def test_probes_of_each_kind():
    messages = [e.message for e in work_session().objects()]
    probes = derive_probes([m for m in messages if m], cwd="/work")
    by_kind = {kind: [p.text for p in probes if p.kind == kind] for kind in (ARTIFACT, ERROR, INSTRUCTION, TASK)}
    assert by_kind[ARTIFACT] == ["edited src/cli.py", "wrote docs/verbose.md"]  # a read is not an artifact
    # the ruff failure was fixed by a later run: only the pytest failure is unresolved
    assert len(by_kind[ERROR]) == 1 and "pytest tests/test_cli.py" in by_kind[ERROR][0]
    assert by_kind[INSTRUCTION] == ["Never change the public API.", "Please always run mypy before committing anything."]
    assert by_kind[TASK][0].startswith("Add a --verbose flag")
    assert by_kind[TASK][-1].startswith("continue 11")


def test_path_spellings_and_whole_name_match():
    assert path_spellings("/work/src/cli.py", "/work") == ("/work/src/cli.py", "src/cli.py", "cli.py")
    probe = derive_probes([
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "write",
                                           "arguments": {"path": "src/cli.py", "content": "x"}}]},
        {"role": "toolResult", "toolCallId": "c", "content": [{"type": "text", "text": "ok"}], "isError": False},
    ])[0]
    assert ContextIndex([{"role": "user", "content": "changed mycli.py and cli.pyc"}]).has_path(probe.paths) is False
    assert ContextIndex([{"role": "user", "content": "Edited `cli.py`."}]).has_path(probe.paths) is True


def test_terms_must_stay_together():
    probes = derive_probes([{"role": "user", "content": "Never change the public API of the parser module."}])
    rule = next(p for p in probes if p.kind == INSTRUCTION)
    together = score_context([rule], [{"role": "user", "content": "Rule: keep the public API of the parser module."}])
    apart = score_context([rule], [{"role": "user", "content": "api docs. the change log. public transport. module"}])
    assert together.recall[INSTRUCTION] == 1.0
    assert apart.recall[INSTRUCTION] == 0.0


# -- the command ----------------------------------------------------------------------------------------
def test_useful_summary_scores_well_above_a_useless_one(tmp_path, eval_hooks):
    session = work_session().write(tmp_path / "s.jsonl")
    rows = eval_rows(str(session), "--force", "--keep-recent-tokens", "2000", "--summarizer", "builtin",
                     "--summarizer", "eval_baselines:empty_sentence")
    builtin, useless = rows
    assert (builtin["summarizer"], useless["summarizer"]) == ("builtin", "eval_baselines:empty_sentence")
    assert builtin["artifact_probes"] == 2 and builtin["error_probes"] == 1
    assert builtin["instruction_probes"] == 2 and builtin["task_probes"] == 2
    assert builtin["overall"] == 1.0
    # the useless summary keeps only what the agent's file tags and the kept tail hold
    assert useless["error_recall"] == 0.0 and useless["instruction_recall"] == 0.0
    assert useless["artifact_recall"] == 1.0  # <modified-files> is written whatever the summarizer says
    assert useless["overall"] <= 0.5
    assert builtin["overall"] - useless["overall"] >= 0.5
    # the summary's own words: everything for ours, nothing for one empty sentence
    assert (builtin["summary_overall"], useless["summary_overall"]) == (1.0, 0.0)
    assert "error: `pytest tests/test_cli.py` failed: exit 1: FAILED tests/test_cli.py::test_verbose_flag - " \
           "KeyError: 'verbosity'" in useless["missed"]
    assert builtin["tokens_after"] > 0  # tokens_before is the planner's: the usage these factories record (0)
    assert builtin["cost_usd"] == 0.0 and useless["cost_usd"] == 0.0


def test_rerun_gives_identical_numbers(tmp_path, eval_hooks):
    session = work_session().write(tmp_path / "s.jsonl")
    args = (str(session), "--force", "--keep-recent-tokens", "2000", "--summarizer", "builtin",
            "--summarizer", "eval_baselines:empty_sentence", "--state", str(tmp_path / "state.sqlite"))
    assert eval_rows(*args) == eval_rows(*args)
    assert session.read_bytes() == work_session().write(tmp_path / "again.jsonl").read_bytes()  # never written


def test_table_and_parquet(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session), "--force", "--keep-recent-tokens", "2000")
    assert result.exit_code == 0
    header = result.stdout.splitlines()[0].split()
    assert header[:5] == ["session", "#", "summarizer", "status", "artifacts"]
    assert "eval: 1 compactions scored, 1 rows" in result.stderr
    import polars as pl

    out = tmp_path / "eval.parquet"
    assert invoke("eval", str(session), "--force", "--keep-recent-tokens", "2000", "--format", "parquet",
                  "-o", str(out)).exit_code == 0
    frame = pl.read_parquet(out)
    assert frame["overall"].to_list() == [1.0]


def test_nothing_to_compact_is_counted(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session))  # below the threshold without --force
    assert result.exit_code == 0
    assert "0 compactions scored, 0 rows; sessions skipped: 1 below threshold" in result.stderr


def test_existing_pi_compactions():
    path = fixture_path("pi", "before-compaction.jsonl")
    rows = eval_rows("--existing", str(path), "--summarizer", "builtin")
    assert [(r["compaction"], r["summarizer"]) for r in rows] == [
        (1, "recorded"), (1, "builtin"), (2, "recorded"), (2, "builtin")]
    recorded = [r for r in rows if r["summarizer"] == "recorded"]
    assert [r["line"] for r in recorded] == [360, 629]
    assert [r["artifact_probes"] for r in recorded] == [7, 10]
    assert all(r["artifact_recall"] == 1.0 and r["error_recall"] is None for r in recorded)
    assert all(r["cost_usd"] is None for r in recorded)  # what the agent paid is not in the entry


def test_existing_claude_compaction_reaches_back_across_the_boundary():
    path = fixture_path("claude", "projects", "-home-USER-projects-spotter", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
    rows = eval_rows("--existing", str(path))
    assert len(rows) == 1 and rows[0]["summarizer"] == "recorded"
    assert rows[0]["tokens_before"] == 170251  # the boundary's preTokens
    assert rows[0]["artifact_probes"] == 7 and rows[0]["artifact_recall"] == 1.0


def test_existing_without_compactions_is_counted(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", "--existing", str(session))
    assert result.exit_code == 0
    assert "sessions skipped: 1 no compaction in the file" in result.stderr


def test_max_cost_refuses_before_any_call(tmp_path, llm_server):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session), "--force", "--keep-recent-tokens", "2000", "--summarizer",
                    "openai/gpt-4o-mini", "--api-base", llm_server.api_base, "--api-key", "sk-test",
                    "--max-cost", "0", "--state", str(tmp_path / "state.sqlite"))
    assert result.exit_code == 3
    assert "exceeds --max-cost $0.0000; nothing was summarized" in result.output
    assert llm_server.requests == []


# -- a model summarizer and the judge through the loopback server ----------------------------------------
def _behave(body):
    from llm_server import Answer

    system = body["messages"][0]["content"]
    if system.startswith("You grade"):
        return Answer('{"accuracy": 4, "context_awareness": 3, "artifact_trail": 5, "completeness": 2, '
                      '"continuity": 4, "instruction_following": 5}')
    if system.startswith("You are a coding agent resuming"):
        return Answer("src/cli.py and docs/verbose.md")
    return Answer("## Goal\nAdd a --verbose flag to src/cli.py.\n\n## Constraints\n- Never change the public API.")


def test_model_summarizer_and_judge(tmp_path, llm_server):
    llm_server.default = _behave
    session = work_session().write(tmp_path / "s.jsonl")
    args = ("eval", str(session), "--force", "--keep-recent-tokens", "2000", "--summarizer", "openai/gpt-4o-mini",
            "--judge-model", "openai/gpt-4o-mini", "--api-base", llm_server.api_base, "--api-key", "sk-test",
            "--state", str(tmp_path / "state.sqlite"), "--format", "json", "-q")
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    (row,) = json.loads(first.stdout)["rows"]
    assert row["summarizer"] == "openai/gpt-4o-mini"
    assert row["instruction_recall"] == 0.5  # the public-API rule is in the summary, the mypy rule is not
    assert row["error_recall"] == 0.0
    # one summary call, then 4 questions answered and 4 graded
    kinds = [r.body["messages"][0]["content"][:20] for r in llm_server.requests]
    assert len(kinds) == 9 and sum(k.startswith("You grade") for k in kinds) == 4
    assert (row["judge_accuracy"], row["judge_artifact_trail"], row["judge_completeness"]) == (4.0, 5.0, 2.0)
    assert row["judge_overall"] == round((4 + 3 + 5 + 2 + 4 + 5) / 6, 3)
    assert row["cost_usd"] > 0 and row["judge_cost_usd"] > 0
    answer = next(r for r in llm_server.requests if r.body["messages"][0]["content"].startswith("You are a coding"))
    assert "<context>" in answer.user_prompt and "Never change the public API" in answer.user_prompt
    # a rerun is answered from the summary cache: no request, the same numbers
    again = invoke(*args)
    assert len(llm_server.requests) == 9
    assert json.loads(again.stdout)["rows"] == [row]


# -- our own compactions, bad input, bad models ----------------------------------------------------------
def test_our_compactions_score_as_the_planned_cut_did(tmp_path):
    from conftest import SAMPLES

    out = tmp_path / "out"
    samples = [SAMPLES / "claude", SAMPLES / "codex", SAMPLES / "pi" / "big-refactor.jsonl"]
    assert invoke("run", *map(str, samples), "--output-dir", str(out), "--min-age", "0", "-q").exit_code == 0
    planned = sorted(eval_rows(*map(str, samples), "--jobs", "2"), key=lambda r: r["format"])
    recorded = sorted(eval_rows("--existing", str(out), "--jobs", "2"), key=lambda r: r["format"])
    assert [r["format"] for r in recorded] == [r["format"] for r in planned] == ["claude", "codex", "pi"]
    columns = ("artifact_probes", "error_probes", "instruction_probes", "task_probes", "overall", "tokens_before")
    for ours, plan in zip(recorded, planned, strict=True):
        assert ours["summarizer"] == "recorded" and plan["summarizer"] == "builtin"
        # the kept tail a Claude/Codex compaction re-appends is not part of the replaced span
        assert [ours[c] for c in columns] == [plan[c] for c in columns]


def test_invalid_file_is_named_with_its_line_and_fails(tmp_path):
    good = work_session().write(tmp_path / "good.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text().splitlines()[0] + "\n{not json\n")
    result = invoke("eval", str(good), str(bad), "--force", "--keep-recent-tokens", "2000")
    assert result.exit_code == 1
    assert f"error: {bad}:2: " in result.stderr
    assert "eval: 1 compactions scored, 1 rows" in result.stderr


def test_unknown_model_is_a_usage_error_before_any_file_is_read(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session), "--summarizer", "nosuchprovider/nomodel")
    assert result.exit_code == 2
    assert "nosuchprovider/nomodel" in result.output


def test_codex_compactions_and_an_unreadable_remote_one():
    path = fixture_path("codex", "coverage", "agent-sessions_codex_small.jsonl")
    rows = eval_rows("--existing", str(path))
    assert [r["compaction"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert rows[0]["status"] == "unreadable" and "encrypted" in rows[0]["reason"] and rows[0]["overall"] is None
    assert all(r["status"] == "ok" for r in rows[1:])


def test_secrets_are_redacted_before_summaries_and_judge_calls_leave(tmp_path, llm_server):
    llm_server.default = _behave
    secret = "sk-proj-" + "Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9f"
    b = Builder()
    b.user(f"Use OPENAI_API_KEY={secret} for the integration test.")  # summarized
    b.assistant("Noted.")
    for index in range(12):
        b.user(f"continue {index} {PAD}")
        b.assistant(f"Step {index}: {PAD}")
    b.user(f"And in the smoke test too: OPENAI_API_KEY={secret}")  # kept: the judge's prompts show it
    b.assistant("Noted too.")
    session = b.write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session), "--force", "--keep-recent-tokens", "2000", "--summarizer",
                    "openai/gpt-4o-mini", "--judge-model", "openai/gpt-4o-mini", "--api-base", llm_server.api_base,
                    "--api-key", "sk-test", "--state", str(tmp_path / "state.sqlite"), "--format", "json", "-q")
    assert result.exit_code == 0, result.output
    assert len(llm_server.requests) > 1
    sent = [json.dumps(r.body) for r in llm_server.requests]
    assert not any(secret in body for body in sent)
    # the summary calls (several run at once, so not always the first request) carry the span's secret redacted
    summaries = [body for body in sent if "You are a context summarization assistant" in body]
    assert summaries and any("[REDACTED:" in body for body in summaries)
    assert any("[REDACTED:" in body and "You are a coding agent resuming" in body for body in sent)  # the judge's
