"""The code of the agent declared in `batchcompact/agents/openclaw/`, reached only through its lazy references."""
