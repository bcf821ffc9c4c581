"""OpenClaw: `$OPENCLAW_DIR` (ccusage's) or its own `$OPENCLAW_STATE_DIR`, else `~/.openclaw`, `~/.clawdbot`,
`~/.moltbot`, `~/.moldbot`: pi-format JSONL (and its `.reset.`/`.deleted.` archives) and
`openclaw-agent.sqlite` databases. Every JSONL file under those folders is OpenClaw's, never pi's.
Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

HOMES = (".openclaw", ".clawdbot", ".moltbot", ".moldbot")

AGENT = Agent(
    name="openclaw",
    display_name="OpenClaw",
    places=(Place(defaults=tuple(f"~/{name}" for name in HOMES), env="OPENCLAW_DIR",
                  env_fallback="OPENCLAW_STATE_DIR", env_list=True, sessions=("",)),),
    files=(Files(("*.jsonl.reset.*", "*.jsonl.deleted.*"), under=HOMES),
           Files(("openclaw-agent.sqlite",), sqlite=True)),
    homes=HOMES,
    usage="batchcompact.agents.openclaw.report:extract_openclaw",
)
