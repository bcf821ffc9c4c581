"""Validate session files: structural checks of the readers plus JSON Schema checks of every entry."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from batchcompact.agents import contracts, find
from batchcompact.core.entries import ERROR, WARNING, Problem
from batchcompact.core.jsontypes import JsonObject
from batchcompact.core.planner import EMPTY_SESSION
from batchcompact.errors import BatchCompactError, NotCompacted, internal_error_reason
from batchcompact.formats.scan import unreadable_reason


def validate_file(path: str) -> JsonObject:
    """Problems of one file as a row: path, format, entries, errors, warnings, problems."""
    from batchcompact.pipeline.planning import read_session

    try:
        session = read_session(path)
        problems = list(session.problems)
        agent = find(session.agent)
        if agent is not None and agent.validate:
            # A line the reader already reported (an error, or an unknown role it tolerates) is not
            # reported a second time by the schema.
            seen = {p.line for p in problems if p.line is not None}
            problems.extend(p for p in contracts.validator(agent)(session) if p.line not in seen)
        agent_name, entries, session_id = session.agent, len(session.entries), session.session_id
        if not session.entries and not any(p.severity == ERROR for p in problems):  # just started
            problems.append(Problem(path, None, WARNING, f"{EMPTY_SESSION}: nothing to compact"))
    except NotCompacted as exc:  # an agent batchcompact only reports: not checked, not invalid (plan skips it)
        problems = [Problem(path, None, WARNING, f"{exc}; its lines are not checked")]
        agent_name, entries, session_id = None, 0, None
    except (OSError, BatchCompactError, UnicodeError) as exc:  # empty, compressed, binary, a symlink loop
        problems = [Problem(path, None, ERROR, unreadable_reason(str(path), exc))]
        agent_name, entries, session_id = None, 0, None
    except Exception as exc:  # one broken file must not stop the others
        problems = [Problem(path, None, ERROR, internal_error_reason(exc))]
        agent_name, entries, session_id = None, 0, None
    problems.sort(key=lambda p: (p.line or 0))
    errors = sum(1 for p in problems if p.severity == ERROR)
    return {
        "path": path,
        "format": agent_name,
        "session_id": session_id,
        "entries": entries,
        "valid": errors == 0,
        "errors": errors,
        "warnings": len(problems) - errors,
        "problems": [p.as_dict() for p in problems],
    }


def validate_paths(paths: Iterable[str], jobs: int = 1) -> Iterator[JsonObject]:
    """`batchcompact validate`: `validate_file` of every session file under `paths` (none found is a
    UsageError), in the walk's order, over `jobs` processes."""
    from batchcompact.formats.scan import iter_session_files
    from batchcompact.pipeline.parallel import map_bounded

    files = (str(item.path) for item in iter_session_files(paths, require_any=True))
    return map_bounded(validate_file, files, jobs)
