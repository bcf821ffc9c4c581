"""What every session file shares, whoever wrote it: JSON lines read with line numbers and a size cap
(`jsonl.py`), zstd-compressed transcripts (`compressed.py`), the scan that finds session files (`scan.py`) and
the detection of which agent wrote one (`detect.py`). Each agent's reader and writer are in
`batchcompact/adapters/<name>/` (docs/architecture.md, "One registration and one adapter folder per agent")."""
