"""The code of the agent declared in `batchcompact/agents/devin/`, reached only through its lazy references."""
