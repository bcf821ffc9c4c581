"""One exception family. Messages name the fix.

Internal errors (a bug in batchcompact, not a problem with the input) are said as such: one line with
"internal error" and the hint to rerun with BATCHCOMPACT_DEBUG=1, which prints the traceback, and exit
code 4 (`INTERNAL_ERROR_EXIT`). Per-file work (plan, run, validate) records the file's row with that
reason and goes on with the other files; the command exits 4 at the end.
"""

import os
import traceback


class BatchCompactError(Exception):
    """Base class of every error batchcompact raises on purpose."""

    exit_code = 1


class UsageError(BatchCompactError):
    """The command line or settings are wrong; the message says how to fix them."""

    exit_code = 2


class RunAborted(BatchCompactError):
    """The run stopped before finishing (authentication, lock held, budget refused)."""

    exit_code = 3


class LockHeldError(RunAborted):
    """Another run holds the state lock."""


class OutputError(BatchCompactError):
    """The command's output (-o FILE, --chart FILE, standard output) could not be written: disk full,
    permissions. The work itself is done (a `run`'s sessions and its Parquet report are written)."""

    exit_code = 3


class StdoutClosed(BatchCompactError):
    """Standard output's reader is gone (`| head`): the command stops quietly, exit 141 as SIGPIPE gives."""

    exit_code = 141


class SessionReadError(BatchCompactError):
    """A session file could not be read at all. The message says why without the path: the row, problem
    line or error that reports it names the file once (a reason without its path is grouped by kind)."""


class MissingExtraError(SessionReadError):
    """A file that needs an optional package that is not installed (a `.jsonl.zst` without zstandard): it is
    not read, so a report without it is incomplete (exit 1)."""

    incomplete = True


class NotCompacted(SessionReadError):
    """A session file of an agent batchcompact reports on but does not read for compaction (Kimi): every
    command that compacts treats it as a file it leaves alone (`plan` and `run`: `skip`; `validate`: a
    warning), as it treats a file of a compacted agent that its reader refuses to rewrite."""


def reported_not_compacted(what: str) -> str:
    """The reason of every file batchcompact reports but leaves alone (`a Kimi transcript`, `a Copilot CLI
    OpenTelemetry export`): one wording in plan, run and validate."""
    return f"{what}: reported, not compacted"


class VerificationError(BatchCompactError):
    """A written file did not pass verification; the original is untouched."""


class SummarizerError(BatchCompactError):
    """A summary call failed for good (after retries)."""


class InternalError(BatchCompactError):
    """A bug in batchcompact (not bad input, not a provider's answer); `internal_error_reason` says it."""

    exit_code = 4


INTERNAL_ERROR_EXIT = InternalError.exit_code
INTERNAL_ERROR = "internal error"
DEBUG_HINT = "a bug in batchcompact; rerun with BATCHCOMPACT_DEBUG=1 for the traceback"


def outcome_exit_code(failed: int, internal: int) -> int:
    """The exit code of a command that works file by file (`plan`, `run`, `validate`), from its rows: 4 when
    a file hit a bug (`internal`, the others still processed), 1 when some sessions failed or are invalid
    (`failed`: plan's `error` rows, run's `failed`, validate's invalid files), else 0. One rule, so the
    three commands agree on the same files (docs/cli.md, "Exit codes and errors")."""
    if internal:
        return INTERNAL_ERROR_EXIT
    return 1 if failed else 0


def debug_enabled() -> bool:
    """BATCHCOMPACT_DEBUG is set: tracebacks are shown instead of one-line internal errors."""
    return bool(os.environ.get("BATCHCOMPACT_DEBUG"))


def internal_error_reason(exc: BaseException) -> str:
    """The one-line reason of a file a bug stopped; with BATCHCOMPACT_DEBUG=1 the traceback goes to stderr
    (of the process the bug happened in: a worker's stderr is the command's)."""
    if debug_enabled():
        traceback.print_exception(exc)
    said = repr(exc)
    if len(said) > MAX_SAID:  # an exception that holds a whole line or summary: its ends say what it was
        said = f"{said[:MAX_SAID // 2]} … {said[-MAX_SAID // 2:]}"
    return f"{INTERNAL_ERROR}: {said} ({DEBUG_HINT})"


MAX_SAID = 400  # characters of an exception in an internal error's one line


def is_internal_error(reason: object) -> bool:
    """Whether a row's reason is an internal error (`internal_error_reason`)."""
    return isinstance(reason, str) and reason.startswith(INTERNAL_ERROR + ":")
