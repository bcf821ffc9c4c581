"""Rows named by a provider's response id (Qwen Code, Copilot, kimi-cli): copies of one call count once,
two calls never merge, even when a server answers every request with one id (`chatcmpl-mock`) and the
same numbers, as a local or test server does (`adapters/common/usage_rows.py`, `CallKeys`)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from batchcompact.cli import cli

RECORDED_QWEN = Path(__file__).parent / "data" / "recorded" / "qwen-code" / "session-compressed.jsonl"
PATHS = [["--no-cache"], ["--cache-above", "0"]]  # the path without polars, and the parts


def totals(tmp_path: Path, *paths: Path, cache: list[str]) -> dict:
    result = CliRunner().invoke(cli, ["report", *map(str, paths), "--by", "agent", "--format", "json", *cache,
                                      "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["totals"]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("cache", PATHS)
def test_a_qwen_chat_whose_server_gives_every_call_one_id(tmp_path, cache):
    """A Qwen Code chat recorded against a server numbering its responses; the same chat from a server
    that answers `chatcmpl-mock` to every request counts the same calls (it counted one)."""
    recorded = totals(tmp_path, RECORDED_QWEN, cache=cache)
    assert recorded["requests"] == 16
    mock = tmp_path / "mock" / "chat.jsonl"
    mock.parent.mkdir()
    mock.write_text(re.sub(r'"response_id":"chatcmpl-\d+"', '"response_id":"chatcmpl-mock"',
                           RECORDED_QWEN.read_text(encoding="utf-8")), encoding="utf-8")
    assert re.findall(r'"response_id":"([^"]*)"', mock.read_text(encoding="utf-8")) == ["chatcmpl-mock"] * 23
    assert totals(tmp_path, mock, cache=cache) == recorded
    copy = tmp_path / "copy" / "chat.jsonl"  # the same chat again (a copied or resumed file): once
    copy.parent.mkdir()
    shutil.copyfile(mock, copy)
    assert totals(tmp_path, mock, copy, cache=cache) == recorded


def qwen_call(when: str, response_id: str) -> dict:
    return {"uuid": f"u-{when}", "parentUuid": None, "sessionId": "s1", "timestamp": when, "type": "system",
            "cwd": "/w", "subtype": "ui_telemetry", "systemPayload": {"uiEvent": {
                "event.name": "qwen-code.api_response", "event.timestamp": when, "response_id": response_id,
                "model": "qwen3-coder-plus", "input_token_count": 1000, "output_token_count": 30,
                "cached_content_token_count": 0, "thoughts_token_count": 0, "total_token_count": 1030,
                "subagent_name": "task"}}}


def kimi_step(seconds: float, message_id: str) -> dict:
    return {"timestamp": seconds, "message": {"type": "StatusUpdate", "payload": {
        "token_usage": {"input_other": 1000, "output": 30, "input_cache_read": 0, "input_cache_creation": 0},
        "message_id": message_id}}}


def copilot_usage(event: str, api_call_id: str) -> dict:
    return {"type": "session.usage_record", "id": event, "timestamp": "2026-05-01T10:00:00.000Z",
            "data": {"usage": {"model": "gpt-5-mini", "inputTokens": 1000, "outputTokens": 30,
                               "cacheReadTokens": 0, "cacheWriteTokens": 0, "apiCallId": api_call_id}}}


def copilot_chat_span(span: str, response_id: str) -> dict:
    return {"type": "span", "traceId": f"trace-{span}", "spanId": span, "name": "chat gpt-5-mini",
            "endTime": [1777629600, 0], "attributes": {
                "gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-5-mini",
                "gen_ai.conversation.id": "s1", "gen_ai.response.id": response_id,
                "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 30}}


@pytest.mark.parametrize("cache", PATHS)
def test_two_calls_with_one_id_and_the_same_numbers_stay_two(tmp_path, cache):
    """The same id and the same numbers, twice in one log: two calls (a log writes each call once);
    the same log copied (kimi-cli's fork, Copilot's OTel export beside its session events): still two."""
    qwen = write_jsonl(tmp_path / "qwen" / "chat.jsonl", [
        {"uuid": "u0", "parentUuid": None, "sessionId": "s1", "timestamp": "2026-05-01T10:00:00.000Z",
         "type": "user", "cwd": "/w", "message": {"role": "user", "parts": [{"text": "hi"}]}},
        qwen_call("2026-05-01T10:00:01.000Z", "chatcmpl-mock"), qwen_call("2026-05-01T10:00:02.000Z", "chatcmpl-mock"),
    ])
    assert totals(tmp_path, qwen, cache=cache)["requests"] == 2
    kimi = write_jsonl(tmp_path / ".kimi" / "sessions" / "g" / "s" / "wire.jsonl", [
        {"type": "metadata", "protocol_version": "1.3"}, kimi_step(1777629600.5, "chatcmpl-mock"),
        kimi_step(1777629601.5, "chatcmpl-mock"),
    ])
    fork = kimi.parent.parent / "s-fork" / "wire.jsonl"  # kimi-cli's fork copies the parent's lines
    fork.parent.mkdir()
    shutil.copyfile(kimi, fork)
    assert totals(tmp_path, kimi, fork, cache=cache)["requests"] == 2
    start = {"type": "session.start", "id": "e0", "timestamp": "2026-05-01T09:59:00.000Z",
             "data": {"producer": "copilot-agent", "sessionId": "s1", "context": {"cwd": "/w"}}}
    events = write_jsonl(tmp_path / ".copilot" / "session-state" / "s1" / "events.jsonl", [
        start, copilot_usage("e1", "chatcmpl-mock"), copilot_usage("e2", "chatcmpl-mock")])
    otel = write_jsonl(tmp_path / ".copilot" / "otel" / "export.jsonl", [
        copilot_chat_span("c1", "chatcmpl-mock"), copilot_chat_span("c2", "chatcmpl-mock")])
    assert totals(tmp_path, events, cache=cache)["requests"] == 2
    assert totals(tmp_path, otel, cache=cache)["requests"] == 2
    assert totals(tmp_path, events, otel, cache=cache)["requests"] == 2  # one call in both logs: once
