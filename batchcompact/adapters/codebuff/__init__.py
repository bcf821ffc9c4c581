"""The code of the agent declared in `batchcompact/agents/codebuff/`, reached only through its lazy references."""
