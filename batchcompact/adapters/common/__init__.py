"""The floor under every adapter (as ccusage's `common` crate under its adapters): what an agent's code shares
and may import besides `core/`, the registry, `formats/` and the base modules.

- `usage_rows.py`: the usage-row contract (`UsageRows`, `add_request`, the columns and their invariants, the dedupe keys);
- `lines.py`: JSON lines for usage readers (`iter_json_lines`, `ExtractStats`, numbers and times);
- `documents.py`: JSON documents and database tables read for usage, read-only;
- `settings_files.py`: an agent's own settings file as a JSON object, read again when it changes;
- `model_names.py`: model ids as agents write them -> the ids the price map knows;
- `verify.py`: the checks the appending writers' `verify` share;
- `files.py`: temp names, folders, backup names and `ChangedDuringRun`, shared with `pipeline/writer.py`;
- `database.py`: one SQLite session store (copy, backup, one transaction, re-read and verify before the commit).

Not an agent: no declaration points here, and it names no agent.
"""
