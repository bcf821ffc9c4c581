"""`batchcompact eval`: hindsight probes from the turns after a cut, the user's rules and requests, the
baselines at the summary's length, reruns, --existing, --cut-at, a judge, and the goals on real sessions."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest
from click.testing import CliRunner
from conftest import fixture_path
from factories import Builder

from batchcompact.cli import cli
from batchcompact.eval.hindsight import hindsight_probes
from batchcompact.eval.probes import RULE, TASK, lexical_probes, requests, rule_sentences
from batchcompact.eval.scoring import score_context
from batchcompact.eval.text import COMMAND, FILE, SYMBOL, command_heads, names, stem

PAD = "lorem ipsum dolor sit amet " * 60  # filler that names nothing the probes look for
TOMLLIB = "Next, migrate the settings loader to tomllib and drop the toml dependency."


def _call(b: Builder, name: str, args: dict, output: str, error: bool = False, text: str = "") -> None:
    call_id = f"call{b.counter}_0"
    b.assistant(text, calls=[(name, args)])
    b.add("message", message={"role": "toolResult", "toolCallId": call_id, "toolName": name,
                              "content": [{"type": "text", "text": output}], "isError": error, "timestamp": 3})


def work_session(future: bool = False) -> Builder:
    """A pi session whose early half holds every probe kind and whose late half is filler; with `future`,
    three more model turns use what only the early half named (25 model turns in all)."""
    b = Builder()
    b.user("Add a --verbose flag to the command line parser in src/cli.py. Never change the public API.")
    _call(b, "read", {"path": "src/cli.py"}, "import click")
    _call(b, "edit", {"path": "src/cli.py", "oldText": "x = 1", "newText": "verbose = click.option('--verbose')"},
          "ok")
    _call(b, "write", {"path": "docs/verbose.md", "content": "# Verbose\n"}, "ok")
    _call(b, "bash", {"command": "uv run pytest tests/test_cli.py"},
          "FAILED tests/test_cli.py::test_verbose_flag - KeyError: 'verbosity'\nCommand exited with code 1",
          error=True)
    _call(b, "bash", {"command": "ruff check src"}, "src/cli.py:3: F401 unused import\nCommand exited with code 1",
          error=True)
    _call(b, "bash", {"command": "ruff check src"}, "All checks passed!")
    b.assistant("The ruff warning is fixed; the verbosity test still fails.")
    b.user("Please always run mypy before committing anything.")
    b.assistant("Understood.")
    b.user(TOMLLIB)
    _call(b, "read", {"path": "src/settings.py"}, "import toml\n\ndef load_settings(path):\n    return toml.load(path)")
    for index in range(12):
        b.assistant(f"Step {index}: {PAD}")
        b.user(f"continue {index} {PAD}")
    b.assistant("Done with the filler.")
    if future:
        _call(b, "edit", {"path": "src/settings.py", "oldText": "import toml",
                          "newText": "import tomllib\n\ndef load_settings(path):  # tomllib"}, "ok")
        _call(b, "bash", {"command": "uv run pytest tests/test_cli.py -k test_verbose_flag"}, "1 passed")
        b.assistant("Both are done.")
    return b


FUTURE_CUT = "88"  # with `work_session(future=True)`: the cut falls just before its last three model turns


@pytest.fixture
def eval_hooks(monkeypatch):
    """`examples/eval_baselines.py` importable: `empty_sentence` is the useless summary, `name_salad` the
    stuffed one."""
    from conftest import REPO

    monkeypatch.syspath_prepend(str(REPO / "examples"))
    yield
    sys.modules.pop("eval_baselines", None)


@pytest.fixture
def hooks(tmp_path, monkeypatch):
    """Write a module of summarizer hooks (`hooks:NAME`) from source."""
    def write(source: str) -> None:
        (tmp_path / "hooks.py").write_text(textwrap.dedent(source))
        monkeypatch.syspath_prepend(str(tmp_path))
    yield write
    sys.modules.pop("hooks", None)


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def eval_rows(*args: str) -> list[dict]:
    result = invoke("eval", *args, "--format", "json", "-q")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["rows"]


def by_label(rows: list[dict]) -> dict[str, dict]:
    return {r["summarizer"] + (f"@{r['baseline_for']}" if r["baseline_for"] else ""): r for r in rows}


# -- words, names and probes ----------------------------------------------------------------------------
def test_stems_names_and_commands():
    assert stem("committing") == stem("commits") == stem("commit") == "commit"
    assert stem("changes") == stem("change") and stem("parsing") == stem("parse")
    found = list(names("Edit ./src/cli.py:12 and call extract_facts() on SessionTree; see console.log, "
                       "http://127.0.0.1:8080/v1 and v1.2.3"))
    assert (FILE, "src/cli.py") in found and (SYMBOL, "extract_facts") in found and (SYMBOL, "sessiontree") in found
    assert ("value", "http://127.0.0.1:8080/v1") in found and ("value", "v1.2.3") in found
    assert not any(name == "console.log" for _, name in found)  # code, not a file
    assert command_heads("cd app && FOO=1 uv run pytest -q tests | tail -3") == ["uv run pytest"]
    # what no reader needs as a file: git's diff sides, a runtime's name, a bare extension, a method call
    found = list(names("diff --git a/src/x.ts b/src/x.ts; Node.js, .test.ts, process.env, Makefile, .env"))
    assert found == [(FILE, "src/x.ts"), (FILE, "src/x.ts"), (FILE, ".env")]
    assert command_heads("npm run test:unit; git status") == ["npm run test:unit"]


def test_lexical_probes_take_every_request_and_ignore_filler():
    messages = [e.message for e in work_session().objects() if e.message]
    probes = lexical_probes(messages)
    rules = [p.text for p in probes if p.kind == RULE]
    tasks = [p.text for p in probes if p.kind == TASK]
    assert rules == ["Never change the public API.", "Please always run mypy before committing anything."]
    assert tasks == ["Add a --verbose flag to the command line parser in src/cli.py.", TOMLLIB]  # no "continue N"


def test_filler_is_what_asks_for_nothing_new():
    messages = [{"role": "user", "content": text} for text in (
        "ok", "continue 3 " + PAD, "thanks, great", "Good, now add retries to the HTTP client.",
        "Always keep the tests green.", "ok, migrate the loader to tomllib")]
    assert requests(messages) == (["Always keep the tests green."], [
        "Good, now add retries to the HTTP client.", "ok, migrate the loader to tomllib"])


def test_a_rule_binds_the_work_and_a_question_or_a_musing_does_not():
    text = ("Never push to main. Should we cache the tokens? I don't think the parser is slow. "
            "I want you to always run the linter first. From now on install packages with uv. Keep going.")
    assert rule_sentences(text) == ["Never push to main.", "I want you to always run the linter first.",
                                    "From now on install packages with uv."]


def test_the_requests_a_reader_needs_are_the_goal_the_open_one_and_those_the_next_turns_continue():
    def user(text):
        return {"role": "user", "content": text}

    replaced = [user("Build a CSV exporter for the billing reports."), user("What does the retry header mean?"),
                user("Add pagination to the invoices endpoint with cursor tokens."),
                user("Rename the staging bucket to billing-archive.")]
    future = [{"role": "assistant", "content": [{"type": "text", "text": "Now the invoices endpoint pagination: "
                                                 "cursor tokens next."}]}]
    probes = [p.text for p in lexical_probes(replaced, [], future)]
    # the goal, the one the next turns continue, the open one at the cut; not the answered question
    assert probes == ["Build a CSV exporter for the billing reports.",
                      "Add pagination to the invoices endpoint with cursor tokens.",
                      "Rename the staging bucket to billing-archive."]
    # a later request in the kept messages closes the last one; what the kept tail keeps is no probe
    kept = [user("Now rename the staging bucket to billing-archive, and tag the release.")]
    from batchcompact.eval.scoring import ContextIndex

    probes = [p.text for p in lexical_probes(replaced, kept, future, ContextIndex(kept).keeps)]
    assert probes == ["Build a CSV exporter for the billing reports.",
                      "Add pagination to the invoices endpoint with cursor tokens."]


def test_a_paraphrase_keeps_a_rule_and_words_apart_do_not():
    (rule,) = [p for p in lexical_probes([{"role": "user", "content": "Never change the public API."}]) if p.kind == RULE]
    kept = score_context([rule], [{"role": "user", "content": "The public API must not change."}])
    apart = score_context([rule], [{"role": "user", "content": "public transport. " + PAD + " api docs. " + PAD
                                    + " the change log"}])
    assert kept.recall[RULE] == 1.0 and apart.recall[RULE] == 0.0


def test_hindsight_probes_are_what_the_next_turns_used_from_memory():
    def call(name, **arguments):
        return {"role": "assistant", "content": [{"type": "toolCall", "id": name, "name": "bash",
                                                  "arguments": arguments}]}

    def output(text):
        return {"role": "toolResult", "toolCallId": "x", "content": [{"type": "text", "text": text}]}

    replaced = [{"role": "user", "content": "look at src/a.py, src/b.py, src/c.py and src/d.py; load_config "
                                            "is in src/a.py"},
                call("0", command="make check"), output("ok")]
    kept = [{"role": "assistant", "content": [{"type": "text", "text": "src/c.py is fine"}]}]
    future = [call("1", command="cat src/a.py && make check"),        # both from memory: probes
              output("see src/b.py"), call("2", command="cat src/b.py"),  # shown just before: not a probe
              {"role": "user", "content": "now src/d.py"}, call("3", command="cat src/d.py"),  # the user said it
              call("4", command="cat src/c.py src/new.py && grep load_config")]  # kept; never named; a probe
    probes = hindsight_probes(replaced, kept, future)
    assert [(p.kind, p.text) for p in probes] == [(FILE, "src/a.py"), (COMMAND, "make check"),
                                                  (SYMBOL, "load_config")]


# -- the command ----------------------------------------------------------------------------------------
def test_cut_at_scores_a_summary_beside_its_baselines(tmp_path, eval_hooks):
    session = work_session(future=True).write(tmp_path / "s.jsonl")
    rows = eval_rows(str(session), "--cut-at", FUTURE_CUT, "--keep-recent-tokens", "2000", "--summarizer",
                     "builtin", "--summarizer", "eval_baselines:empty_sentence")
    labels = by_label(rows)
    assert list(labels) == [
        "builtin", "baseline:first@builtin", "baseline:last@builtin", "baseline:words@builtin",
        "baseline:list@builtin", "eval_baselines:empty_sentence", "baseline:first@eval_baselines:empty_sentence",
        "baseline:last@eval_baselines:empty_sentence", "baseline:words@eval_baselines:empty_sentence",
        "baseline:list@eval_baselines:empty_sentence", "baseline:tail"]
    builtin, useless, tail = labels["builtin"], labels["eval_baselines:empty_sentence"], labels["baseline:tail"]
    assert builtin["cut_at"] == 88 and builtin["status"] == "ok"
    assert (builtin["file_probes"], builtin["symbol_probes"], builtin["command_probes"]) == (2, 2, 1)
    assert builtin["rule_probes"] == 2 and builtin["task_probes"] == 2
    assert builtin["overall"] == 1.0 and builtin["hindsight_recall"] == 1.0
    assert tail["hindsight_recall"] == 0.0 and tail["summary_tokens"] == 0  # the kept tail never holds a probe
    # the useless summary keeps only the <read-files> tag's src/settings.py; the first N tokens of its length
    # say as little
    assert useless["file_recall"] == 0.5 and useless["symbol_recall"] == 0.0 and useless["rule_recall"] == 0.0
    first = labels["baseline:first@builtin"]
    assert first["summary_tokens"] == builtin["summary_tokens"] > 0
    # here the summary is as long as the whole span it replaces: its first N tokens keep as much, and the
    # summary does not beat them (the table marks it); on real sessions it does (test_goals_...)
    assert first["overall"] == 1.0 and builtin["lift_first"] == 0.0 and builtin["beats_first"] is False
    assert builtin["lift_tail"] > 0.5 and builtin["lift_words"] > 0
    assert "symbol: load_settings" in useless["missed"] and "command: uv run pytest" in useless["missed"]


def test_table_marks_a_summary_that_does_not_beat_the_first_tokens(tmp_path, eval_hooks):
    session = work_session(future=True).write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session), "--cut-at", FUTURE_CUT, "--keep-recent-tokens", "2000",
                    "--summarizer", "eval_baselines:empty_sentence")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split()[:6] == ["session", "#", "cut", "%", "summarizer", "status"]
    useless = next(line for line in lines if "eval_baselines:empty_sentence  " in line and "tokens" not in line)
    assert " !" in useless
    assert "Pooled over the cuts (1 with a score):" in result.stdout
    assert "first N tokens (eval_baselines:empty_sentence)" in result.stdout and "kept tail only" in result.stdout


def test_paraphrase_scores_as_the_quote_and_the_lost_request_shows(tmp_path, hooks):
    hooks('''
        FILES = "Files: src/cli.py, src/settings.py, tests/test_cli.py. Names: load_settings, test_verbose_flag. "
        RAN = "Tests run with uv run pytest. "

        def quoting(call):
            return (FILES + RAN + "Add a --verbose flag to the command line parser in src/cli.py. Never change "
                    "the public API. Please always run mypy before committing anything. Next, migrate the "
                    "settings loader to tomllib and drop the toml dependency.")

        def paraphrasing(call):
            return (FILES + RAN + "Goal: the parser in src/cli.py gets a verbose flag on its command line. The "
                    "public API must not change. Run mypy before every commit. Then the loader of settings "
                    "migrates to tomllib, dropping its toml dependency.")

        def forgetful(call):
            return FILES + RAN + "Add a --verbose flag to the command line parser in src/cli.py."
    ''')
    session = work_session(future=True).write(tmp_path / "s.jsonl")
    rows = by_label(eval_rows(str(session), "--cut-at", FUTURE_CUT, "--keep-recent-tokens", "2000",
                              "--summarizer", "hooks:quoting", "--summarizer", "hooks:paraphrasing",
                              "--summarizer", "hooks:forgetful", "--summarizer", "builtin"))
    quoting, paraphrasing = rows["hooks:quoting"], rows["hooks:paraphrasing"]
    assert quoting["overall"] == paraphrasing["overall"] == 1.0
    assert quoting["missed"] == paraphrasing["missed"] == []
    forgetful = rows["hooks:forgetful"]
    assert forgetful["task_recall"] == 0.5 and f"task: {TOMLLIB}" in forgetful["missed"]
    assert rows["builtin"]["task_recall"] == 1.0  # every request, however much filler follows it


def test_rerun_and_jobs_give_identical_numbers(tmp_path, eval_hooks):
    first = work_session(future=True).write(tmp_path / "a.jsonl")
    second = work_session(future=True).write(tmp_path / "b.jsonl")
    args = (str(first), str(second), "--cut-at", "50,90", "--keep-recent-tokens", "2000", "--summarizer",
            "builtin", "--summarizer", "eval_baselines:empty_sentence", "--state", str(tmp_path / "state.sqlite"))
    once = eval_rows(*args, "--jobs", "1")
    assert once == eval_rows(*args, "--jobs", "2")
    assert "eval: 4 compactions scored" in invoke("eval", *args).stderr  # each cut is a compaction
    assert [(r["path"], r["cut_at"]) for r in once if r["summarizer"] == "builtin"] == [
        (str(first), 50), (str(first), 90), (str(second), 50), (str(second), 90)]
    assert first.read_bytes() == work_session(future=True).write(tmp_path / "again.jsonl").read_bytes()


def test_table_and_parquet(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session), "--force", "--keep-recent-tokens", "2000")
    assert result.exit_code == 0
    assert "eval: 1 compaction scored, 6 rows" in result.stderr
    import polars as pl

    out = tmp_path / "eval.parquet"
    assert invoke("eval", str(session), "--force", "--keep-recent-tokens", "2000", "--format", "parquet",
                  "-o", str(out)).exit_code == 0
    frame = pl.read_parquet(out)
    assert frame["summarizer"].to_list()[0] == "builtin" and frame["overall"].to_list()[0] == 1.0


def test_a_cut_at_the_end_has_no_hindsight_and_says_why(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    (row, *_) = eval_rows(str(session), "--force", "--keep-recent-tokens", "2000")
    assert row["status"] == "ok" and row["file_probes"] == 0 and row["hindsight_recall"] is None
    assert "no turns after the cut" in row["reason"] and "--cut-at" in row["reason"]
    assert row["rule_probes"] == 2 and row["task_probes"] == 2


def test_a_session_too_short_to_cut_is_a_row_with_the_reason(tmp_path):
    b = Builder()
    b.user("Fix the typo in README.md please.")
    b.assistant("Fixed.")
    session = b.write(tmp_path / "short.jsonl")
    result = invoke("eval", str(session), "--cut-at", "50", "--format", "json", "-q")
    assert result.exit_code == 0
    rows = json.loads(result.stdout)["rows"]
    assert {(r["summarizer"], r["status"], r["reason"]) for r in rows} == {
        ("builtin", "skipped", "too short to cut"), ("baseline:tail", "skipped", "too short to cut")}
    table = invoke("eval", str(session), "--cut-at", "50")
    assert "too short to cut" in table.stdout  # the table says why too


def test_cut_at_is_checked(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    for value in ("0", "100", "x", ","):
        result = invoke("eval", str(session), "--cut-at", value)
        assert result.exit_code == 2 and "--cut-at" in result.output
    result = invoke("eval", str(session), "--cut-at", "50", "--existing")
    assert result.exit_code == 2 and "cannot be combined" in result.output


def test_nothing_to_compact_is_counted(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session))  # below the threshold without --force
    assert result.exit_code == 0
    assert "0 compactions scored, 0 rows; sessions skipped: 1 below threshold" in result.stderr


def test_existing_pi_compactions_with_the_turns_after_them():
    path = fixture_path("pi", "before-compaction.jsonl")
    rows = [r for r in eval_rows("--existing", str(path), "--summarizer", "builtin")
            if not r["summarizer"].startswith("baseline:")]
    assert [(r["compaction"], r["summarizer"]) for r in rows] == [
        (1, "recorded"), (1, "builtin"), (2, "recorded"), (2, "builtin")]
    recorded = [r for r in rows if r["summarizer"] == "recorded"]
    assert [r["line"] for r in recorded] == [360, 629]
    # pi's next turns needed packages/coding-agent/src/tui/tui-renderer.ts from before its first cut
    assert recorded[0]["file_probes"] == 1 and recorded[0]["file_recall"] == 1.0
    assert all(r["cost_usd"] is None for r in recorded)  # what the agent paid is not in the entry


def test_existing_claude_compaction_reaches_back_across_the_boundary():
    path = fixture_path("claude", "projects", "-home-USER-projects-spotter", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
    rows = by_label(eval_rows("--existing", str(path)))
    recorded = rows["recorded"]
    assert recorded["tokens_before"] == 170251  # the boundary's preTokens
    assert recorded["file_probes"] > 0 and recorded["file_recall"] >= 0.7
    assert rows["baseline:tail"]["hindsight_recall"] == 0.0


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


# -- the goals on real sessions ---------------------------------------------------------------------------
def test_goals_on_real_sessions_cut_inside(eval_hooks):
    """On the tuning set's real fixtures (bench/eval_table.py's SETS["tuning"] less the synth and public ones; the
    held-out set's goals are tests/test_eval_goals.py's): the built-in summary keeps >= 60% of the files the
    next turns needed, and more files and code names than the first, the last N tokens and the unchosen
    words of its length. Only pi's large session gives probes there (the Codex rollouts are redacted, the
    Claude Code sessions short). On the whole tuning set, a salad of the span's words at the summary's
    length scores no better than the unchosen-words baseline (on pi's large session alone it is +0.12:
    seven cuts of one session are too few for that claim)."""
    from batchcompact.eval.pooling import mean_rows
    from bench.eval_table import SETS, path_of

    names = tuple(n for n in SETS["tuning"] if not n.startswith("public:"))  # the fixtures' (the public
    # sessions' figures are the bench table's: they would add minutes here, and some are unreadable today)
    assert "pi/large-session.jsonl" in names and not any("before-compaction" in n for n in names)
    real = {path_of(n) for n in names if ":" not in n}
    rows = eval_rows(*map(path_of, names), "--cut-at", "30,40,50,60,70,80,90", "--keep-recent-tokens", "3000",
                     "--summarizer", "builtin", "--summarizer", "eval_baselines:name_salad")
    means = by_label(mean_rows([r for r in rows if any(r["path"].startswith(p) for p in real)]))
    builtin = means["builtin"]
    assert builtin["cuts"] >= 7 and builtin["file_probes"] >= 10
    assert builtin["file_recall"] >= 0.6
    for baseline in ("first", "last", "words"):
        assert builtin["names_recall"] > means[f"baseline:{baseline}@builtin"]["names_recall"] + 0.1
    everything = by_label(mean_rows(rows))
    salad = everything["eval_baselines:name_salad"]
    assert salad["lift_words"] <= 0.05 and salad["names_recall"] < everything["builtin"]["names_recall"] - 0.1


def test_goals_at_pis_recorded_compactions():
    """At least what pi's own LLM summaries keep of what its next turns needed."""
    rows = eval_rows("--existing", str(fixture_path("pi", "before-compaction.jsonl")), "--summarizer", "builtin")
    for number in (1, 2):
        recorded, builtin = (next(r for r in rows if r["compaction"] == number and r["summarizer"] == label)
                             for label in ("recorded", "builtin"))
        assert (builtin["hindsight_recall"] or 0) >= (recorded["hindsight_recall"] or 0)
        assert builtin["overall"] >= recorded["overall"]


# -- a model summarizer and the judge through the loopback server ----------------------------------------
GRADES = {  # per question, per summary: accuracy (the other dimensions follow from it)
    "Which files": {"builtin": 1, "first": 5, "model": 2},
    "Which commands": {"builtin": 2, "first": 4, "model": 3},
    "Which rules": {"builtin": 3, "first": 3, "model": 4},
    "What has the user": {"builtin": 4, "first": 2, "model": 5},
}


def _whose(context: str) -> str:
    if "Summary from the model." in context:
        return "model"
    return "builtin" if "## Relevant Files and Code Names" in context else "first"


def _behave(body):
    from llm_server import Answer

    system = body["messages"][0]["content"]
    prompt = body["messages"][-1]["content"]
    if system.startswith("You grade"):
        question, answer = prompt.split("Question: ", 1)[1], prompt.split("Answer to grade:\n", 1)[1]
        start = next(q for q in GRADES if question.startswith(q))
        grade = GRADES[start][answer.strip()]
        return Answer(json.dumps({"accuracy": grade, "context_awareness": grade, "artifact_trail": 5 - grade,
                                  "completeness": grade, "continuity": grade, "instruction_following": grade}))
    if system.startswith("You are a coding agent resuming"):
        return Answer(_whose(prompt.split("</context>")[0]))
    return Answer("Summary from the model. Never change the public API.")


def test_model_summarizer_and_judge_grades_land_on_their_rows(tmp_path, llm_server):
    llm_server.default = _behave
    session = work_session(future=True).write(tmp_path / "s.jsonl")
    args = ("eval", str(session), "--cut-at", FUTURE_CUT, "--keep-recent-tokens", "2000", "--summarizer", "builtin",
            "--summarizer", "openai/gpt-4o-mini", "--judge-model", "openai/gpt-4o-mini", "--api-base",
            llm_server.api_base, "--api-key", "sk-test", "--state", str(tmp_path / "state.sqlite"), "--format",
            "json", "-q")
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    rows = by_label(json.loads(first.stdout)["rows"])
    model = rows["openai/gpt-4o-mini"]
    assert model["rule_recall"] == 0.5  # the public-API rule is in the summary, the mypy rule is not
    assert model["cost_usd"] > 0 and model["judge_cost_usd"] > 0
    expected = {"builtin": "builtin", "baseline:first@builtin": "first", "openai/gpt-4o-mini": "model",
                "baseline:first@openai/gpt-4o-mini": "first"}
    for label, whose in expected.items():
        grades = [GRADES[q][whose] for q in GRADES]
        mean = round(sum(grades) / 4, 3)
        assert rows[label]["judge_accuracy"] == mean, label
        assert rows[label]["judge_artifact_trail"] == round(5 - sum(grades) / 4, 3), label
    assert rows["baseline:last@builtin"]["judge_overall"] is None  # graded: the summaries and their first N
    # one summary call, then 4 questions answered and graded per graded row (the same prompt twice: once)
    asked = len(llm_server.requests)
    assert sum("You grade" in r.body["messages"][0]["content"] for r in llm_server.requests) <= 4 * 4 < asked
    # a rerun is answered from the summary cache: no request, the same numbers
    again = invoke(*args)
    assert len(llm_server.requests) == asked
    assert json.loads(again.stdout)["rows"] == json.loads(first.stdout)["rows"]


# -- our own compactions, bad input, bad models ----------------------------------------------------------
def test_our_compactions_score_as_the_planned_cut_did(tmp_path):
    from conftest import SAMPLES

    out = tmp_path / "out"
    samples = [SAMPLES / "claude", SAMPLES / "codex", SAMPLES / "pi" / "big-refactor.jsonl"]
    assert invoke("run", *map(str, samples), "--output-dir", str(out), "--min-age", "0", "-q").exit_code == 0
    planned = sorted((r for r in eval_rows(*map(str, samples), "--jobs", "2") if r["summarizer"] == "builtin"),
                     key=lambda r: r["format"])
    recorded = sorted((r for r in eval_rows("--existing", str(out), "--jobs", "2") if r["summarizer"] == "recorded"),
                      key=lambda r: r["format"])
    assert [r["format"] for r in recorded] == [r["format"] for r in planned] == ["claude", "codex", "pi"]
    columns = ("rule_probes", "task_probes", "rule_recall", "task_recall", "overall", "tokens_before")
    for ours, plan in zip(recorded, planned, strict=True):
        # the kept tail a Claude/Codex compaction re-appends is not part of the replaced span
        if ours["format"] == "codex":
            # Codex's written compaction re-adds the user's earlier prompts before the summary: its kept
            # context holds their rules, so they are no probes there; a planned cut does not model that
            assert ours["rule_probes"] < plan["rule_probes"] and ours["tokens_before"] == plan["tokens_before"]
            continue
        assert [ours[c] for c in columns] == [plan[c] for c in columns]


def test_invalid_file_is_named_with_its_line_and_fails(tmp_path):
    good = work_session().write(tmp_path / "good.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text().splitlines()[0] + "\n{not json")  # torn (a line pi skips is a warning)
    result = invoke("eval", str(good), str(bad), "--force", "--keep-recent-tokens", "2000")
    assert result.exit_code == 1
    assert f"error: {bad}:2: " in result.stderr
    assert "eval: 1 compaction scored, 6 rows" in result.stderr


def test_unknown_model_is_a_usage_error_before_any_file_is_read(tmp_path):
    session = work_session().write(tmp_path / "s.jsonl")
    result = invoke("eval", str(session), "--summarizer", "nosuchprovider/nomodel")
    assert result.exit_code == 2
    assert "nosuchprovider/nomodel" in result.output


def test_codex_compactions_and_an_unreadable_remote_one():
    path = fixture_path("codex", "coverage", "agent-sessions_codex_small.jsonl")
    rows = [r for r in eval_rows("--existing", str(path)) if r["summarizer"] == "recorded"]
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
    b.user(f"And in the staging job too: {secret}")  # kept: the judge's prompts show it
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


def test_a_file_is_what_a_later_tool_call_names_and_a_bare_name_must_say_which_file():
    def call(**arguments):
        return {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "read",
                                                  "arguments": arguments}]}

    replaced = [{"role": "user", "content": "See src/a/index.ts, src/b/index.ts and lib/cli.py; the Makefile "
                                            "has a check target"}, call(path="Makefile")]
    future = [call(path="src/a/index.ts"), call(path="lib/cli.py"), call(path="Makefile")]
    probes = {p.text: p for p in hindsight_probes(replaced, [], future)}
    assert list(probes) == ["src/a/index.ts", "lib/cli.py", "makefile"]  # a path argument, whatever its shape
    # `index.ts` alone does not say which of the two; `cli.py` alone does
    assert probes["src/a/index.ts"].spellings == ("src/a/index.ts", "a/index.ts")
    assert probes["lib/cli.py"].spellings == ("lib/cli.py", "cli.py")
    context = [{"role": "user", "content": "Files: index.ts, cli.py, Makefile"}]
    assert score_context(list(probes.values()), context).missed == ["file: src/a/index.ts"]
