"""Redaction speed and coverage: our `redact_text` against Yelp's detect-secrets on the same text.

    .venv/bin/python bench/bench_redact.py [--mb 4] [--ds-kb 256]

The text is what prompts carry: the serialized conversations of the bundled samples and of the shared
fixtures (../shared/fixtures), repeated up to --mb megabytes, with secrets generated here (random values
in each provider's documented shape, not the ones in our tests) inserted at random lines. Our throughput
on the whole text is one figure; the side by side gives both redactors the same input, the first --ds-kb
kilobytes with every secret mixed in, line by line (as detect-secrets scans) with all of detect-secrets'
default plugins (`pip install detect-secrets`, not a dependency); and which secrets does each catch?
Times are medians of --runs runs. Prints `FIGURE` lines; takes well under a minute.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import statistics
import string
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from batchcompact.summarize.redact import redact_text  # noqa: E402
from bench.figures import emit  # noqa: E402


def conversation_text(limit: int) -> str:
    """Serialized conversations (what a summary prompt carries) from the samples and fixtures."""
    from batchcompact.core.context import build_session_context, convert_to_llm
    from batchcompact.core.serialize import serialize_conversation
    from batchcompact.errors import SessionReadError
    from batchcompact.formats.detect import read_session

    parts: list[str] = []
    size = 0
    roots = [REPO / "sample_sessions", REPO.parent / "shared" / "fixtures"]
    for root in roots:
        for path in sorted(root.rglob("*.jsonl")) if root.is_dir() else []:
            try:
                session = read_session(path)
            except SessionReadError:  # other agents' fixtures (usage reports only): not a transcript we read
                continue
            if not session.compactable:
                continue
            context = build_session_context(session.path_entries())
            text = serialize_conversation(convert_to_llm([m.message for m in context.messages]))
            parts.append(text)
            size += len(text)
    if not parts:
        raise SystemExit("no sessions found to build the text from")
    text = "\n".join(parts)
    while len(text) < limit:
        text += "\n" + text
    return text[:limit]


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def planted(seed: int = 2026) -> dict[str, str]:
    """One line per secret kind, generated here in each provider's documented shape (random values from a
    fixed seed: nothing taken from our own tests, so the patterns are not checked against themselves)."""
    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits
    b64 = alnum + "+/"
    url64 = alnum + "-_"

    def b64url(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")

    jwt = ".".join([b64url({"alg": "HS256", "typ": "JWT"}),
                    b64url({"sub": str(rng.randrange(10**9)), "name": "ops-bot", "iat": 1767225600}),
                    _pick(rng, url64, 43)])
    body = base64.b64encode(rng.randbytes(1190)).decode()
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body[i:i + 64] for i in range(0, len(body), 64)) \
        + "\n-----END RSA PRIVATE KEY-----"
    aws_id = "AKIA" + _pick(rng, string.ascii_uppercase + "234567", 16)
    aws_secret = _pick(rng, b64, 40)
    password = _pick(rng, alnum, 14)
    return {
        "openai project key": f"export OPENAI_API_KEY=sk-proj-{_pick(rng, url64, 156)}",
        "anthropic key": f'client = Anthropic(api_key="sk-ant-api03-{_pick(rng, url64, 93)}AA")',
        "github classic token": f"git remote set-url origin https://ghp_{_pick(rng, alnum, 36)}@github.com/acme/app",
        "github fine-grained token": f"GH_TOKEN=github_pat_{_pick(rng, alnum, 22)}_{_pick(rng, alnum, 59)}",
        "slack bot token": f"SLACK_BOT_TOKEN: xoxb-{rng.randrange(10**11, 10**12)}-{rng.randrange(10**12, 10**13)}-"
                           f"{_pick(rng, alnum, 24)}",
        "stripe secret key": f"stripe.api_key = 'sk_live_{_pick(rng, alnum, 99)}'",
        "google api key": f"https://maps.googleapis.com/maps/api/geocode/json?key=AIza{_pick(rng, url64, 35)}",
        "jwt": f"Authorization: Bearer {jwt}",
        "private key": pem,
        "connection string": f"DATABASE_URL=postgres://app_{rng.randrange(100)}:{password}@db.internal:5432/app",
        "aws secret (assignment)": f"aws_secret_access_key = {aws_secret}",
        "aws secret (free text)": f"the id is {aws_id} and the secret {aws_secret} for prod",
        "password in yaml": f"db:\n  password: {_pick(rng, alnum, 12)}",
        "npm token": f"//registry.npmjs.org/:_authToken=npm_{_pick(rng, alnum, 36)}",
        "high entropy after a name": f'SESSION_SIGNING_SECRET_VALUE: "{_pick(rng, alnum, 32)}"',
    }


def mixed_lines(text: str, secrets: dict[str, str], seed: int = 7) -> list[str]:
    """The text's lines with every secret inserted at a random place (the input both redactors get)."""
    rng = random.Random(seed)
    lines = text.splitlines()
    for value in secrets.values():
        at = rng.randrange(len(lines) + 1)
        lines[at:at] = value.splitlines()
    return lines


def _median_seconds(func, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        func()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--ds-kb", type=float, default=256.0)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per figure (the median counts)")
    parser.add_argument("--quick", action="store_true", help="1 MB of text, 64 KB for the side by side")
    args = parser.parse_args()
    if args.quick:
        args.mb, args.ds_kb = min(args.mb, 1.0), min(args.ds_kb, 64.0)

    text = conversation_text(int(args.mb * 1_000_000))
    secrets = planted()
    whole = "\n".join(mixed_lines(text, secrets))
    ours = _median_seconds(lambda: redact_text(whole), args.runs)
    out, counts = redact_text(whole)
    ours_mb_s = len(whole) / ours / 1e6
    print(f"ours, whole text: {len(whole) / 1e6:.1f} MB in {ours:.3f}s = {ours_mb_s:.1f} MB/s; "
          f"{sum(counts.values())} redactions {dict(sorted(counts.items()))} (median of {args.runs})")
    emit("redact", f"redact_text, whole text ({len(whole) / 1e6:.0f} MB)", ours_mb_s, "MB/s", runs=args.runs)
    ours_caught = {name: redact_text(value)[1] != {} for name, value in secrets.items()}

    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        print("detect-secrets is not installed: `pip install detect-secrets` to compare")
        return 0
    # The side by side: the same lines (the first --ds-kb of the text, every secret mixed in) for both,
    # line by line, as detect-secrets scans.
    lines = mixed_lines(text[: int(args.ds_kb * 1000)], secrets)
    size = sum(len(line) + 1 for line in lines)
    ours_lines = _median_seconds(lambda: [redact_text(line) for line in lines], args.runs)
    with default_settings():
        theirs = _median_seconds(lambda: [list(scan_line(line)) for line in lines], args.runs)
        findings = sum(len(list(scan_line(line))) for line in lines)
        ds_caught = {}
        for name, value in secrets.items():
            kinds = {s.type for part in value.splitlines() for s in scan_line(part)}
            # Its high-entropy plugins flag nearly every word: count only its specific detectors.
            ds_caught[name] = bool(kinds - {"Base64 High Entropy String", "Hex High Entropy String"})
    ours_on_sample = sum(len(redact_text(line)[1]) for line in lines)
    print(f"same {len(lines)} lines ({size / 1e3:.0f} KB), line by line, medians of {args.runs}: ours "
          f"{ours_lines:.3f}s = {size / ours_lines / 1e6:.2f} MB/s, {ours_on_sample} lines with findings; "
          f"detect-secrets {theirs:.2f}s = {size / theirs / 1e6:.3f} MB/s, {findings} findings")
    print(f"{'generated secret':28} ours  detect-secrets (specific detectors)")
    for name in secrets:
        print(f"{name:28} {'yes' if ours_caught[name] else 'NO':5} {'yes' if ds_caught[name] else 'no'}")
    emit("redact", f"redact_text, line by line ({size / 1e3:.0f} KB)", size / ours_lines / 1e6, "MB/s",
         "detect-secrets scan_line, same lines", size / theirs / 1e6, runs=args.runs)
    emit("redact", "generated secret kinds caught", sum(ours_caught.values()), "kinds", "detect-secrets",
         sum(ds_caught.values()), note=f"of {len(secrets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
