"""Cline: `$CLINE_HOME` or `~/.cline` (`data/sessions/<id>/<id>.messages.json`), and the VS Code extension's
`globalStorage/saoudrizwan.claude-dev`. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

_VSCODE = tuple(f"$XDG_CONFIG_HOME/{app}/User/globalStorage/saoudrizwan.claude-dev"
                for app in ("Code", "Code - Insiders", "VSCodium"))

AGENT = Agent(
    name="cline",
    display_name="Cline",
    places=(
        # The CLI (and the JetBrains plugin) keep their state in ~/.cline; its session transcripts are
        # under data/ (data/sessions/<id>/); a folder CLINE_HOME names is searched whole, as ccusage does.
        Place(defaults=("~/.cline",), env="CLINE_HOME", env_list=True, sessions=("data",), env_sessions=("",)),
        Place(defaults=_VSCODE, sessions=("",)),
    ),
    suffixes=(),
    files=(Files(("*.messages.json",)),),
    usage="batchcompact.adapters.cline.report:extract_cline",
)
