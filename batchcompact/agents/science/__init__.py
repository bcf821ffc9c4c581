"""Claude Science (Anthropic's research workbench, a desktop app): its metadata database
`operon-cli.db`, one per org (`~/.claude-science/cs-switch-proxy/orgs/<org>/`, `~/.claude-science/orgs/<org>/`,
or the folder itself; the pre-rename name `operon.db` too), under `~/.claude-science` and the other roots
ccusage looks in; `$CLAUDE_SCIENCE_DB` (comma-separated files) replaces them. Report only (report.py).

The name is `science`, not `claude-science`: no other agent's name starts with it, so it cannot be taken
for Claude Code's `claude` wherever a name is typed, matched or read (`--agent`, a row's `agent`, the
`claude:` dedupe keys)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Files, Place

DATABASES = ("operon-cli.db", "operon.db")

AGENT = Agent(
    name="science",
    display_name="Claude Science",
    places=(Place(defaults=("~/.claude-science", "$XDG_CONFIG_HOME/claude-science", "$XDG_CONFIG_HOME/Claude Science",
                            "$XDG_DATA_HOME/claude-science", "$XDG_DATA_HOME/Claude Science",
                            "~/Library/Application Support/Claude Science"),
                  env="CLAUDE_SCIENCE_DB", env_list=True, sessions=("cs-switch-proxy/orgs", "orgs"),
                  env_sessions=("",), files=DATABASES),),
    suffixes=(),
    files=(Files(DATABASES, sqlite=True),),
    # a database of another name (named in $CLAUDE_SCIENCE_DB or given as a path): by its `frames` table
    detect_file="batchcompact.adapters.science.report:detect_file",
    usage="batchcompact.adapters.science.report:extract_science",
    provider="anthropic",
)
