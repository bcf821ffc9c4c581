"""Redaction speed and coverage: our `redact_text` against Yelp's detect-secrets on the same text.

    .venv/bin/python bench/bench_redact.py [--mb 4] [--ds-kb 256]

The text is what prompts carry: the serialized conversations of the bundled samples and of the shared
fixtures (../shared/fixtures), repeated up to --mb megabytes, with the planted secrets of
tests/test_redact.py mixed in. detect-secrets (`pip install detect-secrets`, not a dependency) is measured
on the first --ds-kb kilobytes only (it is slow), line by line with all its default plugins, and on the
planted secrets: which does each catch? Prints `FIGURE` lines; takes well under a minute.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
from batchcompact.summarize.redact import redact_text  # noqa: E402
from bench.figures import emit  # noqa: E402


def conversation_text(limit: int) -> str:
    """Serialized conversations (what a summary prompt carries) from the samples and fixtures."""
    from batchcompact.core.context import build_session_context, convert_to_llm
    from batchcompact.core.serialize import serialize_conversation
    from batchcompact.formats.detect import read_session

    parts: list[str] = []
    size = 0
    roots = [REPO / "sample_sessions", REPO.parent / "shared" / "fixtures"]
    for root in roots:
        for path in sorted(root.rglob("*.jsonl")) if root.is_dir() else []:
            session = read_session(path)
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


def planted() -> dict[str, str]:
    """One line per secret kind the redaction must catch (the issue's cases and the test file's)."""
    import test_redact as t

    aws_id, aws_secret = t.AWS_ID, t.AWS_SECRET
    return {
        "openai key": f"OPENAI_API_KEY={t.OPENAI}",
        "anthropic key": f'key = "{t.ANTHROPIC}"',
        "github token": f"token {t.GITHUB}",
        "jwt": f"cookie {t.JWT}",
        "private key": t.PEM,
        "connection string": "DATABASE_URL=postgres://appuser:S3cr3tPassw0rd9@db.internal:5432/app",
        "url user info": "git clone https://deployer:hunter2hunter2@git.example.com/repo.git",
        "aws secret (assignment)": f"aws_secret_access_key = {aws_secret}",
        "aws secret (free text)": f"the id is {aws_id} and the secret {aws_secret} for prod",
        "password assignment": "db:\n  password: hunter2hunter2",
        "high entropy after name": 'SESSION_SIGNING_SECRET_VALUE: "q8Zr2LmX9vT4wK7pN1sB6yH3"',
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--ds-kb", type=float, default=256.0)
    parser.add_argument("--quick", action="store_true", help="1 MB of text, 64 KB for detect-secrets")
    args = parser.parse_args()
    if args.quick:
        args.mb, args.ds_kb = min(args.mb, 1.0), min(args.ds_kb, 64.0)

    text = conversation_text(int(args.mb * 1_000_000))
    secrets = planted()
    mixed = text + "\n" + "\n".join(secrets.values())
    start = time.perf_counter()
    out, counts = redact_text(mixed)
    ours = time.perf_counter() - start
    ours_mb_s = len(mixed) / ours / 1e6
    print(f"ours: {len(mixed) / 1e6:.1f} MB in {ours:.3f}s = {ours_mb_s:.1f} MB/s; "
          f"{sum(counts.values())} redactions {dict(sorted(counts.items()))}")
    ours_caught = {name: redact_text(line)[1] != {} for name, line in secrets.items()}

    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings
    except ImportError:
        print("detect-secrets is not installed: `pip install detect-secrets` to compare")
        emit("redact", "redact_text throughput", ours_mb_s, "MB/s")
        return 0
    sample = text[: int(args.ds_kb * 1000)]
    lines = sample.splitlines()
    with default_settings():
        start = time.perf_counter()
        findings = sum(len(list(scan_line(line))) for line in lines)
        theirs = time.perf_counter() - start
        ds_caught = {}
        for name, line in secrets.items():
            kinds = {s.type for part in line.splitlines() for s in scan_line(part)}
            # Its high-entropy plugins flag nearly every word: count only its specific detectors.
            ds_caught[name] = bool(kinds - {"Base64 High Entropy String", "Hex High Entropy String"})
    theirs_mb_s = len(sample) / theirs / 1e6
    ours_on_sample = sum(len(redact_text(line)[1]) for line in lines)
    print(f"detect-secrets: {len(sample) / 1e3:.0f} KB in {theirs:.2f}s = {theirs_mb_s:.3f} MB/s; "
          f"{findings} findings on ordinary conversation text (ours: {ours_on_sample} on the same lines)")
    print(f"{'planted secret':28} ours  detect-secrets (specific detectors)")
    for name in secrets:
        print(f"{name:28} {'yes' if ours_caught[name] else 'NO':5} {'yes' if ds_caught[name] else 'no'}")
    emit("redact", "redact_text throughput", ours_mb_s, "MB/s", "detect-secrets scan_line", theirs_mb_s)
    emit("redact", "planted kinds caught", sum(ours_caught.values()), "kinds", "detect-secrets",
         sum(ds_caught.values()), note=f"of {len(secrets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
