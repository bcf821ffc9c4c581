"""The report's readers, one per agent: which files each one claims and the function that reads them.

A reader is registered once (`READERS` below); the walk (files.py), detection (detect.py) and extraction
(extract.py) all ask this table, so a new agent is one reader module and one line here. Standard library
only: the warm report path walks folders with it before anything heavy is imported.

How a file finds its reader (`detect.py`), first rule that applies:
1. its name matches one of a reader's `files` patterns (fnmatch), and, when the rule gives `under`,
   one of the folders above it is one of those (`chats`, `storage/message`, ...). This is how JSON files
   and SQLite databases are found: the walk takes a file that is not JSONL only when a reader claims it;
2. a folder above it is one of a reader's `homes` (`.openclaw`: a pi-format tree that is OpenClaw's);
3. for JSONL, the first lines: each reader's `sniff(obj, first)` in table order, then the built-in
   pi / Codex / Claude line rules (formats/detect.py).

A reader's `extract(path, rows, stats)` appends `UsageRows` for one source (a file or a database) and
never raises for bad content: it warns with file:line (a database row: its table and rowid).
"""

from __future__ import annotations

import fnmatch
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

JSONL_SUFFIXES = (".jsonl", ".jsonl.zst")


@dataclass(frozen=True)
class Files:
    """Files a reader claims by name: `names` patterns (fnmatch, case-sensitive), only below one of the
    `under` folders when given ("storage/message": consecutive folders); `sqlite`: they are databases."""

    names: tuple[str, ...]
    under: tuple[str, ...] = ()
    sqlite: bool = False

    def match(self, name: str, folders: tuple[str, ...]) -> bool:
        if not any(fnmatch.fnmatchcase(name, p) for p in self.names):
            return False
        return not self.under or any(_below(folders, u) for u in self.under)


@dataclass(frozen=True)
class Reader:
    """One agent's usage reader for the report."""

    name: str  # the agent: `--agent`, the rows' `agent` and `source`
    extract: str  # "module:function" taking (path, rows, stats)
    files: tuple[Files, ...] = ()  # JSON files and databases it claims by name and place
    homes: tuple[str, ...] = ()  # every JSONL file below a folder named one of these is this reader's
    sniff: str | None = None  # "module:function" (obj, first) -> bool judging one JSONL line
    description: str = ""

    def claim(self, name: str, folders: tuple[str, ...]) -> Files | None:
        """The rule under which a file `name` in `folders` (outermost first) is this reader's, or None."""
        for rule in self.files:
            if rule.match(name, folders):
                return rule
        if self.homes and name.endswith(JSONL_SUFFIXES) and any(f in self.homes for f in folders):
            return HOME_FILES
        return None


HOME_FILES = Files(names=("*",))


OPENCLAW_HOMES = (".openclaw", ".clawdbot", ".moltbot", ".moldbot")

# Order matters for `sniff`: specific JSONL shapes before the built-in pi/Codex/Claude rules, which
# run last (a Qwen Code record looks like a Claude line to them).
READERS: tuple[Reader, ...] = (
    Reader("pi", "batchcompact.report.pi:extract_pi", description="pi and its descendants"),
    Reader("claude", "batchcompact.report.claude:extract_claude", description="Claude Code"),
    Reader("codex", "batchcompact.report.codex:extract_codex", description="Codex"),
    Reader("batchcompact", "batchcompact.report.runs:extract_runs", description="batchcompact run reports"),
    Reader("opencode", "batchcompact.agents.opencode.report:extract_opencode", description="OpenCode", files=(
        Files(("opencode.db", "opencode-*.db"), sqlite=True),
        Files(("*.json",), under=("storage/message",)),
    )),
    Reader("gemini", "batchcompact.agents.gemini.report:extract_gemini", description="Gemini CLI",
           files=(Files(("session-*.json", "session-*.jsonl"), under=("chats",)),),
           sniff="batchcompact.agents.gemini.report:sniff"),
    Reader("kilo", "batchcompact.agents.opencode.report:extract_kilo", description="Kilo",
           files=(Files(("kilo.db", "kilo-*.db"), sqlite=True),)),
    Reader("copilot", "batchcompact.agents.copilot.report:extract_copilot", homes=(".copilot",),
           sniff="batchcompact.agents.copilot.report:sniff_copilot", description="GitHub Copilot CLI"),
    Reader("kimi", "batchcompact.agents.kimi.report:extract_kimi", files=(Files(("wire.jsonl",), under=("sessions",)),),
           homes=(".kimi-code",), sniff="batchcompact.agents.kimi.report:sniff_kimi",
           description="kimi-cli and Kimi Code"),
    Reader("openclaw", "batchcompact.agents.openclaw.report:extract_openclaw", homes=OPENCLAW_HOMES,
           files=(Files(("*.jsonl.reset.*", "*.jsonl.deleted.*"), under=OPENCLAW_HOMES),
                  Files(("openclaw-agent.sqlite",), sqlite=True)), description="OpenClaw"),
    Reader("droid", "batchcompact.agents.droid.report:extract_droid",
           files=(Files(("*.settings.json",), under=("sessions",)),), description="Droid (Factory)"),
    Reader("goose", "batchcompact.agents.goose.report:extract_goose",
           files=(Files(("sessions.db",), under=("sessions",), sqlite=True),), description="Goose"),
    Reader("amp", "batchcompact.agents.amp.report:extract_amp", files=(Files(("T-*.json",), under=("threads",)),),
           description="Amp"),
    Reader("codebuff", "batchcompact.agents.codebuff.report:extract_codebuff",
           files=(Files(("chat-messages.json",), under=("chats",)),), description="Codebuff"),
    Reader("grok", "batchcompact.agents.grok.report:extract_grok",
           files=(Files(("updates.jsonl",), under=(".grok", "sessions")),),
           sniff="batchcompact.agents.grok.report:sniff_grok", description="Grok Build CLI"),
    Reader("zcode", "batchcompact.agents.zcode.report:extract_zcode",
           files=(Files(("db.sqlite",), under=("cli/db",), sqlite=True),), description="ZCode"),
    Reader("hermes", "batchcompact.agents.hermes.report:extract_hermes",
           files=(Files(("state.db",), under=(".hermes", "hermes"), sqlite=True),), description="Hermes Agent"),
)

# pi's descendants write pi's format (pi's reader reads them); `--agent atomic` selects pi rows.
PI_FAMILY = ("pi", "atomic", "indusagi", "oh-my-pi")


def register(reader: Reader) -> None:
    """Add a reader (tests, plugins); a reader of the same name is replaced."""
    global READERS
    READERS = tuple(r for r in READERS if r.name != reader.name) + (reader,)


def reader(name: str) -> Reader | None:
    return next((r for r in READERS if r.name == name), None)


def reader_names() -> tuple[str, ...]:
    return tuple(r.name for r in READERS)


def agent_names() -> tuple[str, ...]:
    """Every agent a row can name (`--agent`, `--source`), the pi family included."""
    names = list(reader_names())
    for name in PI_FAMILY:
        if name not in names:
            names.append(name)
    return tuple(names)


def row_agents(selected: tuple[str, ...]) -> tuple[str, ...]:
    """The row `agent` values that `--agent` names select (a pi descendant's rows say `pi`)."""
    out = list(selected)
    if any(a in PI_FAMILY for a in selected) and "pi" not in out:
        out.append("pi")
    return tuple(out)


def load(ref: str) -> Callable:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _below(folders: tuple[str, ...], under: str) -> bool:
    """Whether `under` ("a" or "a/b": consecutive folders) is among `folders`."""
    if "/" not in under:
        return under in folders
    wanted = tuple(under.split("/"))
    size = len(wanted)
    return any(folders[i : i + size] == wanted for i in range(len(folders) - size + 1))


def _split_folders(folder: str) -> tuple[str, ...]:
    return tuple(p for p in folder.replace("\\", "/").split("/") if p)


def claimed_by(path: str) -> Reader | None:
    """The reader whose name or place rules claim `path` (rules 1 and 2 of the module docstring)."""
    found = _claim(path)
    return found[0] if found else None


def _claim(path: str) -> tuple[Reader, Files] | None:
    folder, name = os.path.split(path)
    folders = _split_folders(folder)
    for entry in READERS:
        rule = entry.claim(name, folders)
        if rule is not None:
            return entry, rule
    return None


def wanted(name: str, folder: str) -> bool:
    """Whether the walk takes a file: JSONL (any), or a file some reader claims by name."""
    if name.endswith(JSONL_SUFFIXES):
        return True
    return _claim(os.path.join(folder, name)) is not None


def is_sqlite(path: str) -> bool:
    """A database source: its key covers its `-wal` file too."""
    found = _claim(path)
    return bool(found and found[1].sqlite)
