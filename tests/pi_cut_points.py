"""What pi's own `prepareCompaction` gives on the real pi fixtures: the table tests/test_planner.py holds our
planner to and tests/agents/pi/test_judge_pi.py checks against pi itself."""

from __future__ import annotations

# What pi 0.73.1's own `prepareCompaction` (FIX boundary, reference 3.3-3.4) gives on the real fixtures:
# tests/agents/pi/test_judge_pi.py runs it from the installed npm package with node (tests/agents/pi/pi_modules.mjs) and checks
# this table row for row. Columns: keep, first kept line, turn start line, split (pi makes two calls: a
# split turn with a non-empty prefix), messages summarized, prefix messages, tokens before, read files,
# modified files.
FIXTURE_TABLE = {
    "large-session.jsonl": [
        (2000, 1009, 988, True, 882, 21, 177657, 6, 23),
        (5000, 985, 980, True, 874, 5, 177657, 6, 23),
        (20000, 839, 836, True, 730, 3, 177657, 7, 20),
        (50000, 396, 389, True, 361, 7, 177657, 6, 15),
        (100000, 29, 26, True, 23, 3, 177657, 6, 1),
    ],
    "before-compaction.jsonl": [
        (2000, 1002, None, False, 444, 0, 180820, 2, 12),
        (5000, 1002, None, False, 444, 0, 180820, 2, 12),
        (20000, 948, 941, True, 383, 7, 180820, 2, 12),
        (50000, 792, 791, True, 233, 1, 180820, 1, 6),
        (100000, 692, 679, True, 126, 13, 180820, 0, 2),
    ],
}
