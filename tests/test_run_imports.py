"""What a `run` with the built-in summarizer loads (docs/performance.md, issue 28): not the model-only
machinery (the summary pool and asyncio, the batch buyer, custom summarizers), and pyarrow without numpy in
the command line's own process, which changes no byte of the report (pipeline/runreport/write.py
`import_pyarrow`). Each check runs in a fresh interpreter: this process has imported everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import SAMPLES

MODEL_ONLY = ("asyncio", "batchcompact.summarize.pool", "batchcompact.summarize.custom",
              "batchcompact.pipeline.batch", "batchcompact.summarize.litellm_summarizer", "litellm")


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          env=None if env is None else {**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_builtin_run_from_the_command_line_loads_no_model_machinery_and_pyarrow_without_numpy(tmp_path):
    out, reports = tmp_path / "out", tmp_path / "reports"
    code = (
        "import atexit, json, sys\n"
        "from batchcompact.cli import main\n"
        "from batchcompact import tokenizer\n"
        "atexit.register(lambda: print(json.dumps([sorted(m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'numpy', 'pyarrow', 'litellm', 'batchcompact')), tokenizer._encoding.cache_info().currsize])))\n"
        "sys.argv = ['batchcompact', '-q', *sys.argv[1:]]\n"
        "main()\n"
    )
    # no token count cache yet (a first run): every count is made, so the tokenizer is loaded here before
    # the workers are forked (they share it), as `plan` does
    counts = {"BATCHCOMPACT_TOKEN_CACHE": str(tmp_path / "counts.sqlite")}
    modules, encodings = json.loads(_python(code, "run", str(SAMPLES / "pi"), "--output-dir", str(out), "--min-age",
                                            "0", "--force", "--jobs", "2", "--report-dir", str(reports), env=counts))
    loaded = set(modules)
    assert not loaded & set(MODEL_ONLY), sorted(loaded & set(MODEL_ONLY))
    assert encodings == 1
    assert "pyarrow.parquet" in loaded and not any(m.split(".")[0] == "numpy" for m in loaded)
    assert any(out.rglob("*.jsonl")), "the run compacted nothing: the check above proves nothing"
    report = next(reports.glob("compactions-*.parquet"))
    rows = _python("import sys, pyarrow.parquet as pq; print(pq.read_table(sys.argv[1]).num_rows)", str(report))
    assert int(rows) > 0


_WRITE = (
    "import sys\n"
    "from datetime import UTC, datetime\n"
    "from pathlib import Path\n"
    "from batchcompact import lifecycle\n"
    "from batchcompact.pipeline.runreport.schema import empty_row\n"
    "from batchcompact.pipeline.runreport.write import write_compactions\n"
    "if sys.argv[2] == 'command':\n"
    "    lifecycle.mark_command_process()\n"
    "rows = []\n"
    "for i in range(5):\n"
    "    row = empty_row()\n"
    "    row.update(run_id='r', started_at=datetime(2026, 1, 2, tzinfo=UTC), input_path=f'/a/{i}.jsonl',\n"
    "               status='compacted', entries=i, tokens_before=1000 * i, cost_usd=0.25 * i, latency_s=0.5,\n"
    "               redaction_kinds=[{'kind': 'key', 'count': i}],\n"
    "               written_entries=[{'entry_id': 'e', 'kind': 'compaction', 'input': 1, 'output': 2,\n"
    "                                 'cache_read': 0, 'cache_write': 0, 'cost_usd': 0.0}])\n"
    "    rows.append(row)\n"
    "write_compactions(rows, Path(sys.argv[1]), 'r')\n"
    "print('numpy' in sys.modules)\n"
    "import numpy\n"  # the stand-in that kept numpy out is gone: a later import works
    "print(numpy.__name__)\n"
)


def test_the_report_is_the_same_bytes_with_pyarrow_loaded_without_numpy(tmp_path):
    """The command line's process loads pyarrow as if numpy were missing; a library caller's process keeps
    pyarrow's numpy bridge. Both write byte-identical reports, and numpy stays importable afterwards."""
    command, library = tmp_path / "command", tmp_path / "library"
    assert _python(_WRITE, str(command), "command").split() == ["False", "numpy"]
    assert _python(_WRITE, str(library), "library").split() == ["True", "numpy"]
    name = "compactions-r.parquet"
    assert (command / name).read_bytes() == (library / name).read_bytes()


def test_run_options_need_no_pool_to_be_built():
    """The command line builds `PoolSettings` without importing the pool (summarize/pool_settings.py), and
    `batchcompact.summarize` still offers the pool's names on first use."""
    code = (
        "import sys\n"
        "from batchcompact.cli.summarize_options import pool_settings_from\n"
        "import batchcompact.summarize as s\n"
        "settings = pool_settings_from(concurrency=3, rpm=None, tpm=None, max_attempts=2, max_cost_usd=None,"
        " redact=True)\n"
        "assert settings.concurrency == 3\n"
        "assert 'batchcompact.summarize.pool' not in sys.modules and 'asyncio' not in sys.modules\n"
        "assert s.PoolSettings is type(settings)\n"
        "from batchcompact.summarize import run_jobs, SummaryJob, load_summarizer\n"
        "from batchcompact.summarize.pool import PoolSettings\n"
        "assert PoolSettings is type(settings) and callable(run_jobs) and callable(load_summarizer)\n"
        "try:\n"
        "    s.no_such_name\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    _python(code)

