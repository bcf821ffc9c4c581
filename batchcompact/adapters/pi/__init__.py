"""The code of the agent declared in `batchcompact/agents/pi/`, reached only through its lazy references."""
