"""The code of the agent declared in `batchcompact/agents/buzz/`, reached only through its lazy references."""
