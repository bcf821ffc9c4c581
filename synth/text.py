"""Pre-generated text blocks (source files, test logs, tracebacks, diffs) reused across sessions.

Generating every character randomly is slow; a pool built once per seed and sampled from keeps the
corpus writer fast while the text still looks like a coding session.
"""

from __future__ import annotations

import functools
import random
import string

from . import vocab

_ALNUM = string.ascii_letters + string.digits


def fill(rng: random.Random, template: str, project: vocab.Project, path: str | None = None) -> str:
    """Fill a vocabulary template with names that fit the project."""
    funcs = vocab.TS_FUNCS if project.language == "typescript" else vocab.FUNCS
    cond = rng.choice(vocab.CONDITIONS)
    return template.format(
        feature=rng.choice(vocab.FEATURES),
        cond=cond,
        cond_cap=cond[0].upper() + cond[1:],
        cond_lc=cond,
        path=path or rng.choice(project.files),
        func=rng.choice(funcs),
        lib=rng.choice(vocab.LIBS),
        test=project.test_command,
        lint=project.lint_command,
    )


def random_token(rng: random.Random, n: int) -> str:
    """n random base62 characters (tool-call ids, signatures)."""
    return "".join(rng.choices(_ALNUM, k=n))


def _py_function(rng: random.Random) -> list[str]:
    name = rng.choice(vocab.FUNCS) + rng.choice(("", "_v2", "_impl", "_safe", ""))
    args = ", ".join(rng.sample(("path", "config", "limit", "cursor", "session", "retries", "now"), 2))
    body = [f"def {name}({args}):", f'    """{rng.choice(vocab.FEATURES).capitalize()} helper."""']
    for _ in range(rng.randint(3, 14)):
        body.append(
            rng.choice(
                (
                    '    if {v} is None:\n        raise ValueError("{v} is required")',
                    "    {v} = {v}.strip().lower()",
                    '    result = [item for item in {v} if item.get("active")]',
                    '    logger.debug("processing %s", {v})',
                    "    for index, row in enumerate({v}):\n        total += row.amount * (1 + index % 3)",
                    '    with open({v}, encoding="utf-8") as handle:\n        data = json.load(handle)',
                    "    try:\n        response = client.get(url, timeout=10)\n    except httpx.TimeoutException:\n"
                    "        return None",
                    "    cache[{v}] = time.monotonic()",
                )
            ).format(v=rng.choice(("path", "config", "cursor", "session", "rows")))
        )
    body.append("    return " + rng.choice(("result", "data", "total", "None", "cache")))
    return body + [""]


def _ts_function(rng: random.Random) -> list[str]:
    name = rng.choice(vocab.TS_FUNCS)
    body = [f"export async function {name}(input: {rng.choice(('UserInput', 'Invoice', 'Query'))}) {{"]
    for _ in range(rng.randint(3, 12)):
        body.append(
            rng.choice(
                (
                    '  if (!input.{f}) throw new Error("missing {f}");',
                    "  const rows = await db.select().from({t}).where(eq({t}.{f}, input.{f}));",
                    "  const total = rows.reduce((sum, row) => sum + row.amount, 0);",
                    '  logger.info({{ {f}: input.{f} }}, "handled");',
                    "  for (const row of rows) {{\n    row.{f} = row.{f}.trim();\n  }}",
                    "  await cache.set(`{t}:${{input.{f}}}`, rows, {{ ttl: 60 }});",
                )
            ).format(f=rng.choice(("id", "email", "cursor", "status")), t=rng.choice(("users", "invoices")))
        )
    body += ["  return { ok: true, rows };", "}", ""]
    return body


def _source_file(rng: random.Random, language: str, n_funcs: int) -> str:
    if language == "typescript":
        lines = ['import { db } from "../db/client";', 'import { logger } from "../lib/logger";', ""]
        for _ in range(n_funcs):
            lines += _ts_function(rng)
    else:
        lines = [
            '"""Module docstring."""',
            "",
            "import json",
            "import logging",
            "import time",
            "",
            "import httpx",
            "",
            "logger = logging.getLogger(__name__)",
            "",
        ]
        for _ in range(n_funcs):
            lines += _py_function(rng)
    return "\n".join(lines)


def _test_log(rng: random.Random, language: str) -> tuple[str, bool]:
    failed = rng.random() < 0.45
    n = rng.randint(6, 60)
    if language == "typescript":
        lines = [f" RUN  v1.6.{rng.randint(0, 9)} /home/user/projects/app", ""]
        for i in range(n):
            lines.append(
                f" ✓ test/{rng.choice(('routes', 'lib', 'components'))}/case{i}.test.ts "
                f"({rng.randint(1, 40)} tests) {rng.randint(3, 900)}ms"
            )
        if failed:
            lines += [
                "",
                " FAIL  test/lib/rateLimiter.test.ts > RateLimiter > refills after window",
                "AssertionError: expected 3 to be 5 // Object.is equality",
                " ❯ test/lib/rateLimiter.test.ts:42:23",
            ]
        lines += [
            "",
            f" Test Files  {'1 failed | ' if failed else ''}{n} passed ({n + failed})",
            f"      Tests  {rng.randint(50, 900)} passed",
            f"   Duration  {rng.randint(2, 40)}.{rng.randint(10, 99)}s",
        ]
    else:
        lines = [
            "============================= test session starts ==============================",
            f"platform linux -- Python 3.12.{rng.randint(1, 7)}, pytest-8.3.{rng.randint(0, 4)}",
            f"collected {n * 4} items",
            "",
        ]
        for i in range(n):
            marks = "".join(rng.choice("....F." if failed and i % 7 == 3 else "......") for _ in range(30))
            lines.append(f"tests/test_module_{i}.py {marks} [{min(100, (i + 1) * 100 // n):3d}%]")
        if failed:
            lines += [
                "",
                "=================================== FAILURES ===================================",
                "____________________________ test_paginate_empty _____________________________",
                "",
                "    def test_paginate_empty(store):",
                '>       assert paginate(store, cursor="") == []',
                "E       TypeError: 'NoneType' object is not iterable",
                "",
                "tests/test_pagination.py:31: TypeError",
                f"=========================== 1 failed, {n * 4 - 1} passed in {rng.randint(1, 30)}.{rng.randint(10, 99)}s ===",
            ]
        else:
            lines.append(
                f"============================== {n * 4} passed in {rng.randint(1, 30)}.{rng.randint(10, 99)}s ==="
            )
    return "\n".join(lines), failed


def _traceback(rng: random.Random) -> str:
    lines = ["Traceback (most recent call last):"]
    for _ in range(rng.randint(4, 14)):
        lines.append(
            f'  File "/home/user/.venv/lib/python3.12/site-packages/{rng.choice(("httpx", "click", "sqlalchemy"))}'
            f'/{rng.choice(("_client", "core", "engine/base"))}.py", line {rng.randint(10, 2000)}, in '
            f"{rng.choice(vocab.FUNCS)}"
        )
        lines.append(
            f"    {rng.choice(('return self._send(request)', 'rv = self.invoke(ctx)', 'cursor.execute(stmt)'))}"
        )
    lines.append(
        rng.choice(
            (
                "KeyError: 'cursor'",
                "sqlite3.OperationalError: database is locked",
                "ValueError: page size must be positive",
                "httpx.ReadTimeout: timed out",
            )
        )
    )
    return "\n".join(lines)


def _node_stack(rng: random.Random) -> str:
    error = rng.choice(
        (
            "TypeError: Cannot read properties of undefined (reading 'id')",
            "Error: connect ECONNREFUSED 127.0.0.1:5432",
            "ZodError: invalid_type at invoices[0].amount",
        )
    )
    lines = [error]
    for _ in range(rng.randint(4, 12)):
        lines.append(
            f"    at {rng.choice(vocab.TS_FUNCS)} (/home/user/projects/app/"
            f"{rng.choice(('src/routes/invoices.ts', 'src/db/client.ts', 'node_modules/pg/lib/client.js'))}"
            f":{rng.randint(5, 400)}:{rng.randint(3, 40)})"
        )
    lines.append(f"\nNode.js v22.{rng.randint(1, 12)}.0")
    return "\n".join(lines)


def _grep(rng: random.Random, files: tuple[str, ...]) -> str:
    func = rng.choice(vocab.FUNCS + vocab.TS_FUNCS)
    return "\n".join(
        f"{rng.choice(files)}:{rng.randint(1, 400)}:    result = {func}(config, limit={rng.randint(1, 99)})"
        for _ in range(rng.randint(2, 60))
    )


def _diff(rng: random.Random) -> str:
    lines = [f"@@ -{rng.randint(1, 300)},7 +{rng.randint(1, 300)},9 @@"]
    for _ in range(rng.randint(5, 30)):
        sign = rng.choice(" +- ")
        lines.append(
            f"{sign}    {rng.choice(('if cursor is None:', 'return []', 'retries += 1', 'await flush()'))}"
        )
    return "\n".join(lines)


def _markdown(rng: random.Random) -> str:
    parts = [f"# {rng.choice(vocab.CLASSES)}", ""]
    for _ in range(rng.randint(2, 6)):
        feature = rng.choice(vocab.FEATURES)
        parts += [
            f"## {feature[0].upper()}{feature[1:]}",
            "",
            f"Handles the case where {rng.choice(vocab.CONDITIONS)}.",
            "",
            "```",
            f"{rng.choice(vocab.FUNCS)}(config, limit={rng.randint(1, 500)})",
            "```",
            "",
        ]
    return "\n".join(parts)


def _config(path: str, key: int) -> str:
    name = path.rsplit("/", 1)[-1]
    if name == "package.json":
        return (
            '{\n  "name": "app",\n  "private": true,\n  "scripts": {\n    "test": "vitest run",\n'
            '    "lint": "eslint src"\n  },\n  "dependencies": {\n    "zod": "^3.23.8"\n  }\n}'
        )
    if name == "pyproject.toml":
        return (
            f'[project]\nname = "app"\nversion = "0.{key % 9}.0"\nrequires-python = ">=3.11"\n'
            'dependencies = ["httpx>=0.27", "pydantic>=2"]\n\n[tool.ruff]\nline-length = 100'
        )
    if name.endswith(".sql"):
        return "ALTER TABLE invoices ADD COLUMN status TEXT NOT NULL DEFAULT 'draft';\nCREATE INDEX invoices_status ON invoices(status);"
    if name == "Makefile":
        return "test:\n\tpytest -q\n\nlint:\n\truff check .\n"
    return '{\n  "compilerOptions": {\n    "strict": true,\n    "target": "ES2022"\n  }\n}'


class TextPool:
    """Blocks of text built once from a seed; sessions sample from them."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"pool-{seed}")
        self.sources = {
            lang: [_source_file(rng, lang, rng.choice((1, 2, 3, 5, 8, 12, 20, 36))) for _ in range(24)]
            for lang in ("python", "typescript")
        }
        self.test_logs = {
            lang: [_test_log(rng, lang) for _ in range(16)] for lang in ("python", "typescript")
        }
        self.tracebacks = {
            "python": [_traceback(rng) for _ in range(12)],
            "typescript": [_node_stack(rng) for _ in range(12)],
        }
        self.greps = {p.name: [_grep(rng, p.files) for _ in range(6)] for p in vocab.PROJECTS}
        self.diffs = [_diff(rng) for _ in range(12)]
        self.signatures = [random_token(rng, rng.randint(200, 600)) for _ in range(16)]
        self.snippets = {
            lang: [_source_file(rng, lang, 1) for _ in range(8)] for lang in ("python", "typescript")
        }
        self.docs = [_markdown(rng) for _ in range(8)]
        prose_rng = random.Random(f"prose-{seed}")
        self.prose = [
            " ".join(
                fill(prose_rng, prose_rng.choice(vocab.THINKING), vocab.PROJECTS[i % 6])
                for _ in range(prose_rng.randint(1, 4))
            )
            for i in range(32)
        ]

    def traceback_for(self, rng: random.Random, project: vocab.Project) -> str:
        """A crash in the project's language."""
        return rng.choice(self.tracebacks[project.language])

    def grep_for(self, rng: random.Random, project: vocab.Project) -> str:
        """`rg -n` output over the project's own files."""
        if project.name not in self.greps:  # an EXTRA_PROJECTS project: its own greps, from its name
            own = random.Random(f"grep-{project.name}")
            self.greps[project.name] = [_grep(own, project.files) for _ in range(6)]
        return rng.choice(self.greps[project.name])

    def snippet_for(self, rng: random.Random, project: vocab.Project, max_chars: int = 400) -> str:
        """A few consecutive lines from the middle of a function (edit old/new text)."""
        lines = rng.choice(self.snippets[project.language]).split("\n")
        start = rng.randint(len(lines) // 3, max(len(lines) // 3, len(lines) - 4))
        return "\n".join(lines[start : start + rng.randint(2, 8)])[:max_chars]

    def diff_for(self, rng: random.Random, path: str) -> str:
        """A unified diff of `path` (the hunk body comes from the pool)."""
        return f"--- a/{path}\n+++ b/{path}\n" + rng.choice(self.diffs)

    def source_for(self, path: str, language: str) -> str:
        """A file's content: the same path always maps to the same text, in a form that fits its name."""
        key = sum(map(ord, path))
        if path.endswith(".md"):
            return self.docs[key % len(self.docs)]
        if not path.endswith((".py", ".ts", ".tsx")):
            return _config(path, key)
        items = self.sources[language]
        return items[key % len(items)]


@functools.lru_cache(maxsize=4)
def get_pool(seed: int) -> TextPool:
    """The pool for a seed, cached: building one takes tens of milliseconds."""
    return TextPool(seed)
