"""GitHub Copilot CLI (npm @github/copilot): its OpenTelemetry file export (`~/.copilot/otel/*.jsonl`, the
file `$COPILOT_OTEL_FILE_EXPORTER_PATH`) and its session logs (`session-state/<id>/events.jsonl`), in
`$COPILOT_HOME` or `~/.copilot`. Report only (report.py)."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="copilot",
    display_name="GitHub Copilot CLI",
    places=(Place(defaults=("~/.copilot",), env="COPILOT_HOME", sessions=("otel", "session-state")),
            Place(env="COPILOT_OTEL_FILE_EXPORTER_PATH", sessions=("",))),
    detect_line="batchcompact.agents.copilot.report:sniff_copilot",
    homes=(".copilot",),
    usage="batchcompact.agents.copilot.report:extract_copilot",
)
