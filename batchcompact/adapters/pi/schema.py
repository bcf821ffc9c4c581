"""pi's session schemas (`schemas/pi-*.schema.json`): the header, every entry, and the stricter schema of the
entries batchcompact writes; `validate_session` is pi's `Agent.validate` (what `validate` adds to the reader's
checks). The checks are compiled and explained by `batchcompact.schemas`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from batchcompact.adapters.pi.extra import PiSessionExtra
from batchcompact.core.entries import ERROR, Problem
from batchcompact.schemas import definition_checker, file_checker

if TYPE_CHECKING:
    from batchcompact.core.jsontypes import JsonValue
    from batchcompact.core.session import Session

HEADER_SCHEMA = "pi-session-header.schema.json"
ENTRY_SCHEMA = "pi-entry.schema.json"
WRITTEN_ENTRY_SCHEMA = "pi-entry-written.schema.json"
SCHEMA_FILES = (HEADER_SCHEMA, ENTRY_SCHEMA, WRITTEN_ENTRY_SCHEMA)

# Entry type -> its definition in pi-entry.schema.json: what the union's if/then would pick.
ENTRY_DEFS = {
    "message": "messageEntry",
    "thinking_level_change": "thinkingLevelChangeEntry",
    "model_change": "modelChangeEntry",
    "compaction": "compactionEntry",
    "branch_summary": "branchSummaryEntry",
    "custom": "customEntry",
    "custom_message": "customMessageEntry",
    "label": "labelEntry",
    "session_info": "sessionInfoEntry",
}
# oh-my-pi writes two of them its own way (README.md beside this file, "oh-my-pi")
OMP_ENTRY_DEFS = {**ENTRY_DEFS, "thinking_level_change": "ompThinkingLevelChangeEntry",
                  "model_change": "ompModelChangeEntry"}


def validate_header(obj: JsonValue) -> list[str]:
    """Problems of a session header (first line) against pi-session-header.schema.json; [] when valid."""
    return file_checker(HEADER_SCHEMA).errors(obj, "header")


def validate_entry(obj: JsonValue, definitions: dict[str, str] = ENTRY_DEFS) -> list[str]:
    """Problems of one entry against pi-entry.schema.json; [] when valid or of an unknown type.
    `definitions`: which definition checks each type (OMP_ENTRY_DEFS for an oh-my-pi session).

    Messages name the field, e.g. "message.usage.totalTokens: 'abc' is not of type 'number'".
    """
    type_ = obj.get("type") if isinstance(obj, dict) else None
    definition = definitions.get(type_) if isinstance(type_, str) else None
    if definition is None:
        # The union itself: unknown types pass it; a non-object or a missing/non-string type does not.
        return file_checker(ENTRY_SCHEMA).errors(obj, "entry")
    return definition_checker(ENTRY_SCHEMA, definition).errors(obj, "entry")


def validate_session(session: Session) -> list[Problem]:
    """Schema errors of a read (and migrated) pi session, one Problem per error with its line number."""
    from batchcompact.adapters.pi.omp import is_omp

    definitions = OMP_ENTRY_DEFS if is_omp(session) else ENTRY_DEFS
    problems: list[Problem] = []
    if session.header is not None:
        line = PiSessionExtra.of(session).header_line
        problems.extend(
            Problem(session.path, line, ERROR, f"session header: {text}")
            for text in validate_header(session.header)
        )
    for entry in session.entries:
        for text in validate_entry(entry.data, definitions):
            problems.append(Problem(session.path, entry.line, ERROR, f"{entry.type} entry: {text}"))
    return problems
