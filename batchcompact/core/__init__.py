"""The pure core: session model, tokens, cut points, planning, prompts, apply.

Nothing here imports litellm, pyarrow, polars, click, asyncio or tiktoken, and nothing does I/O.
"""
