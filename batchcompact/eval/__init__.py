"""`batchcompact eval`: measure what a compaction keeps (docs/eval.md).

`cuts` finds the compactions to score, `probes` derives what the replaced span holds, `scoring` decides
what the compacted context kept, `judge` has a model answer and grade probe questions, `run` ties them
together for the command.
"""
