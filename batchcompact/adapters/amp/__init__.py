"""The code of the agent declared in `batchcompact/agents/amp/`, reached only through its lazy references."""
