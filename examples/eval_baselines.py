"""Baseline summarizers for `batchcompact eval`: what a compaction scores when its summary says nothing.

    PYTHONPATH=examples batchcompact eval --existing SESSIONS --summarizer eval_baselines:empty_sentence

The floor of every recall column: what the kept messages (and, for a planned cut, the file tags that
`run` writes whatever the summary says) hold on their own.
"""


def empty_sentence(call):
    """One sentence that says nothing (`call` is the `SummaryCall`; it is ignored)."""
    return "Nothing to report."


def name_salad(call):
    """Every distinct word and name of the span (no sentences), in an order fixed by a hash, cut at the
    built-in summary's length for the same call: what a summary that lists names without choosing them
    keeps. A summarizer sees only the span, never the turns after it, so it cannot aim at hindsight
    probes; this one shows that stuffing names does not beat the baselines (tests/test_eval.py)."""
    import hashlib
    import json
    import re

    from batchcompact.summarize.builtin import summarize_offline

    words: dict[str, None] = {}
    for message in call.messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            text = block.get("text") if block.get("type") == "text" else json.dumps(block.get("arguments"))
            for word in re.findall(r"[\w./-]{3,}", str(text or "")):
                words.setdefault(word, None)
    shuffled = sorted(words, key=lambda w: hashlib.sha1(w.encode("utf-8", "surrogatepass")).hexdigest())
    return " ".join(shuffled)[: len(summarize_offline(call))]
