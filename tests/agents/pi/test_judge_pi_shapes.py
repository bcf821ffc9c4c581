"""pi 0.73.1 and oh-my-pi 18.2.3 resume what we make of pi sessions in the shapes real public sessions take
(batchcompact/adapters/pi/README.md, "What we accept of pi's files"; tests/pi_shapes.py builds them by hand):

- sub-agent records merged in with no `id` and no `parentId`, the sub-agent's entries a second root;
- oh-my-pi's `model_change` (`model: "provider/id"`), read under oh-my-pi's rules;
- a line a redaction left invalid, and the entry after it naming it as parent (a root, as pi takes it);
- no header line: pi would start the file afresh and oh-my-pi refuses it, so we leave it alone.

`batchcompact run` compacts the first three (and, where ../shared/public-sessions is present, the five
public pi sessions in those shapes; skipped without them, failed in CI); then the agents' own code opens
each output: the header kept, no line added or lost but the ones pi itself skips, the leaf on our
compaction and it the one in force, the context each rebuilds equal to the one we build with its rules,
and `pi -p --session FILE` resumes from our summary. Every byte of the input is still in the output.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agent_judges import REPLY, content_blocks
from conftest import REPO, unavailable
from pi_judges import (
    omp_binary,
    omp_modules,
    omp_turn,
    pi_binary,
    pi_modules,
    pi_turn,
    same_message,
    sandbox_copy,
)
from pi_shapes import write_shapes

from batchcompact.adapters.pi.omp import OMP_RULES
from batchcompact.adapters.pi.read import read_pi_session
from batchcompact.core.context import (
    COMPACTION_SUMMARY_PREFIX,
    build_session_context,
    convert_to_llm,
    session_context,
)

pytestmark = pytest.mark.slow

SHAPES = ("subagent-merged.jsonl", "omp-model-change.jsonl", "broken-line.jsonl")
# the public sessions (gzipped, never copied into the repository): ../shared/public-sessions, or the folder
# BATCHCOMPACT_TEST_PUBLIC_SESSIONS names
PUBLIC = Path(os.environ.get("BATCHCOMPACT_TEST_PUBLIC_SESSIONS") or REPO.parent / "shared" / "public-sessions") / "pi"
PUBLIC_NAMES = ("pinion05__agent-complex-task__awesome-agent-ide.jsonl",
                "pinion05__agent-complex-task__raddit-dashboard-pr.jsonl",
                "yofriadi__gsd-lite__pi-session.jsonl", "yofriadi__gsd-lite__pi-session-minimax-m3.jsonl",
                "yofriadi__gsd-lite__pi-session-minimax-m3-v2.jsonl")
HEADERLESS = "pinion05__agent-complex-task__youtube-transcript-extraction.jsonl"


@pytest.fixture(scope="module")
def pi_bin() -> Path:
    return pi_binary()


@pytest.fixture(scope="module")
def omp_bin() -> Path:
    return omp_binary()


def _public(folder: Path, names: tuple[str, ...]) -> dict[str, Path]:
    """The public sessions decompressed into `folder` (never into the repository)."""
    if not PUBLIC.is_dir():
        unavailable(f"public sessions not found at {PUBLIC}")
    folder.mkdir(parents=True, exist_ok=True)
    found = {}
    for name in names:
        target = folder / name
        with gzip.open(PUBLIC / (name + ".gz")) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
        found[name] = target
    return found


def _run(inbox: Path, out: Path, *extra: str) -> dict[str, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "batchcompact", "run", str(inbox), "--output-dir", str(out), "--min-age", "0",
         "--force", "--format", "json", *extra], capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {Path(r["input_path"]).name: r for r in json.loads(done.stdout)["rows"]}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """(input, our output) of every shape we compact, and of the public files when present."""
    root = tmp_path_factory.mktemp("pi-shapes")
    shapes = write_shapes(root / "in" / "shapes")
    rows = _run(root / "in" / "shapes", root / "out" / "shapes", "--keep-recent-tokens", "1000")
    assert {n: r["status"] for n, r in rows.items()} == {**dict.fromkeys(SHAPES, "compacted"),
                                                         "no-header.jsonl": "skipped"}
    found = {name: (shapes[name], root / "out" / "shapes" / name) for name in SHAPES}
    if PUBLIC.is_dir():
        public = _public(root / "in" / "public", PUBLIC_NAMES)
        rows = _run(root / "in" / "public", root / "out" / "public")
        assert {n: r["status"] for n, r in rows.items()} == dict.fromkeys(PUBLIC_NAMES, "compacted")
        found.update({name: (path, root / "out" / "public" / name) for name, path in public.items()})
    return found


def _names() -> tuple[str, ...]:
    return SHAPES + PUBLIC_NAMES


def _case(written: dict[str, tuple[Path, Path]], name: str) -> tuple[Path, Path]:
    if name not in written:
        unavailable(f"public sessions not found at {PUBLIC}")
    return written[name]


def _appended(source: Path, output: Path) -> list[dict[str, Any]]:
    before, after = source.read_bytes(), output.read_bytes()
    assert after.startswith(before), "the input's bytes are not all in the output, in order"
    return [json.loads(line) for line in after[len(before):].decode().splitlines() if line.strip()]


def _parsed(path: Path) -> int:
    """The lines pi parses (it skips the ones that are not JSON)."""
    count = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            json.loads(line)
        except ValueError:
            continue
        count += 1
    return count


def _opened(modules, binary, written, root: Path) -> dict[str, dict[str, Any]]:
    """Each written file copied under `root` and opened by the judge's own session code (`modules`)."""
    copies = {}
    for name, (_, output) in written.items():
        copies[name] = root / name
        shutil.copyfile(output, copies[name])
    answer = modules(binary, root / "home", {"open": [str(p) for p in copies.values()]})
    return dict(zip(copies, answer["open"], strict=True))


@pytest.fixture(scope="module")
def pi_opened(pi_bin, written, tmp_path_factory) -> dict[str, dict[str, Any]]:
    return _opened(pi_modules, pi_bin, written, tmp_path_factory.mktemp("pi-shapes-opened"))


@pytest.fixture(scope="module")
def omp_opened(omp_bin, written, tmp_path_factory) -> dict[str, dict[str, Any]]:
    return _opened(omp_modules, omp_bin, written, tmp_path_factory.mktemp("omp-shapes-opened"))


@pytest.mark.parametrize("name", _names())
def test_pi_opens_our_compaction_and_rebuilds_the_context_we_build(name, written, pi_opened):
    source, output = _case(written, name)
    (compaction,) = _appended(source, output)
    seen = pi_opened[name]
    assert seen["header"] is not None and not seen["rewritten"], "pi reset or migrated the file"
    assert seen["entries"] == _parsed(output) - 1, "pi dropped a line it parsed before"
    assert seen["leafId"] == seen["lastLineId"] == compaction["id"]
    assert seen["compactionInForce"] == compaction["id"]
    session = read_pi_session(output)
    ours = convert_to_llm([m.message for m in build_session_context(session.tree.path()).messages])
    assert seen["llm"] == ours
    assert seen["roles"][0] == "compactionSummary"


@pytest.mark.parametrize("name", _names())
def test_omp_opens_our_compaction_and_rebuilds_the_context_we_claim(name, written, omp_opened):
    source, output = _case(written, name)
    (compaction,) = _appended(source, output)
    seen = omp_opened[name]
    assert seen["header"] is not None
    assert seen["leafId"] == seen["lastLineId"] == compaction["id"]
    assert seen["compactionInForce"] == compaction["id"]
    session = read_pi_session(output)
    session.context_rules = OMP_RULES  # its rules, whoever wrote the file (the same under its home)
    ours = [m.message for m in session_context(session).messages]
    theirs = seen["messages"]
    assert len(ours) == len(theirs) and all(map(same_message, ours, theirs))
    assert theirs[0]["role"] == "compactionSummary" and theirs[0]["summary"] == compaction["summary"]


@pytest.mark.parametrize("name", SHAPES)
def test_pi_resumes_from_our_summary(name, pi_bin, written, tmp_path):
    source, output = written[name]
    (compaction,) = _appended(source, output)
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    lines = output.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    header["cwd"] = str(work)  # pi's print mode needs the recorded cwd to exist
    session = work / name
    session.write_text(json.dumps(header, separators=(",", ":")) + "\n" + "".join(lines[1:]), encoding="utf-8")
    ours = session.read_bytes()
    requests = pi_turn(pi_bin, home, work, session, "judge turn one")
    assert len(requests) == 1
    texts = [b.get("text") for _, b in content_blocks(requests[0]["messages"]) if b.get("type") == "text"]
    assert texts[0].startswith(COMPACTION_SUMMARY_PREFIX) and compaction["summary"] in texts[0]
    assert texts[-1] == "judge turn one" and REPLY
    assert session.read_bytes().startswith(ours), "pi rewrote the file instead of appending to it"


def test_a_file_without_header_is_left_alone_in_run(tmp_path):
    inbox = tmp_path / "in"
    (path,) = write_shapes(inbox, ("no-header.jsonl",)).values()
    rows = _run(inbox, tmp_path / "out")
    assert rows["no-header.jsonl"]["status"] == "skipped"
    assert "no session header" in rows["no-header.jsonl"]["reason"]
    assert not (tmp_path / "out" / "no-header.jsonl").exists()


def test_the_public_headerless_session_is_left_alone(tmp_path):
    (path,) = _public(tmp_path / "in", (HEADERLESS,)).values()
    before = path.read_bytes()
    rows = _run(tmp_path / "in", tmp_path / "out")
    assert rows[HEADERLESS]["status"] == "skipped" and "no session header" in rows[HEADERLESS]["reason"]
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", SHAPES)
def test_omp_resumes_from_our_summary(name, omp_bin, written, tmp_path):
    """`omp -p --resume` on each shape we compacted: one request, our summary in it once and first, the kept
    tail's tool calls in order, the prompt last. oh-my-pi appends to our file, except the one holding a line
    it could not parse: that one it rewrites on its next write (its `#rewriteRequired`), without that line
    (its choice, as pi's is to keep it; our output keeps it)."""
    source, output = written[name]
    (compaction,) = _appended(source, output)
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    session = sandbox_copy(output, work, home / ".omp" / "agent" / "sessions" / "--work--")
    before = session.read_bytes()
    requests = omp_turn(omp_bin, home, work, session, "judge turn one")
    assert len(requests) == 1, "omp made a request of its own (a compaction?) before the turn"
    sent = list(content_blocks(requests[0]["messages"]))
    texts = [b.get("text") or "" for _, b in sent if b.get("type") == "text"]
    summary = compaction["summary"]
    assert sum(text.count(summary) for text in texts) == 1 and (summary in texts[0] or summary in texts[1])
    ours = read_pi_session(output)
    ours.context_rules = OMP_RULES
    context = [m.message for m in session_context(ours).messages]
    expected = [b["id"] for m in context if m["role"] == "assistant" for b in m["content"] if b.get("type") == "toolCall"]
    assert [b["id"] for _, b in sent if b.get("type") == "tool_use"] == expected
    assert texts[-1] == "judge turn one"
    after = session.read_bytes()
    if name == "broken-line.jsonl":
        assert not after.startswith(before) and b'"id":"d0ffffff"' not in after  # rewritten without the line
    else:
        assert after.startswith(before), "omp rewrote our file instead of appending to it"
