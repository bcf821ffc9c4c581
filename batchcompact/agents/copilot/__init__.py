"""GitHub Copilot CLI: `$COPILOT_HOME` or `~/.copilot`, its `otel/` (the OpenTelemetry file export) and
`session-state/` event logs, and the file `$COPILOT_OTEL_FILE_EXPORTER_PATH`. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="copilot",
    display_name="GitHub Copilot CLI",
    places=(
        Place(defaults=("~/.copilot",), env="COPILOT_HOME", env_list=True, sessions=("otel", "session-state")),
        Place(env="COPILOT_OTEL_FILE_EXPORTER_PATH", sessions=("",)),  # a file, read besides the folders
    ),
    detect_line="batchcompact.agents.copilot.report:sniff_copilot",
    homes=(".copilot",),
    usage="batchcompact.agents.copilot.report:extract_copilot",
)
