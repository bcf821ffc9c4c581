"""The code of the agent declared in `batchcompact/agents/zcode/`, reached only through its lazy references."""
