"""Baseline summarizers for `batchcompact eval`: what a compaction scores when its summary says nothing.

    PYTHONPATH=examples batchcompact eval --existing SESSIONS --summarizer eval_baselines:empty_sentence

The floor of every recall column: what the kept messages (and, for a planned cut, the file tags that
`run` writes whatever the summary says) hold on their own.
"""


def empty_sentence(call):
    """One sentence that says nothing (`call` is the `SummaryCall`; it is ignored)."""
    return "Nothing to report."
