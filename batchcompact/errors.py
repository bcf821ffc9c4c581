"""One exception family. Messages name the fix."""


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


class SessionReadError(BatchCompactError):
    """A session file could not be read at all."""


class VerificationError(BatchCompactError):
    """A written file did not pass verification; the original is untouched."""


class SummarizerError(BatchCompactError):
    """A summary call failed for good (after retries)."""
