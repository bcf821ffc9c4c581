"""The code of the agent declared in `batchcompact/agents/cline/`, reached only through its lazy references."""
