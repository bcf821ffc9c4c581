"""Damaged values from the CLI (#56): a key that holds a list or an object where a string belongs, a number
where a name belongs. Every command ends with exit 1 (or 0) and "file:line: what is wrong", never exit 4,
and the other files are still processed. Also the pi shapes real public sessions take (tests/pi_shapes.py):
accepted with warnings, planned and compacted, as pi opens them; a file without header left alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLES, fixture_path
from pi_shapes import write_shapes

PI = SAMPLES / "pi" / "big-refactor.jsonl"
CLAUDE = SAMPLES / "claude" / "projects" / "-home-user-projects-webapp" / "bd6e388f-417b-444a-b6e3-88a50c28ea27.jsonl"
CODEX = next((SAMPLES / "codex").rglob("*.jsonl"))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "batchcompact", *args], capture_output=True, text=True, timeout=300)


def _damage(source: Path, target: Path, line: int, change) -> Path:
    """`source` copied to `target` with the object on `line` (1-based) changed by `change(obj)`."""
    lines = source.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[line - 1])
    change(obj)
    lines[line - 1] = json.dumps(obj)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def _line_of(path: Path, test) -> int:
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if test(json.loads(text)):
            return number
    raise AssertionError(f"no such line in {path}")


def _set(key: str, value, inner: str | None = None):
    def change(obj):
        (obj[inner] if inner else obj)[key] = value
    return change


PI_MESSAGE = _line_of(PI, lambda o: o.get("type") == "message")
CASES = [
    # (name, source, line, change, the error validate prints on that line, or None: only no exit 4)
    ("pi-type-list", PI, PI_MESSAGE, _set("type", ["message"]), "error: 'type' must be a string, not a list"),
    ("pi-type-object", PI, PI_MESSAGE, _set("type", {}), "error: 'type' must be a string, not an object"),
    ("pi-id-list", PI, PI_MESSAGE, _set("id", []), "error: 'message' entry has no string 'id'"),
    ("pi-parent-object", PI, PI_MESSAGE, _set("parentId", {}), "error: 'parentId' must be a string or null"),
    ("pi-role-list", PI, PI_MESSAGE, _set("role", [], "message"), "error: message 'role' must be a string"),
    ("pi-header-cwd-number", PI, 1, _set("cwd", 1.5), None),
    ("claude-type-list", CLAUDE, 1, _set("type", []), None),  # the line the format is told by
    ("claude-type-object", CLAUDE, 1, _set("type", {}), None),
    ("claude-uuid-list", CLAUDE, 2, _set("uuid", []), None),
    ("codex-item-type-list", CODEX, _line_of(CODEX, lambda o: o.get("type") == "response_item"),
     _set("type", [], "payload"), "error: response_item payload 'type' must be a string"),
    ("codex-session-id-number", CODEX, 1, _set("id", 1.5, "payload"), None),
    # the shared fixtures' other agents (skipped without ../shared/fixtures, failed in CI)
    ("gemini-session-id-number", ("agents", "gemini", "tmp", "project-a", "chats", "session-a.jsonl"), 1,
     _set("sessionId", 1.5), None),
    ("copilot-tool-requests-number", ("agents", "copilot", "session-state", "aaaabbbb-1111-2222-3333-ccccddddeeee",
                                      "events.jsonl"), 4, _set("toolRequests", 1.5, "data"), None),
    ("copilot-type-list-no-data", ("agents", "copilot", "session-state", "aaaabbbb-1111-2222-3333-ccccddddeeee",
                                   "events.jsonl"), 3, lambda obj: obj.update(type=[]) or obj.pop("data"), None),
]


@pytest.mark.parametrize(("name", "source", "line", "change", "message"), CASES, ids=[c[0] for c in CASES])
def test_a_damaged_value_is_bad_input_in_every_command_never_an_internal_error(tmp_path, name, source, line, change,
                                                                              message):
    if isinstance(source, tuple):
        source = fixture_path(*source)
    inbox = tmp_path / "in"
    bad = _damage(source, inbox / "bad" / source.name, line, change)
    good = inbox / "good" / PI.name
    good.parent.mkdir(parents=True)
    shutil.copyfile(PI, good)
    runs = {
        "validate": _cli("validate", str(inbox)),
        "plan": _cli("plan", str(inbox), "--force"),
        "run": _cli("run", str(inbox), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force"),
        "show": _cli("show", str(bad)),
        "show --context": _cli("show", "--context", str(bad)),
        "report": _cli("report", str(inbox), "--format", "json"),
    }
    for command, done in runs.items():
        said = done.stdout + done.stderr
        assert done.returncode in (0, 1), f"{command}: exit {done.returncode}: {said[-1500:]}"
        assert "internal error" not in said and "Traceback" not in said, f"{command}: {said[-1500:]}"
    if message is not None:
        assert f"{bad}:{line}: {message}" in runs["validate"].stdout.splitlines(), runs["validate"].stdout
        assert runs["validate"].returncode == runs["plan"].returncode == runs["run"].returncode == 1
    assert (tmp_path / "out" / "good" / PI.name).exists(), "the other file was not compacted"


# ---- the shapes of real pi sessions (batchcompact/adapters/pi/README.md, "What we accept of pi's files") ---

WARNINGS = {
    "subagent-merged.jsonl": [(16, "warning: 'custom' entry has no 'id': pi keeps it on no path; left as it is")],
    "omp-model-change.jsonl": [],
    "broken-line.jsonl": [
        (13, "warning: invalid JSON: Invalid \\escape at column 177; pi skips this line: left as it is, outside "
             "every context"),
        (14, "warning: parentId 'd0ffffff' points to no entry; a root, as pi takes it (entries before it are not "
             "in its context)"),
    ],
    "no-header.jsonl": [
        (1, "warning: no session header (the file starts with an entry: a tail cut from a session?): pi starts "
            "such a file afresh and oh-my-pi refuses to resume it; left as it is"),
        (1, "warning: parentId 'e0ffffff' points to no entry; a root, as pi takes it (entries before it are not in "
            "its context)"),
    ],
}


def test_pi_shapes_are_valid_with_warnings_planned_and_compacted(tmp_path):
    paths = write_shapes(tmp_path / "in")
    checked = _cli("validate", str(tmp_path / "in"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said = checked.stdout.splitlines()
    for name, expected in WARNINGS.items():
        assert [line for line in said if line.startswith(f"{paths[name]}:")] == \
               [f"{paths[name]}:{n}: {text}" for n, text in expected]
    planned = _cli("plan", str(tmp_path / "in"), "--keep-recent-tokens", "1000", "--force", "--format", "json")
    assert planned.returncode == 0, planned.stderr
    rows = {Path(r["path"]).name: r for r in json.loads(planned.stdout)["rows"]}
    assert {n: r["status"] for n, r in rows.items()} == {"subagent-merged.jsonl": "compact",
                                                         "omp-model-change.jsonl": "compact",
                                                         "broken-line.jsonl": "compact", "no-header.jsonl": "skip"}
    assert rows["no-header.jsonl"]["reason"].startswith("no session header")
    # the corrupted line's neighbours: only what follows it is on the path (pi's getBranch stops there)
    assert rows["broken-line.jsonl"]["first_kept_line"] > 14
    done = _cli("run", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force",
                "--keep-recent-tokens", "1000")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 compacted, 1 skipped" in done.stdout
    for name in ("subagent-merged.jsonl", "omp-model-change.jsonl", "broken-line.jsonl"):
        before, after = paths[name].read_bytes(), (tmp_path / "out" / name).read_bytes()
        assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1  # one compaction more


def test_an_omp_model_change_reads_the_session_under_omps_rules(tmp_path):
    from batchcompact.adapters.pi.omp import is_omp
    from batchcompact.adapters.pi.read import read_pi_session

    paths = write_shapes(tmp_path, ("omp-model-change.jsonl", "subagent-merged.jsonl"))
    assert is_omp(read_pi_session(paths["omp-model-change.jsonl"]))
    assert not is_omp(read_pi_session(paths["subagent-merged.jsonl"]))


def test_a_damaged_line_in_what_we_wrote_still_fails_verification(tmp_path):
    """A line that is only a warning in an input (pi skips it) is a damaged line in our output."""
    from batchcompact.adapters.pi.read import read_pi_session
    from batchcompact.adapters.pi.write import verify

    paths = write_shapes(tmp_path / "in", ("broken-line.jsonl",))
    original = read_pi_session(paths["broken-line.jsonl"])
    written = tmp_path / "written.jsonl"
    written.write_bytes(paths["broken-line.jsonl"].read_bytes() + b'{"type":"compaction","id":"x\n')
    problems = verify(original, read_pi_session(written), None)
    assert any("invalid JSON" in p for p in problems), problems


def _claude_result_before_call(path: Path) -> Path:
    """A Claude Code transcript whose tool result line is written before the line of its tool call (as Claude
    Code 2.1.121 wrote one in a public session), then enough turns to compact."""
    session, cwd = "c1a0de00-0000-4000-8000-000000000001", "/home/user/projects/order"
    lines, parent = [], None

    def add(kind: str, uuid: str, parent_uuid: str | None, content, **extra) -> None:
        message = {"role": kind, "content": content, **extra}
        lines.append({"type": kind, "uuid": uuid, "parentUuid": parent_uuid, "sessionId": session, "cwd": cwd,
                      "version": "2.1.121", "timestamp": f"2026-05-04T13:{len(lines):02d}:00.000Z",
                      "isSidechain": False, "userType": "external", "message": message})

    usage = {"input_tokens": 2000, "output_tokens": 50, "cache_read_input_tokens": 0,
             "cache_creation_input_tokens": 0}
    filler = "The order service keeps every request in a queue and retries it. " * 60
    for n in range(6):
        user, call, result, answer = (f"{n}{k}000000-0000-4000-8000-00000000000{n}" for k in "abcd")
        add("user", user, parent, f"Step {n}: read src/step_{n}.py")
        # the result line first (its parent is the call's line, written after it), then the call
        add("user", result, call, [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": filler}])
        add("assistant", call, user, [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read",
                                       "input": {"file_path": f"src/step_{n}.py"}}],
            id=f"msg_{n}a", model="claude-sonnet-4-6", usage=usage, stop_reason="tool_use", type="message")
        add("assistant", answer, result, [{"type": "text", "text": f"Step {n} reads the queue."}],
            id=f"msg_{n}b", model="claude-sonnet-4-6", usage=usage, stop_reason="end_turn", type="message")
        parent = answer
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_claude_tool_result_written_before_its_call_is_compacted_and_verified(tmp_path):
    source = _claude_result_before_call(tmp_path / "in" / "order.jsonl")
    done = _cli("run", str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force",
                "--keep-recent-tokens", "1500", "--format", "json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (row,) = json.loads(done.stdout)["rows"]
    assert row["status"] == "compacted", row
    assert (tmp_path / "out" / "order.jsonl").read_bytes().startswith(source.read_bytes())


def test_a_v1_session_with_a_line_pi_skips_is_left_alone_not_migrated_without_it(tmp_path):
    """Migrating a v1 file rewrites it as v3 from the entries read: the skipped line would be lost."""
    lines = (SAMPLES / "pi" / "legacy-v1.jsonl").read_text(encoding="utf-8").splitlines()
    lines.insert(3, '{"type":"message","message":{"role":"user","content":"mail ***@***.***\\ later"}}')
    source = tmp_path / "in" / "legacy-v1.jsonl"
    source.parent.mkdir()
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    checked = _cli("validate", str(source))
    assert checked.returncode == 0 and f"{source}:4: warning: invalid JSON" in checked.stdout
    done = _cli("run", str(source.parent), "--output-dir", str(tmp_path / "out"), "--min-age", "0", "--force",
                "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert row["status"] == "skipped" and row["reason"].startswith("a v1/v2 session with a line pi skips"), row
    assert not (tmp_path / "out" / "legacy-v1.jsonl").exists()
