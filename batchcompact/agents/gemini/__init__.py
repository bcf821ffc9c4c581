"""Gemini CLI: chat reader (`chat.py`), compaction writer and verify (`write.py`); the trigger rule is in
core/triggers.py, the tool table in summarize/builtin_facts.py and core/fileops.py."""
