"""ZCode (Z.ai): `$ZCODE_HOME` or `~/.zcode`, its `cli/db/db.sqlite` (`model_usage`). Report only
(report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

AGENT = Agent(
    name="zcode",
    display_name="ZCode",
    places=(Place(defaults=("~/.zcode",), env="ZCODE_HOME", sessions=("cli/db",)),),
    suffixes=(),
    files=(Files(("db.sqlite",), under=("cli/db",), sqlite=True),),
    usage="batchcompact.adapters.zcode.report:extract_zcode",
)
