"""The code of the agent declared in `batchcompact/agents/copilot/`, reached only through its lazy references."""
