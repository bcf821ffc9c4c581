"""The code of the agent declared in `batchcompact/agents/rovo/`, reached only through its lazy references."""
