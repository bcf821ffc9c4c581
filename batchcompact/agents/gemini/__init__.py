"""Gemini CLI: its usage reader for the report (report.py)."""
