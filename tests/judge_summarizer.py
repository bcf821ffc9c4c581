"""The agent judges' summarizer (`run --summarizer judge_summarizer:summarize`, tests/ on PYTHONPATH):
a summary the judge knows whole, written apart from batchcompact's own summarizers, so that a judge can
check that every character of it reached the agent's model. Imports nothing of batchcompact or the tests."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

LOG = "BATCHCOMPACT_JUDGE_SUMMARIES"  # the file each summary is appended to, one JSON string a line


def summarize(call: Any) -> str:
    """Several lines with markup, quotes, a backslash and non-ASCII text, unique per call (a digest of the
    prompt), appended to $BATCHCOMPACT_JUDGE_SUMMARIES."""
    digest = hashlib.sha256(call.user_prompt.encode()).hexdigest()[:12]
    text = (f"## Goal\nJudge summary {call.kind} {digest}: every line of it must reach the model.\n\n"
            "## Progress\n- read notes.txt, wrote hello.py, fixed the greeting \u2713\n"
            "- \u00abna\u00efve caf\u00e9\u00bb \u2014 \u65e5\u672c\u8a9e, <b>tags</b> & \"quotes\" \\ backslash\n\n"
            "## Next Steps\n1. keep going\n")
    with open(os.environ[LOG], "a", encoding="utf-8") as log:
        log.write(json.dumps(text) + "\n")
    return text
