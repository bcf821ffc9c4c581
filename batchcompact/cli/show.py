"""`batchcompact show`: one session as a person would want to see it."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import click

from batchcompact.cli.config import ExpandedPath
from batchcompact.cli.output import output_options, pick_format
from batchcompact.core.jsontypes import JsonObject, JsonValue
from batchcompact.core.words import counted

if TYPE_CHECKING:
    from batchcompact.core.session import Session


def _render_block(block: JsonValue) -> str:
    if not isinstance(block, dict):
        return str(block)
    kind = block.get("type")
    if kind == "text":
        return block.get("text") or ""
    if kind == "thinking":
        return f"(thinking) {block.get('thinking') or ''}"
    if kind == "toolCall":
        args = json.dumps(block.get("arguments", {}), ensure_ascii=False)
        return f"(tool call {block.get('name')}) {args}"
    if kind == "image":
        return f"(image {block.get('mimeType', '')})"
    return f"({kind})"


def render_message(message: JsonObject) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(_render_block(b) for b in content) if isinstance(content, list) else ""


@click.command()
@click.argument("session_path", metavar="SESSION", type=ExpandedPath(dir_okay=False))
@click.option("--context", "with_context", is_flag=True, help="Print the rebuilt LLM context, message by message.")
@output_options(formats=("table", "json", "jsonl"), aliases={"text": "table"})
def show(session_path: str, with_context: bool, fmt: str, output: str | None, json_flag: bool) -> int:
    """Show one session: header, entry counts, tree and branches, compactions, context size, problems.

    \b
    Examples:
      batchcompact show sample_sessions/pi/branched.jsonl
      batchcompact show out/pi/big-refactor.jsonl --context
      batchcompact show session.jsonl --format json
    """
    from batchcompact.agents import file_of
    from batchcompact.errors import SessionReadError, UsageError
    from batchcompact.formats.scan import special_kind
    from batchcompact.pipeline.planning import read_session
    from batchcompact.pipeline.session_info import describe_session

    stored = file_of(session_path)  # a session in an agent's database (`<db>#<id>`): the database
    if not os.path.lexists(stored):  # said as every command says a missing PATH (formats/scan.py)
        raise UsageError(f"path not found: {stored}")
    kind = special_kind(stored)
    if kind is not None:  # opening a named pipe would wait for a writer, a device may never end
        raise UsageError(f"{session_path}: {kind}, not a regular file")
    session_path = _the_one_session(session_path)
    try:
        session = read_session(session_path)
    except (OSError, SessionReadError) as exc:  # why, as validate says it; alone on the line, naming the file
        from batchcompact.formats.scan import unreadable_reason

        raise SessionReadError(f"{session_path}: {unreadable_reason(session_path, exc)}") from None
    info = describe_session(session, with_context=with_context)
    fmt = pick_format(fmt, json_flag)
    if fmt != "table":
        from batchcompact.cli.output import write_rows

        write_rows(fmt, output, [info])
        return 0 if session.compactable else 1
    if output:
        import contextlib

        from batchcompact.outfile import open_text

        with open_text(output) as handle, contextlib.redirect_stdout(handle):
            return _print_text(session, info, with_context)
    return _print_text(session, info, with_context)


def _by_name(item: tuple) -> str:
    """Counts keyed by what a file says (an entry's type, a role) sort by their text: a file's `null` type
    is a None key beside the strings."""
    return str(item[0])


def _print_text(session: Session, info: JsonObject, with_context: bool) -> int:
    header = session.header or {}
    # What a format does not record is left out (Gemini CLI chats carry no version) or shown as '-'.
    version = f", version {info['version']}" if info["version"] is not None else ""
    click.echo(f"{info['path']}  ({info['format']}{version})")
    click.echo(f"session {info['session_id']}  cwd {header.get('cwd') or '-'}")
    click.echo(f"entries: {info['entries']}  " + ", ".join(f"{k} {v}" for k, v in sorted(info["entry_types"].items(), key=_by_name)))
    if info["message_roles"]:
        click.echo("messages: " + ", ".join(f"{k} {v}" for k, v in sorted(info["message_roles"].items(), key=_by_name)))
    model = info["model"] or {}
    # only text is a name (a file's provider may be a list nested 1,000 deep: its str() recursed too far)
    name = "/".join(part for part in (model.get("provider"), model.get("modelId")) if part and isinstance(part, str)) or "-"
    click.echo(f"model: {name}  thinking: {info['thinking_level']}")
    if info["leaf_id"] is None:
        click.echo("active leaf: none (no conversation entries)")
    else:
        click.echo(f"active leaf: {info['leaf_id']} (line {info['leaf_line']}), path of {counted(info['path_entries'], 'entry')}")
    for branch in info["branches"]:
        click.echo(
            f"  abandoned branch: leaf {branch['leaf_id']} (line {branch['leaf_line']}), from "
            f"{branch['common_ancestor_id'] or 'root'}, {counted(branch['entries'], 'entry')}, ~{counted(branch['tokens'], 'token')}"
            + (f", summarized by {branch['summary_id']}" if branch["summary_id"] else "")
        )
    for comp in info["compactions"]:
        click.echo(
            f"compaction {comp['id']} (line {comp['line']}): keeps from {comp['first_kept_entry_id']}, "
            f"{counted(comp['tokens_before'] or 0, 'token')} before"
            + (f", summary encrypted by the provider, {comp['encrypted_summary_chars']:,} characters"
               if comp.get("encrypted_summary_chars") else "")
        )
    ctx = info["context"]
    click.echo(f"context: {counted(ctx['messages'], 'message')}, ~{counted(ctx['tokens'], 'token')}")
    for problem in session.problems:
        click.echo(str(problem))
    if with_context:
        click.echo("")
        for record in info["context_messages"]:
            where = f"line {record['line']}" if record["line"] is not None else "synthesized"
            click.echo(f"--- {record['role']} ({record['source_role']}, {where})")
            click.echo(render_message(record["message"]))
    return 0 if session.compactable else 1


def _the_one_session(path: str) -> str:
    """`DB#<id>` for an agent's session database named alone that holds one session (show it, as a file
    of one session is shown); any other path as it is (a database of several: the reader asks to name one)."""
    from batchcompact.agents import contracts, store_database
    from batchcompact.errors import SessionReadError

    agent = store_database(os.path.basename(path))
    if agent is None or agent.store is None:
        return path
    try:
        ids = contracts.store(agent).session_ids(path)
    except (OSError, SessionReadError):  # an unreadable database: the reader says why
        return path
    except Exception as exc:  # sqlite3's own errors: the reader says why
        if type(exc).__module__ == "sqlite3":
            return path
        raise
    return f"{path}#{ids[0]}" if len(ids) == 1 else path
