"""The code of the agent declared in `batchcompact/agents/opencode/`, reached only through its lazy references."""
