"""The `<read-files>` / `<modified-files>` tags at the end of a compaction summary, as the reader reads them
(docs/summaries.md, "The file tags").

pi and oh-my-pi take the file lists of the next compaction from the entry's `details` (the whole lists, as
pi's `computeFileLists` gives them); the tags are what the resumed agent reads. So they say each file once, as
a path relative to the session's working folder (`src/lib/db.ts`, not `/home/dev/app/src/lib/db.ts`), files of
one folder on one line, each by its last two parts (`packages/web/src/: components/Header.tsx, lib/db.ts`), without a read tool's line range
(`Dashboard.tsx:1-104` is `Dashboard.tsx`) or what is no file (`agent://…`, the working folder itself); and
within a share of the summary's budget (`max_tokens`, chars/4), the modified files first, the rest counted on
a last line ("… and 12 more files"). Formats that keep no `details` read the lists back from these tags
(`fileops.details_from_summary` reads both layouts).

Pure: lists in, text out; deterministic.
"""

from __future__ import annotations

import re

# A read tool's range or mode after the path (`src/x.ts:12`, `:1-104`, `package.json:raw`)
_RANGE = re.compile(r":(?:\d+(?:[-,]\d+)*|raw)$")
_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")
_URI = re.compile(r"^[a-z][a-z0-9+.-]*://")
GROUP_MARK = "/: "  # "folder/: a.ts, b.ts"
MORE = "… and {count} more file{s}"
# A line of the folder layout holds at most this many characters (then the folder's next line)
LINE_CHARS = 160


def tag_path(path: str, cwd: str | None) -> str | None:
    """A path as the tags say it: forward slashes, no read range, relative to `cwd` when inside it; None for
    what is no file (a URI, the working folder itself, an empty string)."""
    path = path.strip()
    if not path or _URI.match(path):
        return None
    if _WINDOWS.match(path) or "\\" in path and "/" not in path:
        path = path.replace("\\", "/")
    path = _RANGE.sub("", path)
    if cwd:
        root = cwd.replace("\\", "/").rstrip("/")
        folded = path.lower() if _WINDOWS.match(root + "/") else path
        base = root.lower() if _WINDOWS.match(root + "/") else root
        if folded == base:
            return None
        if folded.startswith(base + "/"):
            path = path[len(root) + 1:]
        elif folded.startswith("/") or _WINDOWS.match(folded):
            path = _up(path, folded, base)
    path = path.removeprefix("./")
    return path or None


UP_MAX = 2  # `../raddit/src/x.ts` beside the working folder `/home/user/tmp`; farther away, the path itself
UP_SHARED = 3  # parts the path shares with the working folder (`/home/user`) before it is said relative


def _up(path: str, folded: str, base: str) -> str:
    """A path near the working folder as `../…` (at most `UP_MAX` levels up, sharing `UP_SHARED` parts with
    it: `/home/user/raddit/x.ts` from `/home/user/tmp` is `../raddit/x.ts`), else the path as given."""
    parts, root = folded.split("/"), base.split("/")
    shared = 0
    while shared < min(len(parts) - 1, len(root)) and parts[shared] == root[shared]:
        shared += 1
    ups = len(root) - shared
    if shared < UP_SHARED or not 0 < ups <= UP_MAX:
        return path
    return "../" * ups + "/".join(path.split("/")[shared:])


def _lines(paths: list[str]) -> list[str]:
    """The files of one folder on one line, each by its last two parts (`packages/app/src/: tui/footer.ts,
    tui/theme.ts, lib/db.ts`: a file name alone may be one of several), wrapped at `LINE_CHARS`; a path of one
    or two parts, or alone in its folder, as itself; folders in the order of their first file."""
    groups: dict[str, list[str]] = {}
    for path in paths:
        parts = path.split("/")
        folder = "/".join(parts[:-2]) if len(parts) > 2 else ""
        groups.setdefault(folder, []).append("/".join(parts[-2:]) if folder else path)
    lines: list[str] = []
    for folder, names in groups.items():
        if not folder or len(names) == 1:
            lines += [f"{folder}/{name}" if folder else name for name in names]
            continue
        line = f"{folder}{GROUP_MARK}"
        for name in names:
            if not line.endswith(GROUP_MARK) and len(line) + len(name) + 2 > LINE_CHARS:
                lines.append(line)
                line = f"{folder}{GROUP_MARK}"
            line += name if line.endswith(GROUP_MARK) else f", {name}"
        lines.append(line)
    return lines


def _names(paths: list[str], cwd: str | None, seen: set[str]) -> list[str]:
    out = []
    for path in paths:
        said = tag_path(path, cwd)
        if said is not None and said not in seen:
            seen.add(said)
            out.append(said)
    return out


def _tag(name: str, lines: list[str]) -> str:
    return f"<{name}>\n" + "\n".join(lines) + f"\n</{name}>"


def _more(count: int) -> str:
    return MORE.format(count=count, s="" if count == 1 else "s")


def _bounded(name: str, paths: list[str], room: int) -> tuple[str, int]:
    """The tag within `room` characters: as many of its lines as fit, then "… and N more files"; ("", 0)
    when not even one line and the count fit."""
    lines = _lines(paths)
    text = _tag(name, lines)
    if len(text) <= room:
        return text, len(text)
    kept: list[str] = []
    shown = 0
    for line in lines:
        count = line.count(", ") + 1 if GROUP_MARK in line else 1
        candidate = _tag(name, [*kept, line, _more(len(paths) - shown - count)])
        if len(candidate) > room:
            break
        kept.append(line)
        shown += count
    text = _tag(name, [*kept, _more(len(paths) - shown)])
    return (text, len(text)) if len(text) <= room else ("", 0)


def file_tags(read_files: list[str], modified_files: list[str], cwd: str | None = None,
              max_tokens: int | None = None) -> str:
    """The tags appended to a compaction summary ("" when there is no file): the modified files first when
    `max_tokens` (chars/4) binds, then the read ones, each tag cut at a whole line with the rest counted."""
    modified = _names(modified_files, cwd, set())
    changed = set(modified)
    read = [path for path in _names(read_files, cwd, set()) if path not in changed]
    parts = [("read-files", read), ("modified-files", modified)]
    full = [_tag(name, _lines(paths)) for name, paths in parts if paths]
    text = "\n\n" + "\n\n".join(full) if full else ""
    if max_tokens is None or len(text) <= max_tokens * 4:
        return text
    room = max_tokens * 4 - 2  # the blank line before the tags
    modified_text, used = _bounded("modified-files", modified, room) if modified else ("", 0)
    read_text, _ = _bounded("read-files", read, room - used - 2) if read else ("", 0)
    kept = [tag for tag in (read_text, modified_text) if tag]
    return "\n\n" + "\n\n".join(kept) if kept else ""
