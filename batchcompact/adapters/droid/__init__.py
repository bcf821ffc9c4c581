"""The code of the agent declared in `batchcompact/agents/droid/`, reached only through its lazy references."""
