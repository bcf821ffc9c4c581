"""GitHub Copilot CLI: `$COPILOT_HOME` or `~/.copilot`, its `session-state/<id>/events.jsonl` event logs
(compacted: reader `read.py`, writer `write.py`) and `otel/` (the OpenTelemetry file export), plus the
file `$COPILOT_OTEL_FILE_EXPORTER_PATH` (usage only). Line rules `detect.py`, usage `report.py`; the
trigger is `trigger.py`."""

from __future__ import annotations

from batchcompact.agents.spec import Agent, Place

AGENT = Agent(
    name="copilot",
    display_name="GitHub Copilot CLI",
    provider="github-copilot",
    places=(
        Place(defaults=("~/.copilot",), env="COPILOT_HOME", env_list=True, sessions=("otel", "session-state")),
        Place(env="COPILOT_OTEL_FILE_EXPORTER_PATH", sessions=("",)),  # a file, read besides the folders
    ),
    detect_line="batchcompact.agents.copilot.detect:detect_line",
    homes=(".copilot",),
    reader="batchcompact.adapters.copilot.read:read",
    writer="batchcompact.adapters.copilot.write",
    usage="batchcompact.adapters.copilot.report:extract_copilot",
    file_tools={"view": ("read", ("path",)), "create": ("write", ("path",)), "edit": ("edit", ("path",))},
    tools={
        "view": "read",
        "create": "write",
        "edit": "edit",
        "bash": "command",
        "task": "delegate",
    },
    trigger="batchcompact.adapters.copilot.trigger:copilot_trigger",
    presets={
        # Copilot CLI compacts in the background at 80% of the model's prompt limit (its own rule, the
        # default) and summarizes the whole history, so the kept tail is batchcompact's default.
        "copilot-cli": {"keep_recent_tokens": 20000},
    },
)
