"""Secret redaction for prompts before they leave the machine.

`redact_text(text)` replaces likely secrets with `[REDACTED:<kind>]` and returns the new text and a count
per kind. Invariants:
- patterns are compiled once at import;
- redacting already-redacted text changes nothing (idempotent);
- only the secret is replaced, so `Authorization: Bearer [REDACTED:bearer_token]` keeps its context;
- the text is scanned once by a case-sensitive trigger regex of literal prefixes (Python's `re` is ~10x
  slower with IGNORECASE or nested alternatives, ~20x with an alternative that starts with a character
  class); each detailed pattern is only tried at a trigger hit.

Kinds (the categories of Yelp's detect-secrets 1.5.0, ported: its own scanner ran at ~0.2 MB/s on prompt
text with dozens of false positives per line, see bench/bench_redact.py): provider keys (OpenAI,
Anthropic, Google, GitHub, GitLab, Slack, Stripe, SendGrid, npm, PyPI, Hugging Face, Square, Twilio), AWS
access keys and secret keys (after `aws_secret_access_key`, or any 40-character key near an AKIA/ASIA id),
Azure storage account keys, private key blocks, JWTs, bearer and basic auth headers, credentials in URLs
of any scheme (`postgres://user:PASSWORD@host`, `https://user:TOKEN@host`), values assigned to secret
names (`password=`, `SECRET_KEY: `), and high-entropy values assigned to names that merely contain a
secret-like word (`SECRET_KEY_BASE=`, `db_password_prod:`, `auth_header =`).
"""

from __future__ import annotations

import base64
import binascii
import math
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
    ("basic_auth", r"Basic\s+([A-Za-z0-9+/]{8,}+={0,2})(?![A-Za-z0-9+/=])", 1),
    ("stripe_key", r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{24,}+", 0),
    ("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", 0),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}", 0),
    ("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}+", 0),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}+", 0),
    ("square_token", r"sq0(?:csp|atp)-[0-9A-Za-z_\-]{22,}+", 0),
    ("twilio_key", r"\b(?:AC|SK)[0-9a-f]{32}\b", 0),
    ("azure_storage_key", r"AccountKey=([A-Za-z0-9+/]{40,}+={0,2})", 1),
    # URL user info, any scheme: scheme://user:PASSWORD@host, or scheme://TOKEN@host (a long one only)
    ("url_credentials", r"://[^\s/?#@:\"'<>{}\[\]]{0,256}+:([^\s/?#@\"'<>{}\[\]]{1,256}+)@", 1),
    ("url_credentials", r"://([A-Za-z0-9_\-.~%]{20,256}+)@", 1),
]
_COMPILED = [(kind, re.compile(pattern), group) for kind, pattern, group in _SPECS]
# Case-sensitive literal prefixes: Python's `re` is ~10x slower with IGNORECASE or nested alternatives.
_TRIGGER = re.compile(
    r"-----BEGIN|sk-|AIza|AKIA|ASIA|aws|AWS|Aws|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|eyJ|bearer|Bearer|BEARER"
    r"|Basic|sk_live_|rk_live_|sk_test_|rk_test_|SG\.|npm_|pypi-|hf_|sq0|AC[0-9a-f]|SK[0-9a-f]|AccountKey=|://"
)
# Kinds that may cover a more specific secret (the password of a URL may be a GitLab token): they lose
# ties, and scanning continues inside them.
_GENERIC = {"url_credentials": 1, "assignment": 2, "high_entropy": 3}
# A 40-character AWS secret access key written in free text within this many characters of its key id.
_AWS_NEAR = 300
_AWS_SECRET_FREE = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# `key=value` style assignments, found on the ASCII-lowercased text by the keyword that ENDS the key
# ("contextTokens" is a count, not a secret). Only the value is replaced:
# key = "value" (code, shell) | KEY=value (env, URL, CLI; no spaces, not a call) | "key": "value" (JSON)
# | key: value at the end of a line (YAML).
# The keyword, then the rest of the name: a keyword that ends the name takes any value ("strong" words),
# one inside a name ("secret_key_base", "auth_header") or a weak word ("pwd", "auth") only a random one.
_KEYWORD = re.compile(r"(pass(?:word|wd|phrase)|secret|token|key|pwd|auth|credentials?)(?=([a-z0-9_\-.]*))")
_STRONG = {"password", "passwd", "passphrase", "secret", "token", "key"}
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
            if match is None or not _plausible(kind, match.group(group)):
                continue
            spans.append((*match.span(group), kind))
            if kind == "aws_access_key":
                spans.extend(_aws_secrets_near(text, match.start(), match.end()))
            if kind not in _GENERIC:
                pos = max(pos, match.end())
            break
    return spans


def _plausible(kind: str, value: str) -> bool:
    """Checks a pattern cannot express: a Basic header decodes to user:password, a URL password is no
    placeholder."""
    if kind == "basic_auth":
        try:
            return b":" in base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        except (binascii.Error, ValueError):
            return False
    if kind == "url_credentials":
        return not _NOT_SECRET.match(value)
    return True


def _aws_secrets_near(text: str, start: int, end: int) -> list[tuple[int, int, str]]:
    """40-character secret keys written near an access key id, in any wording ("and the secret is ...")."""
    spans = []
    for match in _AWS_SECRET_FREE.finditer(text, max(0, start - _AWS_NEAR), end + _AWS_NEAR):
        value = match.group(0)
        if _classes(value) >= 3 and not _HEX.fullmatch(value):  # random base64, not a git sha or a word
            spans.append((match.start(), match.end(), "aws_secret_key"))
    return spans


_HEX = re.compile(r"[0-9a-fA-F]+")


def _classes(value: str) -> int:
    """How many of lower case, upper case, digits, symbols `value` mixes."""
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def high_entropy(value: str) -> bool:
    """A random-looking token: long, no spaces, mixed character classes, and high Shannon entropy
    (detect-secrets' limits: 4.5 bits for base64-like text, 3.0 for hex; shorter values get a lower bar
    because a 20-character string cannot reach 4.5)."""
    if len(value) < 16 or " " in value:
        return False
    if _HEX.fullmatch(value):
        return len(value) >= 20 and _entropy(value) >= 3.0
    if _classes(value) < 2 or value.count("/") >= 2 and _classes(value.replace("/", "")) < 3:
        return False  # words and paths
    return _entropy(value) >= min(4.5, math.log2(len(value)) - 0.7)


def _find_assignments(text: str) -> list[tuple[int, int, str]]:
    lower = text.lower()
    if len(lower) != len(text):  # a few non-ASCII characters change length when lowered
        lower = text.translate(_ASCII_LOWER)
    spans = []
    for hit in _KEYWORD.finditer(lower):
        word, rest = hit.group(1), hit.group(2)
        if word == "key" and not _KEY_QUALIFIER.search(lower, max(0, hit.start() - 12), hit.start()):
            continue
        match = _AFTER_KEY.match(text, hit.end() + len(rest))
        if match is None:
            continue
        name = next(n for n in ("v1", "v2", "v3", "v4") if match.group(n) is not None)
        start, end = match.span(name)
        if _NOT_SECRET.match(text, start, end):
            continue
        if not rest and word in _STRONG:
            spans.append((start, end, "assignment"))
        elif high_entropy(text[start:end]):
            spans.append((start, end, "high_entropy"))
    return spans


def redact_text(text: str) -> tuple[str, dict[str, int]]:
    """Return `text` with secrets replaced and the number of replacements per kind."""
    if not text:
        return text, {}
    # A specific kind wins over a generic one for the same secret (OPENAI_API_KEY=sk-... is an openai_key).
    spans = sorted(_find_specific(text) + _find_assignments(text), key=lambda s: (s[0], _GENERIC.get(s[2], 0)))
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
