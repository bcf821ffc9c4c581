"""The one place litellm is imported: once, offline (`LITELLM_LOCAL_MODEL_COST_MAP=True` first, so no
price-map download) and quiet. Callers import it on first use, never at module import."""

from __future__ import annotations

import logging
import os
from types import ModuleType

# litellm ships no annotations (pyproject's [tool.mypy]): what it gives is untyped, each caller narrows it
_litellm: ModuleType | None = None


def import_litellm() -> ModuleType:
    """Import litellm once, offline and quiet."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on every error
        litellm.telemetry = False
        # Their debug logs can carry request headers; -vv must not put an API key on stderr. litellm's own
        # warnings (e.g. its logging worker moving between event loops after --check) are not the user's.
        for name in ("openai", "httpx", "httpcore"):
            logging.getLogger(name).setLevel(logging.WARNING)
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logging.getLogger(name).setLevel(logging.ERROR)
        _litellm = litellm
    return _litellm
