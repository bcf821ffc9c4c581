"""The code of the agent declared in `batchcompact/agents/muse/`, reached only through its lazy references."""
