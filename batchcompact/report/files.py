"""The files a report covers, and what identifies their usage without reading them (stdlib only).

A file's usage is identified by its `FileKey` (resolved path, size, mtime_ns) and the rules that
extracted it (`EXTRACT_RULES_VERSION`); the warm paths (cached parts, the snapshot, the stored report
results) compare these before trusting anything they kept.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from batchcompact.adapters.common.usage_rows import USAGE_SCHEMA_VERSION
from batchcompact.agents import session_suffixes
from batchcompact.core.words import counted
from batchcompact.errors import UsageError
from batchcompact.formats.scan import (
    broken_link_reason,
    folder_entries,
    is_regular_entry,
    oserror_text,
    skipped_special,
)
from batchcompact.report.detect import is_run_report_name
from batchcompact.report.export import detect as export_detect
from batchcompact.report.export import is_export_name
from batchcompact.report.readers import claims_name, is_sqlite

log = logging.getLogger(__name__)

# Bump when what an extractor produces from the same file changes (a cached part made by older rules
# is then a miss): 2 = built-in summarizer rows left out of run reports; 3 = branch summaries split out;
# 4 = summary entries keyed so the session file and the run report count them once; 5 = Claude
# agent_progress sub-agent usage, 1-hour cache writes, the project from `cwd`; 6 = every row names its
# agent, Codex forks and sub-agent replays count only the child's own turns, the other agents' readers;
# 7 = Codex `cache_write_input_tokens`; 8 = a file of no agent or not readable is named (`unread`), a
# compactions-*.parquet that is not a run report by its schema is left out; 9 = a provider's response id
# keys a row with its numbers (`usage_rows.CallKeys`); 10 = OpenClaw's cold-stored `event_zstd` events counted;
# 11 = a pi header on line 2, after oh-my-pi's title slot (its session id and project);
# 12 = pi-format messages keyed by their times and counts (`usage_rows.PiEntryKeys`: a fork or a migrated copy
# counts once), Copilot CLI's own compaction call (`compactionTokensUsed`) counted, an export cut short
# named (`incomplete`), Claude calls repeating both ids told apart by their prompt side (`#n`), a recorded
# cost that is no cost (NaN, an infinity, $1M+) dropped and named (`extract_rows._sane_costs`);
# 13 = a torn line (`{"type":"session"`) names its agent by its leading bytes (it made a file of no agent).
EXTRACT_RULES_VERSION = 13


def part_file(cache_dir: str | Path, source: str) -> Path:
    """Where the usage part of the source at absolute path `source` lives under `cache_dir`
    (`part_cache.UsageCache`; computed here without pyarrow)."""
    return Path(cache_dir) / f"usage-v{USAGE_SCHEMA_VERSION}" / part_name(source)


def parts_folder_problem(cache_dir: str | Path) -> str | None:
    """Why no usage part can be written under `cache_dir` (its parts folder cannot be made or written to:
    a read-only disk, a file in its place), as one warning; None when a probe file can be made there."""
    folder = part_file(cache_dir, "").parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"usage cache folder {folder} cannot be written ({exc.strerror or exc}): the report is made without it"
    return None


def folder_note(folder: str | Path, message: str) -> dict:
    """A warning about no source file, as a stats entry (`stats_warnings` prints it)."""
    return {"path": str(folder), "warnings": [message], "warning_count": 1}


def part_name(source: str) -> str:
    """The file name of `source`'s usage part (`part_file`)."""
    return hashlib.sha1(source.encode("utf-8", "surrogateescape")).hexdigest() + ".parquet"


DATABASE_SUFFIXES = (".db", ".sqlite", ".sqlite3")  # names worth asking whether an agent claims them as a database


@dataclass(frozen=True)
class FileKey:
    """What identifies a source's content. A SQLite database is one source with its `-wal` file: its
    size is the sum of both and its mtime the later one, so a commit still in the WAL changes the key."""

    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str | Path, *, resolved: bool = False) -> FileKey:
        real = str(path) if resolved else str(Path(path).resolve())
        return cls.from_stat(real, os.stat(path))

    @classmethod
    def from_stat(cls, real: str, st: os.stat_result) -> FileKey:
        size, mtime = st.st_size, st.st_mtime_ns
        if real.endswith(DATABASE_SUFFIXES) and is_sqlite(real):
            try:
                wal = os.stat(real + "-wal")
            except OSError:
                pass
            else:
                size, mtime = size + wal.st_size, max(mtime, wal.st_mtime_ns)
        return cls(real, size, mtime)


def iter_resolved(paths: Iterable[str | Path]) -> Iterator[tuple[Path, str]]:
    """(file as found, its resolved path): each folder is resolved once, a file only when it is a link."""
    for shown, real, _ in _iter_found(paths):
        yield Path(shown), real


def iter_keys(paths: Iterable[str | Path]) -> Iterator[FileKey]:
    """The `FileKey` of every file `iter_resolved` finds, with one stat each (the warm path's walk).
    OSError when one cannot be stat'ed."""
    for _, real, entry in _iter_found(paths):
        st = entry.stat() if entry is not None else os.stat(real)
        yield FileKey.from_stat(real, st)


def _iter_found(paths: Iterable[str | Path]) -> Iterator[tuple[str, str, os.DirEntry | None]]:
    """(path as found, resolved path, its directory entry when walked), each resolved file once."""
    seen: set[str] = set()
    missing = []
    for raw in paths:
        path = Path(raw).expanduser()
        found: list[tuple[str, str, os.DirEntry | None]]
        if path.is_dir():
            found = list(_walk(str(path)))
        elif path.is_file():
            found = [(str(path), os.path.realpath(path), None)]
        elif path.exists():
            skipped_special(path)
            continue
        else:
            missing.append(str(raw))
            continue
        for shown, real, entry in found:
            if real not in seen:
                seen.add(real)
                yield shown, real, entry
    if missing:
        log.warning("not found: %s", ", ".join(missing))


def walk_folder(top: str) -> Iterator[str]:
    """The files a report reads under folder `top`, in `_walk`'s order (`scan.check_each_path`'s walk)."""
    return (shown for shown, _, _ in _walk(top))


def _walk(top: str, real_dir: str | None = None) -> Iterator[tuple[str, str, os.DirEntry]]:
    """Candidate files under `top` in os.walk's order with sorted names (symlinked folders not entered).
    A `.jsonl.zst` with a plain `.jsonl` sibling is skipped (Codex keeps both). `real_dir`: `top`'s
    resolved path when known: a folder entered below is no link, so its resolved path is its parent's and
    its name (one `realpath`, an lstat per component, for the top instead of one per folder)."""
    stack: list[tuple[str, str | None]] = [(top, real_dir)]  # the next folder on top: no recursion, any depth
    suffixes = session_suffixes()
    while stack:
        folder, real = stack.pop()
        files, folders = folder_entries(folder)
        names = {entry.name for entry in files}
        # `os.path.join(real, name)` as one concatenation (a name holds no separator); `entry.path` is
        # `os.path.join(folder, name)`, made by scandir: two joins a file were ~12% of a stored report's walk.
        real_prefix = os.path.join(os.path.realpath(folder) if real is None else real, "")
        for entry in files:
            name = entry.name
            if name.endswith(".jsonl.zst") and name[: -len(".zst")] in names:
                continue
            if (name.endswith(suffixes) or is_run_report_name(name) or claims_name(name, folder)
                    or (is_export_name(name) and export_detect(entry.path) is not None)):
                full = entry.path
                if not is_regular_entry(entry) and skipped_special(full):  # a pipe would wait for a writer forever
                    continue
                yield full, (os.path.realpath(full) if entry.is_symlink() else real_prefix + name), entry
        stack.extend((sub.path, real_prefix + sub.name) for sub in reversed(folders) if not sub.is_symlink())


def stats_warnings(stats: list[dict]) -> list[str]:
    """The warnings of every file's extraction stats, in order (a line for those beyond the kept ones)."""
    out: list[str] = []
    for stat in stats:
        out.extend(stat.get("warnings", []))
        extra = stat.get("warning_count", 0) - len(stat.get("warnings", []))
        if extra > 0:
            out.append(f"{stat['path']}: ... and {counted(extra, 'more warning')}")
    return out


PARALLEL_MIN_BYTES = 32_000_000  # below this, starting worker processes costs more than it saves


def extract_workers(jobs: int | None, todo: int, todo_bytes: int) -> int:
    """Processes to extract with: 1 for small work unless `jobs` asks explicitly."""
    if todo < 2 or (jobs is None and todo_bytes < PARALLEL_MIN_BYTES):
        return 1
    if jobs is None:
        jobs = min(os.cpu_count() or 1, 8)
    return max(1, min(jobs, todo))


@dataclass(frozen=True)
class Walk:
    """What `Tally.stat_files` found: each file's (path, key), how many and their bytes, the stat warnings."""

    found: list[tuple[str, FileKey]]
    files: int
    bytes: int
    stats: list[dict]


@dataclass
class Tally:
    """What a collection saw: each file's extraction stats (dicts, in order), how many files and bytes, and
    how many were extracted now, taken from a cache, or rejected there (a part that failed its check)."""

    stats: list[dict] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    extracted: int = 0
    cached: int = 0
    rejected: int = 0

    @property
    def warnings(self) -> list[str]:
        return stats_warnings(self.stats)

    @property
    def unread(self) -> int:
        """Files the report could not read or that are no session (each named in a warning)."""
        return sum(stat.get("unread", 0) for stat in self.stats)

    @property
    def incomplete(self) -> int:
        """Usage exports cut short (each named in a warning): the report lacks their lost rows."""
        return sum(stat.get("incomplete", 0) for stat in self.stats)

    def stat_files(self, paths: Iterable[str | Path], walk: Walk | None = None,
                   empty_ok: bool = False) -> list[tuple[str, FileKey]]:
        """(path, key) of every file under `paths`, in the order found; counts them and their bytes. A file
        that cannot be stat'ed is a warning in `stats`; nothing found at all is a UsageError unless
        `empty_ok` (the agents' own folders, discovered: an empty archive is a report of zero). `walk`: what
        another collection found under the same paths just now (taken as it is, nothing stat'ed again)."""
        if walk is not None:
            self.stats.extend(walk.stats)
            self.files, self.bytes = walk.files, walk.bytes
            return list(walk.found)
        found: list[tuple[str, FileKey]] = []
        for path, real in iter_resolved(paths):
            try:
                found.append((str(path), FileKey.of(real, resolved=True)))
            except OSError as exc:
                why = broken_link_reason(path) or f"cannot read: {oserror_text(exc)}"  # as the other commands say it
                self.stats.append({"path": str(path), "warnings": [f"{path}: {why}"], "warning_count": 1})
        if not found and not self.stats and not empty_ok:
            raise UsageError("no session files found under " + ", ".join(str(p) for p in paths))
        self.files = len(found)
        self.bytes = sum(key.size for _, key in found)
        return found
