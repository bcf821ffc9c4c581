"""The code of the agent declared in `batchcompact/agents/codex/`, reached only through its lazy references."""
