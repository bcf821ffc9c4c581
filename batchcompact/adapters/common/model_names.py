"""Model ids as agents write them -> the ids the price map knows (for the agents whose names differ).

Copilot and Droid name the Claude 4.0 models without their snapshot date (`claude-sonnet-4`), which
the price map lists only with it; Droid adds a `-thinking` variant and Copilot `-internal` deployments of
public models, and Grok Build its `-build` models, priced as the model itself. Everything else is returned unchanged (the price table's own
resolution handles provider prefixes, dates and dotted Claude versions).
"""

from __future__ import annotations

UNDATED_CLAUDE = {
    "claude-sonnet-4": "claude-sonnet-4-20250514",
    "claude-opus-4": "claude-opus-4-20250514",
    "claude-opus-4-1": "claude-opus-4-1-20250805",
}
DEPLOYMENT_SUFFIXES = ("-1m-internal", "-internal")


def price_name(model: str | None) -> str | None:
    """The priced id for `model` (see the module docstring); None stays None."""
    if not model:
        return model
    for suffix in DEPLOYMENT_SUFFIXES:
        model = model.removesuffix(suffix)
    if model.startswith("grok-"):  # Grok Build's own deployment of a public Grok model
        model = model.removesuffix("-build")
    if model.startswith("claude-"):
        model = model.removesuffix("-thinking").replace(".", "-")
    return UNDATED_CLAUDE.get(model, model)
