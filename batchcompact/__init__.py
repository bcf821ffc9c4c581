"""batchcompact: compact archived LLM coding-agent sessions in bulk."""

import os as _os

__version__ = "0.1.0"

# Offline rules (DESIGN.md): litellm must use its bundled price map and never fetch one at import.
# Set before anything could import litellm; a user's explicit setting wins.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
