"""Secret redaction: realistic secrets in tool outputs, no false positives on ordinary code."""

from __future__ import annotations

import pytest
from fake_secrets import (
    ANTHROPIC,
    AWS_ID,
    AWS_SECRET,
    GITHUB,
    GITHUB_PAT,
    GITLAB,
    GOOGLE,
    JWT,
    OPENAI,
    OPENAI_OLD,
    PEM,
    SLACK,
)

from batchcompact.summarize.redact import redact_text, scrub

TOOL_OUTPUT = f"""$ cat .env
OPENAI_API_KEY={OPENAI}
ANTHROPIC_API_KEY="{ANTHROPIC}"
GOOGLE_API_KEY={GOOGLE}
AWS_ACCESS_KEY_ID={AWS_ID}
AWS_SECRET_ACCESS_KEY={AWS_SECRET}
GITHUB_TOKEN={GITHUB}
DATABASE_PASSWORD=correct-horse-battery
$ curl -H "Authorization: Bearer {JWT}" https://api.example.com
$ git remote -v
origin https://oauth2:{GITLAB}@gitlab.example.com/team/repo.git
config.json: {{"slack": "{SLACK}", "password": "s3cr3t-Pa55"}}
{PEM}
token: {GITHUB_PAT}
client = OpenAI(api_key="{OPENAI_OLD}")
"""

SECRETS = [
    OPENAI,
    OPENAI_OLD,
    ANTHROPIC,
    GOOGLE,
    AWS_ID,
    AWS_SECRET,
    GITHUB,
    GITHUB_PAT,
    GITLAB,
    SLACK,
    JWT,
    "correct-horse-battery",
    "s3cr3t-Pa55",
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
]


def test_every_secret_in_tool_output_is_redacted():
    out, counts = redact_text(TOOL_OUTPUT)
    for secret in SECRETS:
        assert secret not in out, secret
    assert counts == {
        "openai_key": 2,
        "anthropic_key": 1,
        "google_api_key": 1,
        "aws_access_key": 1,
        "aws_secret_key": 1,
        "github_token": 2,
        "assignment": 2,
        "bearer_token": 1,
        "gitlab_token": 1,
        "slack_token": 1,
        "private_key": 1,
    }
    assert "OPENAI_API_KEY=[REDACTED:openai_key]" in out
    assert "Authorization: Bearer [REDACTED:bearer_token]" in out
    assert "https://oauth2:[REDACTED:gitlab_token]@gitlab.example.com" in out
    assert "$ git remote -v" in out  # context is kept


def test_idempotent():
    once, _ = redact_text(TOOL_OUTPUT)
    twice, counts = redact_text(once)
    assert twice == once and counts == {}


@pytest.mark.parametrize(
    "text",
    [
        "const contextTokens = calculateContextTokens(lastAssistant.usage);",
        "apiKey = await getApiKey(provider)",
        "def login(password: str, token=None) -> bool:",
        "totalTokens = totalInput + totalOutput",
        "if (!apiKey) throw new Error('missing key')",
        "password=$DB_PASSWORD",
        'api_key=os.environ["OPENAI_API_KEY"]',
        "the sk-test key is too short to be a real key",
        "Bearer tokens are described in RFC 6750",
        "AKIA is the prefix of AWS access keys",
    ],
)
def test_no_false_positives(text):
    assert redact_text(text) == (text, {})


@pytest.mark.parametrize(
    "text,kind",
    [
        ("export SECRET_KEY=9f8e7d6c5b4a", "assignment"),
        ("db:\n  password: hunter2hunter2\n", "assignment"),
        ("mysql://u?password=pa55word&x=1", "assignment"),
        ("curl -H 'Authorization: Bearer abcdef0123456789abcdef'", "bearer_token"),
        ("key ASIAZ7QW3ERT5YUI9OPA in a log", "aws_access_key"),
        ("xoxp-1234567890-abcdefghij", "slack_token"),
        ("gho_" + "a" * 36, "github_token"),
    ],
)
def test_kinds(text, kind):
    out, counts = redact_text(text)
    assert counts == {kind: 1}
    assert f"[REDACTED:{kind}]" in out


def test_non_ascii_text_keeps_offsets():
    text = "İstanbul ünïcode ß — " + f"token={GITHUB}" + " 🙂 done"
    out, counts = redact_text(text)
    assert out == "İstanbul ünïcode ß — token=[REDACTED:github_token] 🙂 done"
    assert counts == {"github_token": 1}


def test_scrub_removes_the_configured_key_and_key_shaped_text():
    message = f"Incorrect API key provided: my-custom-key-123. Also {OPENAI}"
    out = scrub(message, "my-custom-key-123")
    assert "my-custom-key-123" not in out and OPENAI not in out


def test_large_text_is_handled():
    text = ("ordinary log line with numbers 12345 and words\n" * 20000) + TOOL_OUTPUT
    out, counts = redact_text(text)
    assert sum(counts.values()) == 14
    assert OPENAI not in out


@pytest.mark.parametrize(
    "text,secret,kind",
    [
        ("DATABASE_URL=postgres://appuser:S3cr3tPassw0rd9@db.internal:5432/app", "S3cr3tPassw0rd9",
         "url_credentials"),
        ("git clone https://deployer:hunter2hunter2@git.example.com/r.git", "hunter2hunter2", "url_credentials"),
        ("mongodb+srv://admin:Pa55w0rdXyz@cluster0.example.net/db", "Pa55w0rdXyz", "url_credentials"),
        ("redis://:r3d1sPa55@cache:6379/0", "r3d1sPa55", "url_credentials"),
        (f"the id is {AWS_ID} and the secret {AWS_SECRET} for prod", AWS_SECRET, "aws_secret_key"),
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "aws_secret_key"),
        ('SESSION_SIGNING_SECRET_VALUE: "q8Zr2LmX9vT4wK7pN1sB6yH3"', "q8Zr2LmX9vT4wK7pN1sB6yH3", "high_entropy"),
        ("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy", "basic_auth"),
        ("Server=db;User Id=sa;Password=Sup3rS3cret!;", "Sup3rS3cret!", "assignment"),
    ],
)
def test_connection_strings_aws_free_text_and_high_entropy(text, secret, kind):
    out, counts = redact_text(text)
    assert secret not in out
    assert counts.get(kind, 0) >= 1, counts


@pytest.mark.parametrize(
    "text",
    [
        "postgres://user:${DB_PASSWORD}@localhost/app",
        "https://github.com/owner/repo.git and http://localhost:8000/v1",
        "Basic authentication is described in RFC 7617",
        "max_tokens = 4096",
        "tokenizer_path = '/home/user/models/tokenizer.json'",
        "author = 'John Smith'",
        "PWD=/home/user/project",
        "commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b near AKIA",
    ],
)
def test_no_false_positives_for_urls_paths_and_names(text):
    assert redact_text(text) == (text, {})
