"""A GitHub Copilot CLI line: a session-state event `{type: "<area>.<name>", data, id, timestamp, parentId}`
(the first is `session.start` by `copilot-agent`), or a Copilot OpenTelemetry span or log (the file export)."""

from __future__ import annotations


def detect_line(obj: dict, first: bool) -> bool:
    kind, data = obj.get("type"), obj.get("data")
    if kind == "session.start" and isinstance(data, dict):
        return data.get("producer") == "copilot-agent"
    if isinstance(kind, str) and "." in kind and isinstance(data, dict) and isinstance(obj.get("id"), str) \
            and "parentId" in obj and "timestamp" in obj:
        return True  # an event of a log whose first lines were not probed (pi's types have no dot)
    attributes = obj.get("attributes")
    return isinstance(attributes, dict) and ("traceId" in obj or "hrTime" in obj) and any(
        key.startswith(("gen_ai.", "github.copilot")) for key in attributes)
