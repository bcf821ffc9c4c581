"""The code of the agent declared in `batchcompact/agents/claude/`, reached only through its lazy references."""
