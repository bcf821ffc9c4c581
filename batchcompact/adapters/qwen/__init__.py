"""The code of the agent declared in `batchcompact/agents/qwen/`, reached only through its lazy references."""
