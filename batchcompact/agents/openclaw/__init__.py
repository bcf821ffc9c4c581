"""OpenClaw: `$OPENCLAW_DIR` (ccusage's), OpenClaw's own `$OPENCLAW_STATE_DIR`, or `~/.openclaw` (and
`~/.clawdbot`, `~/.moltbot`, `~/.moldbot`): agent databases `agents/<id>/agent/openclaw-agent.sqlite` and
pi-format `agents/<id>/sessions/*.jsonl` with their `.reset.` / `.deleted.` archives. A pi-format file
under those folders is OpenClaw's, never also pi's. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

HOMES = (".openclaw", ".clawdbot", ".moltbot", ".moldbot")

AGENT = Agent(
    name="openclaw",
    display_name="OpenClaw",
    places=(Place(defaults=tuple(f"~/{name}" for name in HOMES), env="OPENCLAW_DIR", env_list=True, sessions=("",)),
            Place(env="OPENCLAW_STATE_DIR", sessions=("",))),
    files=(Files(("*.jsonl.reset.*", "*.jsonl.deleted.*"), under=HOMES),
           Files(("openclaw-agent.sqlite",), sqlite=True)),
    homes=HOMES,
    usage="batchcompact.agents.openclaw.report:extract_openclaw",
)
