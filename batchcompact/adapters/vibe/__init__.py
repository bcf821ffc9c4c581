"""The code of the agent declared in `batchcompact/agents/vibe/`, reached only through its lazy references."""
