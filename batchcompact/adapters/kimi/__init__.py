"""The code of the agent declared in `batchcompact/agents/kimi/`, reached only through its lazy references."""
