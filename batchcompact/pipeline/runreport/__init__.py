"""The run report, in one place: `compactions-<run_id>.parquet`, one row per session a `run` was given.

- `schema.py`: the columns (one versioned Arrow schema), an empty row, what makes a file a run report;
- `rows.py`: the run's rows as they are finished, in the order the sessions were found;
- `write.py`: the Parquet file, written atomically (pyarrow imported while workers plan, where it helps).

The report command reads these files back as batchcompact's own spend in `report/run_usage.py` (a layer
above: it builds the report's usage rows).
"""
