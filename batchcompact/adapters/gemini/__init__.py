"""The code of the agent declared in `batchcompact/agents/gemini/`, reached only through its lazy references."""
