"""The code of the agent declared in `batchcompact/agents/hermes/`, reached only through its lazy references."""
