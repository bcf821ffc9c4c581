"""A Grok Build CLI line (the rule `detect_line` names), importing nothing of the package."""

from __future__ import annotations


def sniff_grok(obj: dict, first: bool) -> bool:
    """A Grok session-update line (`_x.ai/session/update` with `params.update.sessionUpdate`)."""
    params = obj.get("params")
    return (isinstance(obj.get("method"), str) and obj["method"].startswith("_x.ai/")
            and isinstance(params, dict) and isinstance(params.get("update"), dict))
