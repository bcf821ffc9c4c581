"""The code of the agent declared in `batchcompact/agents/science/`, reached only through its lazy references."""
