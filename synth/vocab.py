"""Invented vocabulary for synthetic sessions: projects, paths, functions, requests, commands, errors.

Everything here is made up for batchcompact; nothing is copied from real transcripts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Project:
    """A fake repository a session works in."""

    name: str
    cwd: str
    language: str  # "python" or "typescript"
    branch: str
    files: tuple[str, ...]
    test_command: str
    lint_command: str

    @functools.cached_property
    def source_files(self) -> tuple[str, ...]:
        """Code files only (what edits and writes touch)."""
        return tuple(p for p in self.files if p.endswith((".py", ".ts", ".tsx")))


PY_FILES = (
    "src/{pkg}/__init__.py",
    "src/{pkg}/cli.py",
    "src/{pkg}/config.py",
    "src/{pkg}/models.py",
    "src/{pkg}/storage/sqlite_store.py",
    "src/{pkg}/storage/cache.py",
    "src/{pkg}/api/routes.py",
    "src/{pkg}/api/auth.py",
    "src/{pkg}/api/pagination.py",
    "src/{pkg}/workers/scheduler.py",
    "src/{pkg}/workers/retry.py",
    "src/{pkg}/parsing/tokenizer.py",
    "src/{pkg}/parsing/frontmatter.py",
    "src/{pkg}/utils/timeparse.py",
    "src/{pkg}/utils/paths.py",
    "tests/conftest.py",
    "tests/test_cli.py",
    "tests/test_storage.py",
    "tests/test_scheduler.py",
    "tests/test_pagination.py",
    "tests/test_auth.py",
    "pyproject.toml",
    "README.md",
    "docs/configuration.md",
    "Makefile",
)
TS_FILES = (
    "src/index.ts",
    "src/server.ts",
    "src/routes/users.ts",
    "src/routes/invoices.ts",
    "src/routes/health.ts",
    "src/db/client.ts",
    "src/db/migrations/0007_add_invoice_status.sql",
    "src/lib/rateLimiter.ts",
    "src/lib/session.ts",
    "src/lib/validators.ts",
    "src/components/InvoiceTable.tsx",
    "src/components/LoginForm.tsx",
    "src/components/Sidebar.tsx",
    "src/hooks/usePaginatedQuery.ts",
    "src/store/cartSlice.ts",
    "test/routes/users.test.ts",
    "test/lib/rateLimiter.test.ts",
    "test/components/InvoiceTable.test.tsx",
    "package.json",
    "tsconfig.json",
    "vite.config.ts",
    "README.md",
)

PROJECTS = (
    Project(
        "webapp",
        "/home/user/projects/webapp",
        "typescript",
        "feature/invoice-export",
        TS_FILES,
        "npm test",
        "npx tsc --noEmit",
    ),
    Project(
        "ledgerkit",
        "/home/user/src/ledgerkit",
        "python",
        "main",
        tuple(p.format(pkg="ledgerkit") for p in PY_FILES),
        "pytest -q",
        "ruff check src tests",
    ),
    Project(
        "feedcrawler",
        "/home/user/work/feedcrawler",
        "python",
        "fix/retry-backoff",
        tuple(p.format(pkg="feedcrawler") for p in PY_FILES),
        "pytest -x -q",
        "ruff check .",
    ),
    Project(
        "dashboard",
        "/home/user/projects/dashboard",
        "typescript",
        "main",
        TS_FILES,
        "npx vitest run",
        "npm run lint",
    ),
    Project(
        "tilemapper",
        "/home/user/code/tilemapper",
        "python",
        "refactor/storage-layer",
        tuple(p.format(pkg="tilemapper") for p in PY_FILES),
        "python -m pytest",
        "mypy src",
    ),
    Project(
        "proj",
        "/home/user/proj",
        "python",
        "main",
        tuple(p.format(pkg="proj") for p in PY_FILES),
        "pytest",
        "ruff check .",
    ),
)

# A project of many files, not among PROJECTS (so that a seed's choice of project is unchanged): a long
# refactoring session across dozens of files (bench/eval_table.py's tuning set), where a summary cannot
# list every file it saw and must choose.
_PLATFORM_DIRS = {
    "src/platform/core": ("engine", "events", "registry", "lifecycle", "errors", "context", "hooks", "plugins"),
    "src/platform/storage": ("sqlite_store", "cache", "blob_store", "migrations", "schema", "indexer"),
    "src/platform/api": ("routes", "auth", "pagination", "serializers", "middleware", "webhooks", "limits"),
    "src/platform/workers": ("scheduler", "retry", "queue", "backoff", "leases", "heartbeat"),
    "src/platform/parsing": ("tokenizer", "frontmatter", "markdown", "yaml_loader", "templates"),
    "src/platform/utils": ("timeparse", "paths", "hashing", "text", "env"),
    "tests/core": ("test_engine", "test_events", "test_registry", "test_plugins"),
    "tests/storage": ("test_sqlite_store", "test_cache", "test_migrations", "test_indexer"),
    "tests/api": ("test_routes", "test_auth", "test_pagination", "test_webhooks"),
    "tests/workers": ("test_scheduler", "test_retry", "test_queue"),
}
PLATFORM = Project(
    "platform",
    "/home/user/work/platform",
    "python",
    "refactor/plugin-registry",
    tuple(f"{folder}/{stem}.py" for folder, stems in _PLATFORM_DIRS.items() for stem in stems)
    + ("src/platform/__init__.py", "src/platform/cli.py", "src/platform/config.py", "tests/conftest.py",
       "pyproject.toml", "README.md", "docs/architecture.md", "docs/plugins.md", "Makefile"),
    "pytest -q",
    "ruff check src tests",
)
EXTRA_PROJECTS = (PLATFORM,)


def project_named(name: str) -> Project:
    """A project of PROJECTS or EXTRA_PROJECTS by name."""
    return {p.name: p for p in PROJECTS + EXTRA_PROJECTS}[name]


FUNCS = (
    "parse_invoice",
    "load_config",
    "resolve_path",
    "retry_with_backoff",
    "paginate",
    "build_query",
    "flush_cache",
    "normalize_email",
    "validate_token",
    "schedule_job",
    "render_table",
    "merge_settings",
    "split_frontmatter",
    "compute_checksum",
    "open_store",
    "apply_migration",
    "refresh_session",
    "fetch_feed",
    "parse_timestamp",
    "group_by_day",
    "encode_cursor",
    "decode_cursor",
    "rate_limit",
)
TS_FUNCS = (
    "createInvoice",
    "listUsers",
    "usePaginatedQuery",
    "parseCursor",
    "withRetry",
    "formatCurrency",
    "validateEmail",
    "buildWhereClause",
    "refreshToken",
    "renderRow",
    "applyDiscount",
    "loadSession",
)
CLASSES = (
    "InvoiceStore",
    "FeedScheduler",
    "TokenCache",
    "RetryPolicy",
    "CursorPage",
    "SettingsLoader",
    "MigrationRunner",
    "RateLimiter",
    "SessionManager",
    "ExportJob",
)
FEATURES = (
    "CSV export of invoices",
    "cursor pagination",
    "retry with exponential backoff",
    "the settings loader",
    "the rate limiter",
    "timezone handling in the daily report",
    "the login form validation",
    "the SQLite storage layer",
    "the job scheduler",
    "front-matter parsing",
    "the cache invalidation",
    "the health endpoint",
    "the migration runner",
    "session refresh",
)
CONDITIONS = (
    "the input has a trailing comma",
    "the cursor is empty",
    "two jobs fire in the same second",
    "the config file is missing",
    "the user has no invoices",
    "the timestamp has no timezone",
    "the upstream returns 429",
    "the cache is cold",
    "the page size is zero",
    "the email has uppercase letters",
)
LIBS = ("pydantic", "httpx", "tenacity", "zod", "dayjs", "sqlalchemy", "vitest fixtures", "the stdlib")

REQUESTS = (
    "The {feature} breaks when {cond}. Can you find the cause in `{path}` and fix it? Add a regression test.",
    "Please refactor `{func}` in `{path}`: it has grown too long. Keep the behaviour, split it into helpers.",
    "Add {feature} support. Start by reading `{path}` and tell me your plan before editing.",
    "Tests are failing on CI after my last change to `{path}`. Run the suite and fix what broke.",
    "Can you review `{path}` for error handling? {cond_cap} currently crashes the process.",
    "Rename `{func}` to something clearer across the codebase and update the call sites.",
    "Write docs for {feature} in `docs/configuration.md`, with one example per option.",
    "I want {feature} to use {lib} instead of the hand-written code in `{path}`. Go ahead.",
    "Run `{test}` and summarize the failures. Don't change anything yet.",
    "Let's speed up `{func}`; profiling shows it dominates when {cond}.",
)
CORRECTIONS = (
    "No, don't touch `{path}`, the bug is in `{func}`.",
    "That's not what I meant. Keep the public signature of `{func}` unchanged.",
    "Stop. Use {lib} for this, not a custom implementation.",
    "The test you added passes for the wrong reason: it never reaches `{func}`. Fix the test.",
    "Good, but please also handle the case where {cond}.",
    "Revert the change to `{path}` and try a smaller fix.",
    "Looks right. Now run `{lint}` too.",
    "Ok, continue.",
    "Why did you change the import order in `{path}`? Undo that part.",
)
THINKING = (
    "The user wants me to look at {feature}. I should read `{path}` first to see how `{func}` is used, "
    "then check the tests. If {cond}, the code path probably skips the guard.",
    "The traceback points at `{func}`. The value is None there, which means the caller did not pass the "
    "default. I'll check `{path}` for where the settings are merged.",
    "Tests fail in two places. One is an assertion on ordering, the other a KeyError. Let me run them one "
    "by one with -x to see the first failure clearly.",
    "I need to be careful: `{func}` is called from several modules. A rename must cover `{path}` and the "
    "tests. I'll grep for it first.",
    "The edit did not apply because the old text did not match exactly. I'll re-read the file around the "
    "function and retry with the exact indentation.",
    "This looks done. I'll run `{test}` once more and then summarize the change for the user.",
)
ASSISTANT_TEXT = (
    "Let me read `{path}` to understand how `{func}` works.",
    "I'll run the tests to see the current state.",
    "Found it: `{func}` assumes {cond_lc} never happens. I'll add a guard and a test.",
    "The edit is in place. Running `{test}` to confirm.",
    "Let me search for all call sites of `{func}`.",
    "That failed because of a stale fixture. Updating `tests/conftest.py`.",
    "Checking the linter output before I finish.",
)
FINAL_TEXT = (
    "Done. Summary of the change:\n\n- `{path}`: `{func}` now handles the case where {cond_lc}.\n"
    "- Added a regression test.\n- `{test}` passes; `{lint}` is clean.",
    "I fixed the failing tests. The root cause was in `{func}` ({path}): it mutated its argument. "
    "All tests pass now.",
    "Here is my plan:\n\n1. Extract the parsing part of `{func}` into a helper.\n2. Move validation into "
    "`{path}`.\n3. Add tests for {feature}.\n\nShall I proceed?",
    "The refactor is complete. `{func}` is split into three helpers; behaviour is unchanged and covered by "
    "the existing tests plus two new ones.",
    "I could not reproduce the failure locally: all tests pass. It may depend on the CI timezone; "
    "`{func}` reads the local time. I suggest pinning TZ=UTC in the CI job.",
)
ERROR_MESSAGES = (
    '529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "Connection error.",
    '500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}',
    "terminated",
)
LABELS = ("before-refactor", "good state", "checkpoint", "tests green", "try-2", "api-change")
SESSION_NAMES = (
    "fix pagination bug",
    "invoice export",
    "retry backoff",
    "storage refactor",
    "ci failures",
    "docs for settings",
    "rate limiter tuning",
)
