"""Claude Science's metadata database `operon-cli.db` as ccusage's own tests build it (tests/data/science/NOTICE):
its `frames` and `projects` tables, the frames of the Science tests and the fuzzer's seed (bench/fuzz.py),
and their writer."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

SCHEMA = """CREATE TABLE frames (id TEXT PRIMARY KEY, parent_frame_id TEXT, root_frame_id TEXT,
    agent_name TEXT NOT NULL, status TEXT NOT NULL, model TEXT, project_id TEXT, input_tokens INTEGER,
    output_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER, total_cost REAL,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)"""
COLUMNS = ("id", "parent_frame_id", "root_frame_id", "model", "project_id", "input_tokens", "output_tokens",
           "cache_read_tokens", "cache_write_tokens", "total_cost", "updated_at")
# ccusage's create_fixture, and frame-4 of its session snapshot (no root, project or cost: written here)
FRAMES = [
    ("frame-1", None, "frame-1", "claude-sonnet-4-5", "proj_alpha", 100, 10, 25, 15, 0.5, "2099-01-02T00:00:00Z"),
    ("frame-2", "frame-1", "frame-1", "cs-switch-direct:claude-sonnet-4-5", "proj_alpha", 200, 20, 40, 30, 1.0,
     "2099-01-15T12:00:00Z"),
    ("frame-3", None, "frame-3", "claude-opus-4-6", "proj_beta", 50, 5, 10, 0, 0.25, "2099-02-01T00:00:00Z"),
    ("frame-4", None, None, "claude-sonnet-4-5", None, 40, 4, 5, 0, None, "2099-03-01T00:00:00Z"),
    # an uploads frame: no tokens, no usage (not a warning)
    ("uploads", None, None, None, "proj_alpha", None, None, None, None, None, "2099-01-03T00:00:00Z"),
]


def ms(when: str) -> int:
    return int(datetime.fromisoformat(when).timestamp() * 1000)


def write_db(path: Path, frames=FRAMES, schema: str = SCHEMA, columns=COLUMNS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute(schema)
        conn.execute("CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO projects VALUES ('proj_alpha', 'alpha'), ('proj_beta', 'beta')")
        add_frames(conn, frames, columns)
    conn.close()
    return path


def add_frames(conn: sqlite3.Connection, frames, columns=COLUMNS) -> None:
    for frame in frames:
        values = [*frame[:-1], ms(frame[-1]) if isinstance(frame[-1], str) else frame[-1]]
        names = ", ".join(columns)
        conn.execute(f"INSERT INTO frames ({names}, agent_name, status, created_at) VALUES "
                     f"({', '.join('?' * len(columns))}, 'OPERON', 'completed', ?)", (*values, values[-1]))
