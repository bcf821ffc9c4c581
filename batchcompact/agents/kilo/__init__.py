"""Kilo (an OpenCode fork): its usage reader for the report is OpenCode's (agents/opencode/report.py)."""
