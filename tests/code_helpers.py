"""Helpers only the tests use, moved out of the package (#58: no function of batchcompact/ is named only by
tests; tests/test_dead_code.py holds it so)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from batchcompact.core.entries import Entry
from batchcompact.core.tree import SessionTree


def common_ancestor(tree: SessionTree, a: Entry | str, b: Entry | str) -> Entry | None:
    """The deepest entry on both paths of `tree`, or None when they share no entry."""
    on_b = {id(e) for e in tree.path(b)}
    ancestor = None
    for entry in tree.path(a):
        if id(entry) not in on_b:
            break
        ancestor = entry
    return ancestor


def unwrap(summarizer: Any) -> Any:
    """The innermost summarizer of the pipeline's wrappers (each keeps the one it wraps as `inner`)."""
    while hasattr(summarizer, "inner"):
        summarizer = summarizer.inner
    return summarizer


def source_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files a report reads under `paths`, as found (`report.files.iter_resolved`'s first column)."""
    from batchcompact.report.files import iter_resolved

    return [file for file, _ in iter_resolved(paths)]


def written_entry_problems(obj: Any) -> list[str]:
    """Problems of an entry batchcompact is about to write, against pi's stricter written schema."""
    from batchcompact.adapters.pi.schema import WRITTEN_ENTRY_SCHEMA
    from batchcompact.schemas import file_checker

    return file_checker(WRITTEN_ENTRY_SCHEMA).errors(obj, "entry")
