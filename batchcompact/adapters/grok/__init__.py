"""The code of the agent declared in `batchcompact/agents/grok/`, reached only through its lazy references."""
