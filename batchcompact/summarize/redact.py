"""Secret redaction for prompts before they leave the machine.

`redact_text(text)` replaces likely secrets with `[REDACTED:<kind>]` and returns the new text and a count
per kind. Invariants:
- patterns are compiled once at import;
- redacting already-redacted text changes nothing (idempotent);
- only the secret is replaced, so `Authorization: Bearer [REDACTED:bearer_token]` keeps its context;
- the text is scanned once by a case-sensitive trigger regex of literal prefixes (Python's `re` is ~10x
  slower with IGNORECASE or nested alternatives); each detailed pattern is only tried at a trigger hit.
"""

from __future__ import annotations

import re
from collections import Counter

MARK = "[REDACTED:{}]"


_VALUE = r"[A-Za-z0-9_\-./+=:@~%!*^]"

# (kind, pattern tried at a trigger hit, group holding the secret: 0 = the whole match). Order matters:
# the first pattern that matches at a position wins (sk-ant- before sk-).
_SPECS: list[tuple[str, str, int]] = [
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----",
        0,
    ),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}+", 0),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+", 0),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}", 0),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", 0),
    (
        "aws_secret_key",
        r"(?i:aws)[A-Za-z_\-]{0,20}?(?i:secret)[A-Za-z_\-]{0,20}[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        1,
    ),
    ("github_token", r"\bgh[pousr]_[A-Za-z0-9]{36,}+", 0),
    ("github_token", r"\bgithub_pat_[A-Za-z0-9_]{22,}+", 0),
    ("gitlab_token", r"\bglpat-[A-Za-z0-9_\-]{20,}+", 0),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}+", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+", 0),
    ("bearer_token", r"\b(?:bearer|Bearer|BEARER)\s+([A-Za-z0-9._~+/\-]{16,}+=*)", 1),
]
_COMPILED = [(kind, re.compile(pattern), group) for kind, pattern, group in _SPECS]
# Case-sensitive literal prefixes: Python's `re` is ~10x slower with IGNORECASE or nested alternatives.
_TRIGGER = re.compile(
    r"-----BEGIN|sk-|AIza|AKIA|ASIA|aws|AWS|Aws|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|eyJ|bearer|Bearer|BEARER"
)

# `key=value` style assignments, found on the ASCII-lowercased text by the keyword that ENDS the key
# ("contextTokens" is a count, not a secret). Only the value is replaced:
# key = "value" (code, shell) | KEY=value (env, URL, CLI; no spaces, not a call) | "key": "value" (JSON)
# | key: value at the end of a line (YAML).
_KEYWORD = re.compile(r"(?:pass(?:word|wd|phrase)|secret|token|key)(?![a-z0-9])")
_KEY_QUALIFIER = re.compile(
    r"(?:api|access|auth|private|secret|signing|encryption|master)[_\-]?$"
)  # "key" alone is not a secret name
_AFTER_KEY = re.compile(
    rf"\s*=\s*(?P<q>[\"'])(?P<v1>[^\"'\n]{{4,}})(?P=q)"
    rf"|=(?P<v2>{_VALUE}{{4,}}+)(?![\w(\[])"
    rf"|[\"']?\s*:\s*[\"'](?P<v3>[^\"'\n]{{4,}})[\"']"
    rf"|:[ \t]+(?P<v4>{_VALUE}{{4,}}+)[ \t]*$",
    re.MULTILINE,
)
# Values that are references or placeholders, not secrets.
_NOT_SECRET = re.compile(
    r"(?:\$|\[REDACTED|os\.|process\.env|env\.|getenv|<|\*{3,}|(?i:none|null|true|false)$)"
)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _find_specific(text: str) -> list[tuple[int, int, str]]:
    spans = []
    pos = 0
    while (hit := _TRIGGER.search(text, pos)) is not None:
        start = hit.start()
        pos = start + 1
        for kind, pattern, group in _COMPILED:
            match = pattern.match(text, start)
            if match is not None:
                spans.append((*match.span(group), kind))
                pos = max(pos, match.end())
                break
    return spans


def _find_assignments(text: str) -> list[tuple[int, int, str]]:
    lower = text.lower()
    if len(lower) != len(text):  # a few non-ASCII characters change length when lowered
        lower = text.translate(_ASCII_LOWER)
    spans = []
    for hit in _KEYWORD.finditer(lower):
        if hit.group(0) == "key" and not _KEY_QUALIFIER.search(lower, max(0, hit.start() - 12), hit.start()):
            continue
        match = _AFTER_KEY.match(text, hit.end())
        if match is None:
            continue
        name = next(n for n in ("v1", "v2", "v3", "v4") if match.group(n) is not None)
        start, end = match.span(name)
        if not _NOT_SECRET.match(text, start, end):
            spans.append((start, end, "assignment"))
    return spans


def redact_text(text: str) -> tuple[str, dict[str, int]]:
    """Return `text` with secrets replaced and the number of replacements per kind."""
    if not text:
        return text, {}
    # A specific kind wins over "assignment" for the same secret (OPENAI_API_KEY=sk-... is an openai_key).
    spans = sorted(_find_specific(text) + _find_assignments(text), key=lambda s: (s[0], s[2] == "assignment"))
    if not spans:
        return text, {}
    counts: Counter = Counter()
    pieces: list[str] = []
    done = 0
    for start, end, kind in spans:
        if start < done or text.startswith("[REDACTED", start):
            continue  # overlaps a replacement already made, or already redacted
        pieces.append(text[done:start])
        pieces.append(MARK.format(kind))
        counts[kind] += 1
        done = end
    pieces.append(text[done:])
    return "".join(pieces), dict(counts)


def merge_counts(*counts: dict[str, int]) -> dict[str, int]:
    """Sum several per-kind count dicts."""
    total: Counter = Counter()
    for item in counts:
        total.update(item)
    return dict(total)


def scrub(text: str, *secrets: str | None) -> str:
    """Remove known secrets (e.g. the configured API key) and anything key-shaped from a message."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[REDACTED:api_key]")
    return redact_text(text)[0]
