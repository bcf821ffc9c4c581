"""The real GitHub Copilot CLI (npm @github/copilot 1.0.102) writes the files `report` reads.

Copilot runs offline (`COPILOT_OFFLINE=true`, bring-your-own-key provider `COPILOT_PROVIDER_BASE_URL`)
against a loopback fake OpenAI chat-completions API, with its OpenTelemetry file export on. The fake
answers a bash tool call first, then text, each with its own usage (cached prompt tokens and reasoning
included), so one prompt makes two model calls. Copilot writes them three times: a `chat` span each,
one `invoke_agent` span summing both (OTel file), and a `session.usage_record` each (its session-state
events.jsonl). `report` must count each call once, whichever files it reads, with the numbers the fake
served; ccusage 20.0.24 reading the same HOME must agree.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from agent_judges import REPLY, _LoopbackAPI, cache_dir, sandbox_env
from report_judges import judge_cli

from batchcompact.report import ReportSettings, build_report, collect_usage

pytestmark = pytest.mark.slow

VERSION = "1.0.102"
MODEL = "gpt-4.1"
# per call: (prompt tokens incl. cached, cached, completion tokens incl. reasoning, reasoning)
USAGE = ((9_000, 6_000, 120, 40), (9_400, 8_800, 30, 0))


class FakeChatCompletions(_LoopbackAPI):
    """A loopback OpenAI chat-completions API: a bash tool call first, then text; usage from `USAGE`."""

    suffix = "/v1"

    def reply(self, path: str, body: dict, n: int) -> tuple[str, bytes]:
        prompt, cached, completion, reasoning = USAGE[min(n, len(USAGE)) - 1]
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                 "prompt_tokens_details": {"cached_tokens": cached},
                 "completion_tokens_details": {"reasoning_tokens": reasoning}}
        base = {"id": f"chatcmpl-judge{n}", "object": "chat.completion.chunk", "created": 1_770_000_000,
                "model": body.get("model")}
        if n == 1:
            call = {"index": 0, "id": "call_judge1", "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": "echo judge",
                                                                           "description": "echo"})}}
            delta, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            delta, finish = {"role": "assistant", "content": REPLY}, "stop"
        chunks = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                  {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                  {**base, "choices": [], "usage": usage}]
        data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
        return "text/event-stream", data


@pytest.fixture(scope="module")
def copilot_bin() -> Path:
    return judge_cli("@github/copilot", VERSION, "copilot")  # with CI set, an install failure fails


@pytest.fixture(scope="module")
def recorded(copilot_bin, tmp_path_factory) -> dict:
    """One `copilot -p` run: its HOME, OTel file, session folder and the requests the fake received."""
    root = tmp_path_factory.mktemp("copilot")
    home, work = root / "home", root / "work"
    home.mkdir()
    work.mkdir()
    otel = home / "copilot-otel.jsonl"
    with FakeChatCompletions() as server:
        env = sandbox_env(
            home,
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=server.url,
            COPILOT_PROVIDER_API_KEY="sk-judge",
            COPILOT_MODEL=MODEL,
            COPILOT_OTEL_ENABLED="true",
            COPILOT_OTEL_EXPORTER_TYPE="file",
            COPILOT_OTEL_FILE_EXPORTER_PATH=str(otel),
            COPILOT_AUTO_UPDATE="false",
            # the native binary unpacks its JavaScript once per cache folder: keep it with the npm install
            COPILOT_CACHE_HOME=str(cache_dir() / "npm" / f"copilot-cache-{VERSION}"),
        )
        done = subprocess.run([str(copilot_bin), "-p", "Run `echo judge`, then say done.", "--allow-all-tools"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert REPLY in done.stdout
        calls = [r for r in server.requests if r["path"].endswith("/chat/completions")]
    assert len(calls) == 2, [r["path"] for r in server.requests]
    sessions = sorted((home / ".copilot" / "session-state").glob("*/events.jsonl"))
    assert len(sessions) == 1
    return {"home": home, "otel": otel, "session": sessions[0].parent}


def expected_totals() -> dict:
    return {
        "requests": len(USAGE),
        "input_tokens": sum(p - c for p, c, _, _ in USAGE),
        "cache_read_tokens": sum(c for _, c, _, _ in USAGE),
        "output_tokens": sum(o for _, _, o, _ in USAGE),
        "cache_write_tokens": 0,
        "total_tokens": sum(p + o for p, _, o, _ in USAGE),
    }


def report_totals(paths: list[Path], tmp_path: Path) -> dict:
    collected = collect_usage(paths, cache_dir=tmp_path / "cache", jobs=1)
    try:
        report = build_report(collected.parts, ReportSettings(by="agent"))
    finally:
        collected.cleanup()
    rows = report.rows.to_dicts()
    assert [r["agent"] for r in rows] == ["copilot"]
    return {k: rows[0][k] for k in (*expected_totals(), "cost_usd")}


def test_otel_file_has_the_aggregate_and_its_parts(recorded):
    spans = [json.loads(line) for line in recorded["otel"].read_text().splitlines() if '"span"' in line]
    chats = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    agents = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"]
    assert len(chats) == 2 and len(agents) == 1
    assert agents[0]["attributes"]["gen_ai.usage.input_tokens"] == sum(p for p, _, _, _ in USAGE)
    assert {c["attributes"]["gen_ai.response.id"] for c in chats} == {"chatcmpl-judge1", "chatcmpl-judge2"}


@pytest.mark.parametrize("which", ["otel", "session", "both"])
def test_report_counts_each_call_once(recorded, which, tmp_path):
    paths = {"otel": [recorded["otel"]], "session": [recorded["session"]],
             "both": [recorded["otel"], recorded["session"]]}[which]
    totals = report_totals(paths, tmp_path)
    cost = totals.pop("cost_usd")
    assert totals == expected_totals()
    # gpt-4.1: $2/M input, $0.50/M cached input, $8/M output (reasoning is inside the output count)
    assert cost == pytest.approx((3_600 * 2 + 14_800 * 0.5 + 150 * 8) / 1e6)


def test_ccusage_reads_the_same_totals(ccusage, recorded, tmp_path):
    binary, _ = ccusage
    done = subprocess.run(
        [str(binary), "copilot", "daily", "--offline", "--json", "--timezone", "UTC"],
        capture_output=True, text=True, timeout=120,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(recorded["home"]), "NO_COLOR": "1",
             "COPILOT_OTEL_FILE_EXPORTER_PATH": str(recorded["otel"])},
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)["totals"]
    ours = report_totals([recorded["otel"], recorded["session"]], tmp_path)
    assert (theirs["inputTokens"], theirs["outputTokens"], theirs["cacheReadTokens"], theirs["totalTokens"]) == (
        ours["input_tokens"], ours["output_tokens"], ours["cache_read_tokens"], ours["total_tokens"])
    assert theirs["totalCost"] == pytest.approx(ours["cost_usd"], abs=1e-9)
