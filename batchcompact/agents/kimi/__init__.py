"""Kimi: kimi-cli's `$KIMI_DATA_DIR` (or its own `$KIMI_SHARE_DIR`) or `~/.kimi`, and Kimi Code's
`$KIMI_CODE_HOME` or `~/.kimi-code`; the `wire.jsonl` files in their `sessions/`. Report only (report.py; its line rule in detect.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="kimi",
    display_name="Kimi",
    places=(
        Place(defaults=("~/.kimi",), env="KIMI_DATA_DIR", env_fallback="KIMI_SHARE_DIR", env_list=True),
        Place(defaults=("~/.kimi-code",), env="KIMI_CODE_HOME", env_list=True),
    ),
    detect_line="batchcompact.agents.kimi.detect:sniff_kimi",
    files=(Files(("wire.jsonl",), under=("sessions",)),),
    homes=(".kimi-code",),
    usage="batchcompact.adapters.kimi.report:extract_kimi",
)
