"""Sessions the shared fixtures do not have, written here for the Kimi Code (wire 1.4), Grok Build,
OpenClaw 2026.9 (SQLite) and ZCode readers, and a HOME with them beside the fixtures of the agents they sit with (tests/agent_homes.py)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_homes import build_home as build_fixture_home
from conftest import SHARED_FIXTURES

AGENTS = ("copilot", "kimi", "openclaw", "droid", "goose", "amp", "codebuff", "hermes")

KIMI_CODE_SESSION = "session_11111111-2222-3333-4444-555555555555"
KIMI_CODE_FORK = "session_99999999-2222-3333-4444-555555555555"


def usage_record(inputs: int, output: int, read: int, write: int, time: int, scope: str = "turn") -> dict:
    return {"type": "usage.record", "model": "kimi-code/kimi-for-coding", "usageScope": scope, "time": time,
            "usage": {"inputOther": inputs, "output": output, "inputCacheRead": read, "inputCacheCreation": write}}


def step_end(inputs: int, output: int, read: int, write: int, time: int) -> dict:
    return {"type": "context.append_loop_event", "time": time - 2,
            "event": {"type": "step.end", "uuid": f"s{time}", "turnId": "t1", "step": 0,
                      "usage": {"inputOther": inputs, "output": output, "inputCacheRead": read,
                                "inputCacheCreation": write}}}


def write_kimi_code(home: Path) -> None:
    """Two Kimi Code sessions: one with a sub-agent and a compaction call, and a fork of it with one new call.

    Every turn call is written twice by Kimi Code (`step.end` and `usage.record`); the compaction call
    only as a `session`-scoped `usage.record`; the fork repeats the parent's records, then `forked`."""
    workdir = home / ".kimi-code" / "sessions" / "wd_work_5f3a9c"
    main = [
        {"type": "metadata", "protocol_version": "1.4", "created_at": 1779256791085},
        {"type": "config.update", "cwd": "/tmp/work", "profileName": "agent", "time": 1779256791100},
        step_end(1200, 300, 5000, 0, 1779256800302), usage_record(1200, 300, 5000, 0, 1779256800302),
        step_end(400, 80, 6200, 100, 1779256801302), usage_record(400, 80, 6200, 100, 1779256801302),
        usage_record(7000, 500, 0, 0, 1779256802000, scope="session"),
    ]
    sub = [
        {"type": "metadata", "protocol_version": "1.4", "created_at": 1779256900000},
        step_end(50, 20, 0, 0, 1779256900302), usage_record(50, 20, 0, 0, 1779256900302),
    ]
    fork = [*main, {"type": "forked", "agentId": "main", "time": 1779260000000},
            step_end(30, 10, 7000, 0, 1779260001000), usage_record(30, 10, 7000, 0, 1779260001000)]
    for session, agent, records in ((KIMI_CODE_SESSION, "main", main), (KIMI_CODE_SESSION, "agent-0", sub),
                                    (KIMI_CODE_FORK, "main", fork)):
        folder = workdir / session / "agents" / agent
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "wire.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


GROK_SESSION = "01a0e417-0000-7000-8000-000000000001"


def grok_update(session: str, when: int, update: dict, event: str | None = None) -> dict:
    line = {"timestamp": when, "method": "_x.ai/session/update", "params": {"sessionId": session, "update": update}}
    if event:
        line["_meta"] = {"eventId": event, "agentTimestampMs": when * 1000 + 779}
    return line


def grok_usage(inputs: int, output: int, read: int, reasoning: int, ticks: int) -> dict:
    one = {"inputTokens": inputs, "outputTokens": output, "cachedReadTokens": read, "cacheCreationTokens": 0,
           "reasoningTokens": reasoning, "totalTokens": inputs + output, "costUsdTicks": ticks}
    return {**one, "modelCalls": 3, "modelUsage": {"grok-4.5-build": one}}


def write_grok(home: Path) -> None:
    """A Grok Build session: two turns (input includes cache reads, cost in 1e-10 USD ticks) and a
    cancelled one (`usage: null`), with the `summary.json` naming its work directory."""
    folder = home / ".grok" / "sessions" / "-tmp-work" / GROK_SESSION
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        grok_update(GROK_SESSION, 1784700600, {"sessionUpdate": "user_message_chunk",
                                               "content": {"type": "text", "text": "hi"}}),
        grok_update(GROK_SESSION, 1784700657, {"sessionUpdate": "turn_completed", "prompt_id": "p1",
                                               "stop_reason": "end_turn",
                                               "usage": grok_usage(432_353, 9_958, 376_576, 6_134, 2_842_748_000)},
                    "019f8870-0000-7000-8000-000000003449"),
        grok_update(GROK_SESSION, 1784700757, {"sessionUpdate": "turn_completed", "prompt_id": "p2",
                                               "stop_reason": "cancelled", "usage": None},
                    "019f8870-0000-7000-8000-000000003450"),
        grok_update(GROK_SESSION, 1784700857, {"sessionUpdate": "turn_completed", "prompt_id": "p3",
                                               "stop_reason": "end_turn",
                                               "usage": grok_usage(20_000, 500, 15_000, 100, 120_000_000)},
                    "019f8870-0000-7000-8000-000000003451"),
    ]
    (folder / "updates.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    (folder / "summary.json").write_text(json.dumps({"info": {"cwd": "/tmp/work", "git_root_dir": "/tmp/work"}}),
                                         encoding="utf-8")


OPENCLAW_DB_SESSION = "0c0ffee0-0000-4000-8000-000000000001"


def openclaw_records() -> list[dict]:
    """One OpenClaw session as its records: header, model change, two assistant turns with usage."""
    def turn(entry: str, when: str, inputs: int, output: int, read: int, cost: float) -> dict:
        return {"type": "message", "id": entry, "parentId": None, "timestamp": when, "message": {
            "role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop",
            "usage": {"input": inputs, "output": output, "cacheRead": read, "cacheWrite": 0,
                      "totalTokens": inputs + output + read, "cost": {"total": cost}}}}

    return [
        {"type": "session", "version": 3, "id": OPENCLAW_DB_SESSION, "timestamp": "2026-10-01T09:00:00.000Z",
         "cwd": "/srv/claw"},
        {"type": "model_change", "id": "e1", "timestamp": "2026-10-01T09:00:00.100Z", "provider": "anthropic",
         "modelId": "claude-sonnet-4-5"},
        turn("e2", "2026-10-01T09:00:05.000Z", 1_200, 300, 8_000, 0.0105),
        turn("e3", "2026-10-01T09:01:05.000Z", 150, 90, 9_100, 0.00453),
    ]


def write_openclaw_db(home: Path) -> None:
    """An OpenClaw 2026.9 agent database (`transcript_events`) holding that session, and the same session
    exported as `sessions/<id>.jsonl` (the two must count once)."""
    import sqlite3

    agent = home / ".openclaw" / "agents" / "work"
    (agent / "agent").mkdir(parents=True, exist_ok=True)
    (agent / "sessions").mkdir(parents=True, exist_ok=True)
    records = openclaw_records()
    con = sqlite3.connect(agent / "agent" / "openclaw-agent.sqlite")
    with con:
        con.execute("CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                    " event_json TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq))")
        con.executemany("INSERT INTO transcript_events VALUES (?, ?, ?, ?)",
                        [(OPENCLAW_DB_SESSION, seq, json.dumps(r), 1791795600000 + seq) for seq, r in enumerate(records)])
    con.close()
    export = agent / "sessions" / f"{OPENCLAW_DB_SESSION}.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


ZCODE_SESSION = "sess_01K0ZCODE"


def write_zcode(home: Path) -> None:
    """A ZCode database (`~/.zcode/cli/db/db.sqlite`): a session with two completed calls (input includes
    both cache counters; reasoning beside output), a failed and a cancelled one."""
    import sqlite3

    db = home / ".zcode" / "cli" / "db" / "db.sqlite"
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    with con:
        con.execute("CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, title TEXT, version INTEGER,"
                    " created_at INTEGER)")
        con.execute("CREATE TABLE model_usage (id TEXT PRIMARY KEY, session_id TEXT, turn_id TEXT, provider_id TEXT,"
                    " model_id TEXT, status TEXT, query_source TEXT, started_at INTEGER, duration_ms INTEGER,"
                    " input_tokens INTEGER, output_tokens INTEGER, reasoning_tokens INTEGER,"
                    " cache_creation_input_tokens INTEGER, cache_read_input_tokens INTEGER,"
                    " computed_total_tokens INTEGER)")
        con.execute("INSERT INTO session VALUES (?, '/srv/zproj', 'fix the build', 2, 1785140000000)",
                    (ZCODE_SESSION,))
        calls = [  # id, status, started, input (cache included), output, reasoning, cache write, cache read
            ("mu_1", "completed", 1785140200000, 10_000, 500, 100, 2_000, 6_000),
            ("mu_2", "error", 1785140300000, 3_000, 0, 0, 0, 0),
            ("mu_3", "completed", 1785140400000, 12_500, 80, 0, 0, 11_000),
            ("mu_4", "cancelled", 1785140500000, 0, 0, 0, 0, 0),
        ]
        con.executemany(
            "INSERT INTO model_usage VALUES (?, ?, 'turn', 'builtin:zai-coding-plan', 'glm-4.6', ?, 'main_turn', ?,"
            " 1000, ?, ?, ?, ?, ?, ?)",
            [(i, ZCODE_SESSION, st, t, inp, out, rea, cw, cr, inp + out + rea) for i, st, t, inp, out, rea, cw, cr in calls])
    con.close()


def build_home(root: Path) -> Path:
    """`root/home` with those agents' fixtures in their places and the generated Kimi Code and Grok sessions."""
    home = root / "home"
    build_fixture_home(SHARED_FIXTURES / "agents", home, agents=AGENTS)
    write_kimi_code(home)
    write_grok(home)
    write_openclaw_db(home)
    write_zcode(home)
    for path in home.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return home
