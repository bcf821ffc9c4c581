"""`run`'s first step: which of the files found are inputs, where each is written, what to sweep first."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from batchcompact.errors import UsageError
from batchcompact.formats.scan import ScanItem, resolved
from batchcompact.pipeline.writer import sweep_stale_temps

if TYPE_CHECKING:
    from batchcompact.pipeline.run_options import RunOptions

log = logging.getLogger("batchcompact.pipeline.run")  # the run's log lines, as before the phases had modules


def output_path(options: RunOptions, item: ScanItem) -> Path:
    """Where `item`'s compacted session goes: over the original (a symlink: the file it points to, the link
    kept) or under --output-dir at the path it has under its PATH."""
    if options.in_place:
        return Path(os.path.realpath(item.path))
    assert options.output_dir is not None
    return options.output_dir / item.relative


def check_targets(items: list[ScanItem], options: RunOptions) -> list[ScanItem]:
    """Refuse an --output-dir that would overwrite an original; leave out our own earlier outputs.

    With `--output-dir` inside the inputs (`run sessions --output-dir sessions/compacted`) a rerun finds the
    outputs of earlier runs: they are not inputs. Inputs named inside the output folder (`run archive/pi
    --output-dir archive`) are inputs all the same: only a file found under a PATH that holds the output
    folder is one.
    """
    if options.in_place or options.output_dir is None:
        return items
    out = options.output_dir.resolve()
    real = {item.path: resolved(item.path) for item in items}  # each input resolved once
    roots_inside = {root for root in {item.root for item in items} if resolved(root).is_relative_to(out)}
    kept = [item for item in items if item.root in roots_inside or not real[item.path].is_relative_to(out)]
    inputs = {real[item.path] for item in kept}
    targets: dict[Path, Path] = {}
    outputs = set(kept)
    for item in items:
        target = resolved(output_path(options, item))
        if target == real[item.path] or target in inputs:
            raise UsageError(
                f"--output-dir {options.output_dir} would overwrite the original {item.path}; "
                "choose another folder, or --in-place"
            )
        if item in outputs and targets.setdefault(target, item.path) != item.path:
            # files named alike (Copilot CLI's `<id>/events.jsonl`) given one by one
            raise UsageError(
                f"--output-dir {options.output_dir}: {targets[target]} and {item.path} would both be "
                f"written to {target}; name the folder that holds them instead"
            )
    return kept


def sweep(items: list[ScanItem], options: RunOptions, output_of: Callable[[ScanItem], Path]) -> None:
    """Temp files of runs that died (beside the inputs and the outputs) go before anything is written."""
    folders = {os.path.dirname(os.path.realpath(item.path)) for item in items}
    if not options.in_place and options.output_dir is not None:
        folders |= {str(output_of(item).parent) for item in items}
    for path in sweep_stale_temps(folders):
        log.info("removed %s, left by a run that is gone", path)
