"""The code of the agent declared in `batchcompact/agents/goose/`, reached only through its lazy references."""
