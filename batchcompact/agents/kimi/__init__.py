"""Kimi: kimi-cli's `wire.jsonl` (`$KIMI_SHARE_DIR`, ccusage's `$KIMI_DATA_DIR`, or `~/.kimi`, its
`sessions/`) and Kimi Code's (`$KIMI_CODE_HOME` or `~/.kimi-code`, its `sessions/`). Report only
(report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="kimi",
    display_name="Kimi",
    places=(Place(env="KIMI_DATA_DIR", env_list=True),
            Place(defaults=("~/.kimi",), env="KIMI_SHARE_DIR"),
            Place(defaults=("~/.kimi-code",), env="KIMI_CODE_HOME")),
    detect_line="batchcompact.agents.kimi.report:sniff_kimi",
    files=(Files(("wire.jsonl",), under=("sessions",)),),
    homes=(".kimi-code",),
    usage="batchcompact.agents.kimi.report:extract_kimi",
)
