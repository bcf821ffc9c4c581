"""What a new user found (issue #56, items 12-22), from the command line: each test fails before its fix."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import REPO, SAMPLES

from batchcompact.cli import cli

SMALL_FIX = SAMPLES / "pi" / "small-fix.jsonl"


def invoke(*args: str, **kwargs):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kwargs)


# ---- 12. plan: a piped table keeps its reasons whole; the summary counts errors by kind ----

def test_plan_piped_keeps_each_reason_whole_and_counts_errors_by_kind(tmp_path):
    packed = tmp_path / "packed.jsonl.gz"
    packed.write_bytes(gzip.compress(SMALL_FIX.read_bytes()))
    planned = invoke("plan", str(packed), str(SMALL_FIX))
    assert planned.exit_code == 1, planned.output
    reason = "gzip-compressed: decompress it first (gunzip), then run again"
    [line] = [line for line in planned.stdout.splitlines() if line.startswith(str(packed))]
    assert line.endswith(reason)
    assert "2 sessions: 1 error, 1 skip\n" in planned.stdout
    assert f"\n  1 error: 1 {reason}\n" in planned.stdout
    as_json = invoke("plan", str(packed), "--format", "json")
    assert f"\n  1 error: 1 {reason}\n" in as_json.stderr


# ---- 13. an unknown model and a missing key are refused before litellm is imported ----

REFUSE_WITHOUT_LITELLM = """
import sys
from batchcompact.cli import main
sys.argv = ["batchcompact", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    print("exit", exc.code, "litellm imported:", "litellm" in sys.modules)
"""


@pytest.mark.parametrize(("model", "code", "said"), [
    ("nosuch/model", 2, "Error: unknown model 'nosuch/model': litellm cannot tell its provider; name it "
                        "provider/model"),
    ("openai/gpt-4o-mini", 3, "Error: no API key for openai/gpt-4o-mini: set OPENAI_API_KEY or pass --api-key "
                              "(for a keyless local server add --api-base URL); nothing was sent"),
    ("gpt-4o-mini", 3, "Error: no API key for gpt-4o-mini: set OPENAI_API_KEY or pass --api-key"),
])
def test_run_refuses_an_unknown_model_or_a_missing_key_without_importing_litellm(tmp_path, model, code, said):
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_API_BASE", "_BASE_URL"))}
    done = subprocess.run([sys.executable, "-c", REFUSE_WITHOUT_LITELLM, "run", str(SMALL_FIX), "--output-dir",
                           str(tmp_path / "out"), "--min-age", "0", "--model", model],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.stderr.startswith(said), done.stderr
    assert done.stdout.strip() == f"exit {code} litellm imported: False"


@pytest.mark.parametrize("model", ["nosuch/model", "opneai/gpt-4o-mini", "anthropic/x", "openai/my-local-model",
                                   "openrouter/openai/gpt-4o", "gpt-4o-mini", "gemini/gemini-2.5-flash",
                                   "hosted_vllm/m", "bedrock/x", "nosuch-model"])
def test_what_litellm_s_files_call_unknown_litellm_refuses_too(model):
    import litellm

    from batchcompact.summarize.provider_names import plainly_unknown

    try:
        placed = bool(litellm.get_llm_provider(model=model)[1])
    except litellm.exceptions.BadRequestError:
        placed = False
    if plainly_unknown(model, None):
        assert not placed
    assert plainly_unknown(model, None) == (model in ("nosuch/model", "opneai/gpt-4o-mini"))


# ---- 15. what --help and the README say of the formats is what each command takes ----

def test_each_command_s_help_names_only_the_formats_it_takes():
    from batchcompact.cli import COMMANDS

    readme = (REPO / "README.md").read_text()
    for name in COMMANDS:
        command = cli.get_command(None, name)
        fmt = next((p for p in command.params if p.name == "fmt"), None)
        if fmt is None:
            continue
        output = next(p for p in command.params if p.name == "output")
        formats = list(fmt.type.choices)
        assert ("parquet" in (output.help or "")) == ("parquet" in formats), name
        if formats != ["table", "json", "jsonl", "csv", "parquet"]:
            assert f"`{name}`" in readme and f"--format {'|'.join(formats)}" in readme, name
    said = invoke("show", "--help").stdout
    assert "parquet" not in said and "Write the result to FILE instead of stdout." in said


# ---- 19. messages: a word that is no number, a short "nothing found", a failure's kind without its line ----

def test_a_word_given_for_a_number_is_said_as_such():
    said = invoke("run", str(SMALL_FIX), "--limit", "abc")
    assert said.exit_code == 2
    assert said.stderr == "Error: Invalid value for '--limit': 'abc' is not a whole number.\n"
    said = invoke("plan", str(SMALL_FIX), "--threshold-percent", "lots")
    assert said.stderr == "Error: Invalid value for '--threshold-percent': 'lots' is not a number.\n"


def test_a_failure_s_kind_has_no_line_number(tmp_path):
    """A Claude Code transcript (a line pi itself skips is a warning in a pi file: docs/formats.md)."""
    webapp = SAMPLES / "claude" / "projects" / "-home-user-projects-webapp" / "bd6e388f-417b-444a-b6e3-88a50c28ea27.jsonl"
    broken = tmp_path / "in" / "s.jsonl"
    broken.parent.mkdir()
    lines = webapp.read_text().splitlines()
    lines[4] = '{"type": "message", oops'
    broken.write_text("\n".join(lines) + "\n")
    ran = invoke("run", str(broken.parent), "--output-dir", str(tmp_path / "out"), "--min-age", "0")
    assert ran.exit_code == 1
    assert "\n  1 failed: 1 invalid JSON: Expecting property name enclosed in double quotes\n" in ran.output
    planned = invoke("plan", str(broken))
    assert "\n  1 error: 1 invalid JSON: Expecting property name enclosed in double quotes\n" in planned.stdout


# ---- 21. plan -v logs each decision, -vv its figures and the settings ----

def test_plan_verbose_logs_each_decision():
    quiet = invoke("plan", str(SAMPLES / "pi"))
    assert "INFO" not in quiet.stderr
    said = invoke("plan", str(SAMPLES / "pi"), "-v", "--jobs", "1")
    assert said.exit_code == 0, said.output
    logged = [line for line in said.stderr.splitlines() if line.startswith("INFO batchcompact.pipeline.planning: ")]
    assert len(logged) == 6
    assert any(line.endswith("small-fix.jsonl: skip: below threshold (10,182 <= 1,031,192 tokens)") for line in logged)
    assert any("big-refactor.jsonl: compact: 222,461 tokens > threshold 183,616 (window 200,000 from price table); "
               "cut at line 621 (a split turn), 609 messages summarized in 2 calls" in line for line in logged)
    debug = invoke("plan", str(SMALL_FIX), "-vv")
    assert "DEBUG batchcompact.pipeline.planning: settings: CompactionSettings(" in debug.stderr
    assert "small-fix.jsonl: {'format': 'pi'" in debug.stderr


# ---- 16. a report that filters everything out says so, and what the paths hold ----

@pytest.mark.parametrize("args", [["--project", "nosuchproject"], ["--since", "2030-01-01"],
                                  ["--since", "2030-01-01", "--format", "json"]])
def test_a_report_whose_filters_match_nothing_says_what_the_paths_hold(args):
    said = invoke("report", str(SAMPLES), *args)
    assert said.exit_code == 0, said.output
    named = " ".join(args[:2])
    assert f"warning: nothing matched {named}: the paths hold 1,053 requests from 2025-11-28 to 2026-10-14 of " \
           "claude, codex, pi in 6 projects (/home/user/projects/webapp, " in said.stderr
    again = invoke("report", str(SAMPLES), *args)  # the stored report says it too
    assert f"warning: nothing matched {named}: " in again.stderr
    matched = invoke("report", str(SAMPLES), "--since", "2026-10-01")
    assert "nothing matched" not in matched.stderr


# ---- 20. diagnoses: a torn header, Kilo's database, a session that is a header alone ----

def test_a_torn_first_line_is_a_torn_line_of_its_agent_not_no_transcript(tmp_path):
    """A write cut short (no newline after it): pi's torn line, an error. (With its newline it is a line pi
    itself skips, a warning, and the file has no header: batchcompact/adapters/pi/README.md, "What we accept of pi's files".)"""
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"type":"session"')
    checked = invoke("validate", str(torn))
    assert checked.exit_code == 1
    assert checked.stdout == f"{torn}:1: error: torn last line: no newline and incomplete JSON (still being written?)\n"
    planned = invoke("plan", str(torn), "--format", "json")
    [row] = json.loads(planned.stdout)["rows"]
    assert row["status"] == "error" and row["format"] == "pi" and "not a pi" not in row["reason"]
    reported = invoke("report", str(torn))  # pi's line, skipped with its line number: not "not a session file"
    assert reported.exit_code == 0
    assert reported.stderr.startswith(f"warning: {torn}:1: invalid JSON")
    assert "not a session file" not in reported.stderr


def test_a_session_that_is_its_header_alone_is_one_thing_everywhere(tmp_path):
    header = tmp_path / "s.jsonl"
    header.write_text(SMALL_FIX.read_text().splitlines()[0] + "\n")
    said = "empty session (no entries yet)"
    checked = invoke("validate", str(header))
    assert checked.exit_code == 0
    assert checked.stdout == f"{header}: warning: {said}: nothing to compact\n"
    planned = invoke("plan", str(header), "--format", "json")
    [row] = json.loads(planned.stdout)["rows"]
    assert (row["status"], row["reason"]) == ("skip", said)
    reported = invoke("report", str(header))
    assert reported.exit_code == 0 and "warning" not in reported.stderr
    assert reported.stderr.endswith("1 file: 1 parsed, 0 from cache\n")


# ---- 17. one JSON shape: `rows` first, one row per line, then `totals` and the command's keys ----

def _shape(text: str) -> dict:
    lines = text.splitlines()
    doc = json.loads(text)
    assert lines[0] in ('{"rows": [', '{"rows": [],'), lines[0]
    rows = lines[1:1 + len(doc["rows"])]
    assert [json.loads(line.rstrip(",")) for line in rows] == doc["rows"]
    rest = lines[1 + len(doc["rows"]) + (1 if doc["rows"] else 0):-1]
    assert [json.loads("{" + line.rstrip(",") + "}") for line in rest] == [{k: v} for k, v in doc.items()
                                                                           if k != "rows"]
    assert lines[-1] == "}" and text.endswith("}\n") and "totals" in doc
    return doc


def test_every_command_s_json_has_one_shape(tmp_path):
    out = str(tmp_path / "out")
    commands = [("plan", str(SAMPLES / "pi")), ("validate", str(SAMPLES / "pi")), ("show", str(SMALL_FIX)),
                ("report", str(SAMPLES), "--by", "model"), ("eval", str(SMALL_FIX)),
                ("run", str(SMALL_FIX), "--output-dir", out, "--min-age", "0"), ("batches", "--output-dir", out),
                ("config", "run")]
    docs = {}
    for command in commands:
        done = invoke(*command, "--format", "json")
        assert done.exit_code == 0, (command, done.output)
        docs[command[0]] = _shape(done.stdout)
    assert docs["batches"]["totals"] == {"rows": 0} and docs["eval"]["totals"] == {"rows": 0}
    assert docs["report"]["totals"]["requests"] == 1053 and docs["report"]["by"] == "model"
    assert docs["run"]["totals"]["by_status"] == {"skipped": 1} and docs["run"]["by_status"] == {"skipped": 1}


# ---- 14. one name per thing: --model everywhere, an agent in both spellings, a status one way ----

def test_the_summary_model_is_model_in_plan_and_eval_with_the_old_names_kept():
    new = invoke("plan", str(SMALL_FIX), "--force", "--model", "gpt-4o-mini", "--format", "json")
    old = invoke("plan", str(SMALL_FIX), "--force", "--summary-model", "gpt-4o-mini", "--format", "json")
    assert new.exit_code == old.exit_code == 0, new.output
    assert new.stdout == old.stdout and json.loads(new.stdout)["rows"][0]["summary_model"] == "gpt-4o-mini"
    assert "--model, --summary-model MODEL" in invoke("plan", "--help").stdout
    scored = invoke("eval", str(SMALL_FIX), "--force", "--keep-recent-tokens", "2000", "--model", "builtin", "--format",
                    "json")
    before = invoke("eval", str(SMALL_FIX), "--force", "--keep-recent-tokens", "2000", "--summarizer", "builtin",
                    "--format", "json")
    assert scored.exit_code == before.exit_code == 0, scored.output
    assert {r["summarizer"] for r in json.loads(scored.stdout)["rows"]} \
        == {r["summarizer"] for r in json.loads(before.stdout)["rows"]} >= {"builtin"}


def test_an_agent_is_taken_in_both_spellings():
    planned = {name: invoke("plan", str(SAMPLES / "pi"), "--preset", name, "--format", "json").stdout
               for name in ("claude", "claude-code", "pi")}
    assert planned["claude"] == planned["claude-code"] != planned["pi"]
    reported = {name: invoke("report", str(SAMPLES), "--agent", name, "--by", "agent", "--format", "json")
                for name in ("claude", "claude-code")}
    assert reported["claude"].exit_code == reported["claude-code"].exit_code == 0
    assert json.loads(reported["claude"].stdout)["rows"] == json.loads(reported["claude-code"].stdout)["rows"]
    assert [r["agent"] for r in json.loads(reported["claude-code"].stdout)["rows"]] == ["claude"]


def test_a_status_is_said_as_its_rows_hold_it_and_a_reason_names_the_option(tmp_path):
    broken = tmp_path / "in" / "s.jsonl"
    broken.parent.mkdir()
    broken.write_text('{"type":"session","version":3,"id":"x","timestamp":"2026-10-03T16:02:00.741Z","cwd":"/"}\n'
                      '{"type": "message", oops')  # torn: a pi file's only error a line can be
    args = ("run", str(broken.parent), "--output-dir", str(tmp_path / "out"), "--min-age", "0")
    assert invoke(*args).exit_code == 1
    again = invoke(*args)
    assert again.exit_code == 0
    assert ": 1 session: 1 known_invalid\n  1 known_invalid: reported by an earlier run" in again.output
    planned = invoke("plan", str(SMALL_FIX), "--force", "--keep-recent-tokens", "100000", "--format", "json")
    [row] = json.loads(planned.stdout)["rows"]
    assert row["reason"] == "nothing to summarize: everything fits in --keep-recent-tokens (100,000)"


# ---- 22. a copy compacted under oh-my-pi's rules is shown under them wherever it lies ----

def _context_messages(path) -> int:
    shown = invoke("show", str(path), "--format", "json")
    assert shown.exit_code == 0, shown.output
    return len(json.loads(shown.stdout)["rows"][0]["context_messages"])


def test_a_session_compacted_under_oh_my_pi_s_rules_is_shown_under_them_outside_omp(tmp_path):
    sessions = tmp_path / "home" / ".omp" / "agent" / "sessions"
    (sessions / "proj").mkdir(parents=True)
    (sessions / "proj" / "s.jsonl").write_bytes((SAMPLES / "pi" / "big-refactor.jsonl").read_bytes())
    ran = invoke("run", str(sessions), "--output-dir", str(tmp_path / "out"), "--min-age", "0")
    assert ran.exit_code == 0, ran.output
    written = tmp_path / "out" / "proj" / "s.jsonl"
    entries = [json.loads(line) for line in written.read_text().splitlines()]
    assert entries[-1]["type"] == "compaction" and entries[-1]["contextRules"] == "oh-my-pi"
    unmarked = [{k: v for k, v in e.items() if k != "contextRules"} for e in entries]
    text = "".join(json.dumps(e) + "\n" for e in unmarked)
    home_copy = tmp_path / "again" / ".omp" / "agent" / "sessions" / "s.jsonl"  # oh-my-pi's by where it is
    home_copy.parent.mkdir(parents=True)
    home_copy.write_text(text)
    plain = tmp_path / "plain.jsonl"  # pi's rules: no mark, not under .omp
    plain.write_text(text)
    assert _context_messages(written) == _context_messages(home_copy) != _context_messages(plain)
    pi_only = invoke("run", str(SAMPLES / "pi" / "big-refactor.jsonl"), "--output-dir", str(tmp_path / "pi"),
                     "--min-age", "0")
    assert pi_only.exit_code == 0 and "contextRules" not in (tmp_path / "pi" / "big-refactor.jsonl").read_text()
