"""What `batchcompact report` computes, before anything is printed: one `ReportRequest` in, one
`ReportOutput` out (`produce_report`). The stored result of an unchanged archive (no file parsed, no
polars), or the full path: collect (cache-aware), aggregate, render, and keep the output for the next
time; under `--no-cache` the common reports aggregate without polars (fast.py). The command builds the
request and prints what this returns.

Light at import: the full path's modules (polars, pyarrow) are imported only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from batchcompact.errors import UsageError
from batchcompact.report.settings import ReportSettings

if TYPE_CHECKING:
    import polars as pl

    from batchcompact.core.jsontypes import JsonObject
    from batchcompact.pipeline.executor import Executor
    from batchcompact.report.collect import CollectResult
    from batchcompact.report.fast_collect import Collected
    from batchcompact.report.files import Walk
    from batchcompact.report.result import Report
    from batchcompact.report.result_cache import ResultCache


@dataclass(frozen=True)
class ReportRequest:
    """One report asked for: what to read, how to count it (`settings`) and where it goes. Refused when
    built if its options contradict each other (UsageError, exit 2).

    `paths`: files and folders as given; none: every agent's places found on this machine (only those of
    `settings.agents` when it names agents with places: `readers.place_agents`). `cache_above`: an archive of at most this many bytes is read whole
    without keeping usage parts. `executor`: `local` (forked processes) or `ray` (at `ray_address`)."""

    paths: tuple[str, ...] = ()
    settings: ReportSettings = field(default_factory=ReportSettings)
    fmt: str = "table"
    output: str | None = None
    chart: str | None = None
    html: str | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    cache_above: int = 0
    jobs: int | None = None
    executor: str = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        settings = self.settings
        if settings.by == "request":
            self._check_export_options()
        if settings.since is not None and settings.until is not None and settings.since > settings.until:
            # an empty report, every time: a typo
            raise UsageError(f"--since {settings.since} is after --until {settings.until}: no day is in both; "
                             "swap them?")

    def _check_export_options(self) -> None:
        """`--by request` writes requests, not groups: the options that shape groups do not apply."""
        from batchcompact.report.export import FORMATS

        if self.fmt not in FORMATS:
            raise UsageError(f"--by request writes one row per request: use --format {', '.join(FORMATS)}, "
                             f"not {self.fmt}")
        for given, name in ((self.settings.breakdown, "--breakdown"), (self.settings.last, "--last"),
                            (self.chart, "--chart"), (self.html, "--html")):
            if given:
                raise UsageError(f"{name} does not apply to --by request (one row per request; use --since/--until)")

    def open_executor(self) -> Executor | None:
        """The executor extraction runs on (None: this machine's processes, the report's own pool)."""
        if self.executor == "local":
            return None
        from batchcompact.pipeline.executor import make_executor

        return make_executor(self.executor, jobs=self.jobs or 1, ray_address=self.ray_address)


@dataclass
class ReportOutput:
    """One report, rendered: `texts` ("wide", and "compact" for a table) or `records` (jsonl); a parquet
    report is already written to its file. The rest is what the command says on stderr."""

    warnings: list[str]
    unpriced: list[str]
    dropped_zero: int
    files: int
    parsed: int = 0
    from_cache: int = 0
    rejected: int = 0  # cache parts that failed verification and were rebuilt
    unread: int = 0  # files it could not read or that are no session (named in `warnings`)
    incomplete: int = 0  # usage exports cut short (named in `warnings`): the report lacks rows (exit 1)
    replayed: bool = False  # the stored output of an earlier identical report
    texts: dict[str, str] = field(default_factory=dict)
    table_width: int | None = None
    records: list[dict] | None = None
    requests: int | None = None  # the report's requests (None: not known, a report stored before it was kept)

    @classmethod
    def stored(cls, kept: JsonObject) -> ReportOutput:
        return cls(kept["warnings"], kept["unpriced"], kept["dropped_zero"], kept["files"], 0, kept["files"],
                   unread=kept.get("unread", 0), incomplete=kept.get("incomplete", 0), replayed=True, texts=kept["texts"], table_width=kept.get("table_width"),
                   requests=kept.get("requests"))

    def kept(self) -> JsonObject:
        """What is stored for the next identical report (result_cache.py)."""
        kept: JsonObject = {"warnings": self.warnings, "unpriced": self.unpriced,
                                "dropped_zero": self.dropped_zero, "files": self.files, "texts": self.texts,
                                "unread": self.unread, "incomplete": self.incomplete, "requests": self.requests}
        if self.table_width is not None:
            kept["table_width"] = self.table_width
        return kept


def produce_report(request: ReportRequest, *, say: Callable[[str], None] | None = None,
                   warn: Callable[[str], None] | None = None) -> ReportOutput:
    """The report `request` asks for: replayed from the stored result when the archive and options are
    unchanged, else built. `say` hears each agent folder read when no PATHS are given; `warn` hears each
    extraction warning as soon as collection ends (they are in the output too). An archive of at most
    `cache_above` bytes is read whole without keeping usage parts (by the path without polars where it can
    make the report, else into a temporary folder): loading the parts and polars costs more than reading it.
    The agents' folders discovered (none: PATHS given) are the report's `sources`: such folders holding no
    file are a report of zero, given PATHS that hold none a usage error."""
    from batchcompact.discover import paths_or_discovered
    from batchcompact.report.files import walk_folder
    from batchcompact.report.readers import place_agents

    settings = request.settings
    paths, found = paths_or_discovered(request.paths, "report", say, agents=place_agents(settings.agents),
                                       walk=walk_folder, globs=False)
    sources = [s.to_dict() for s in found]
    results = None
    if not request.no_cache and not request.chart and not request.html:
        results = _stored_results(paths, settings, request.fmt, sources, request.cache_dir)
        if results is not None and (kept := results[0].load(results[1])) is not None:
            return ReportOutput.stored(kept)
    out = _full_report(paths, request, sources, warn=warn)
    if results is not None and out.texts:
        results[0].store(results[1], out.kept())
    return out


def _stored_results(paths: list[str], settings: ReportSettings, fmt: str, sources: list[dict],
                    cache_dir: str | None) -> tuple[ResultCache, str] | None:
    """(ResultCache, key) when this report's output can be kept for an unchanged archive, else None."""
    from batchcompact.folders import cache_folder
    from batchcompact.report.result_cache import ResultCache, archive_keys, result_key, storable

    if not storable(settings, fmt):
        return None
    keys = archive_keys(paths)
    key = result_key(keys, settings, fmt, sources) if keys else None
    return None if key is None else (ResultCache(cache_dir or cache_folder()), key)


def _full_report(paths: list[str], request: ReportRequest, sources: list[dict], *,
                 warn: Callable[[str], None] | None) -> ReportOutput:
    """Collect (cache-aware), aggregate (polars, or plain Python for a supported `--no-cache` report), render."""
    from batchcompact.folders import cache_folder
    from batchcompact.report.render import report_records, table_width, write_report

    settings, fmt, output = request.settings, request.fmt, request.output
    chart, html, no_cache, cache_dir = request.chart, request.html, request.no_cache, request.cache_dir
    empty_ok = bool(sources)  # discovered places: an empty archive is a report of zero

    runner = request.open_executor()
    quick = walk = None
    if runner is None and not chart and not html:
        quick, walk = _quick_report(paths, settings, fmt, request.jobs, None if no_cache else request.cache_above,
                                    None if no_cache else cache_dir or cache_folder(), empty_ok)
    if quick is not None:
        result, collected = quick
        warnings = _warnings(collected, settings)
        if warn is not None:
            for warning in warnings:
                warn(warning)
    else:
        from batchcompact.report import build_report, collect_usage

        try:
            collected = collect_usage(paths, cache_dir=cache_dir, use_cache=not no_cache, jobs=request.jobs,
                                      executor=runner, walk=walk, empty_ok=empty_ok, cache_above=request.cache_above)
        finally:
            if runner is not None:
                runner.close()
        try:
            warnings = _warnings(collected, settings)
            if warn is not None:
                for warning in warnings:
                    warn(warning)
            usage = None
            if html:  # the page deduplicates and prices the requests as the table does (`page_settings` only
                # changes what shapes groups): done once for both (a team's year: seconds each)
                from batchcompact.pricing import PriceTable
                from batchcompact.report.aggregate import priced_usage

                table = PriceTable.load(settings.pricing_file)
                usage = priced_usage(collected.parts, settings, table)
                result = build_report(collected.parts, settings, table, usage=usage)
            else:
                result = build_report(collected.parts, settings)
            if chart:
                from batchcompact.report.chart import write_chart

                write_chart(chart_report(result, collected.parts, settings), chart)
            if html:  # the page: the same aggregation (`build_report`) per dimension and day (html.py)
                from batchcompact.report.html import write_page

                write_page(collected.parts, settings, html, paths, usage=usage)
        finally:
            collected.cleanup()
    out = ReportOutput(warnings, result.unpriced_models, result.dropped_zero, collected.files, collected.extracted,
                       collected.cached, collected.rejected, collected.unread, collected.incomplete,
                       requests=(result.totals or {}).get("requests"))
    if settings.by == "request":  # the per-request export: its own columns and writer
        from batchcompact.report.export import write_export

        text = write_export(cast("pl.DataFrame", result.rows), fmt, output)  # (polars' rows: fast.supported)
        if text is not None:
            out.texts = {"wide": text}
    elif fmt == "jsonl":
        out.records = report_records(result)
    elif fmt == "parquet":
        write_report(result, fmt, output)
    else:
        # (no output file: write_report gives the text)
        out.texts = {"wide": cast(str, write_report(result, fmt, None, compact=False, sources=sources))}
        if fmt == "table":
            out.texts["compact"] = cast(str, write_report(result, fmt, None, compact=True, sources=sources))
            out.table_width = table_width(result)
    return out


def _warnings(collected: CollectResult | Collected, settings: ReportSettings) -> list[str]:
    """The files' warnings, then one for each machine name two machines use (report/export.py)."""
    from batchcompact.report.export import machine_warnings

    return [*collected.warnings, *machine_warnings(collected.stats, settings)]


def chart_report(result: Report, parts: list[str], settings: ReportSettings) -> Report:
    """What the chart draws: the table's groups (the same `--by`, filters and scope: `--by block` is
    Claude's unless `--agent`/`--source` say) broken down by model. The table itself where it already is
    (a breakdown, `--by model`) or carries its stacks (blocks); else the breakdown of the same groups,
    kept to the table's rows and in its order (`--last N` sessions: those N, not N session-model pairs)."""
    from batchcompact.report import build_report
    from batchcompact.report.settings import PERIODS

    if settings.breakdown or settings.by == "model" or result.stacks is not None:
        return result
    wide = build_report(parts, replace(settings, breakdown=True, last=settings.last if settings.by in PERIODS else None))
    keys = [k for k in result.keys if k != "model"]
    # (polars' rows: a chart is never the cold report's)
    bars = cast("pl.DataFrame", result.rows).select(keys).with_row_index("_bar")  # the table's rows, in its order
    wide.rows = (cast("pl.DataFrame", wide.rows).join(bars, on=keys, how="inner", nulls_equal=True)
                 .sort("_bar", maintain_order=True).drop("_bar"))
    return wide


def _quick_report(paths: list[str], settings: ReportSettings, fmt: str, jobs: int | None, max_bytes: int | None = None,
                  cache_dir: str | Path | None = None, empty_ok: bool = False
                  ) -> tuple[tuple[Report, Collected] | None, Walk | None]:
    """((Report, Collected), None) from the cold path without polars (report/fast.py), or (None, walk) when
    these options or rows need the polars path (Parquet usage exports of more than `MAX_EXPORT_ROWS` requests
    too: polars reads them as columns), or the archive is larger than `max_bytes` and `cache_dir`
    already holds most of its usage parts (`fast_collect.writes_parts`; otherwise the workers write them as they
    read). `walk`: the files found, when they were (the polars path then does not stat them again)."""
    from batchcompact.report import fast, fast_collect

    if not fast.supported(settings, fmt):
        return None, None
    from batchcompact.pricing import PriceTable

    builders: list[fast.Builder] = []

    def take(rows: list[tuple], unpriced: frozenset | None) -> None:
        if unpriced is None:  # extracted here: price them now
            builders[0].feed(rows)
        else:  # priced by a worker process
            builders[0].absorb(rows, unpriced)

    # The price map is read before the workers fork, so they inherit it (PriceTable.load caches it) instead
    # of each reading it again while this process reads it a third time.
    builders.append(fast.Builder(settings, PriceTable.load(settings.pricing_file)))
    try:  # the workers price their own rows
        collected = fast_collect.collect_rows(paths, jobs, on_rows=take, settings=settings, max_bytes=max_bytes,
                                      cache_dir=cache_dir, empty_ok=empty_ok,
                                      max_export_rows=fast_collect.MAX_EXPORT_ROWS)
        return (builders[0].report(), collected), None
    except fast.Unsupported as refused:
        return None, refused.walk
