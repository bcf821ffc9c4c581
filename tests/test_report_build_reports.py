"""`aggregate.build_reports` (the HTML page's groupings, made from one fine group-by of the requests) gives each
grouping the report `aggregate.build_report` gives it: the same rows in the same order, totals, unpriced models and
dropped zero-token requests, over the shared fixtures (every agent's reader) and the sample sessions, for every
grouping both engines compute, with the page's extra keys (the local day, the branch) or none, under the options
and filters the engine equivalence tests use (test_report_fast.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import SAMPLES, shared_fixtures
from report_variants import VARIANTS, filter_variants, outputs

from batchcompact.pricing import PriceTable
from batchcompact.report import fast_collect
from batchcompact.report.aggregate import build_report, build_reports, priced_usage
from batchcompact.report.collect import collect_usage
from batchcompact.report.dimensions import FAST_GROUPINGS
from batchcompact.report.settings import ReportSettings

ALSO = [(), ("local_date",), ("local_date", "branch")]


@pytest.fixture(scope="module", params=["fixtures", "samples"])
def corpus(request):
    paths = [shared_fixtures()] if request.param == "fixtures" else [SAMPLES]
    collected = collect_usage(paths, use_cache=False)
    rows = fast_collect.collect_rows(paths).rows
    yield request.param, collected, rows
    collected.cleanup()


def same(one, other, label: str) -> None:
    assert one.keys == other.keys, label
    assert one.rows.columns == other.rows.columns, label
    assert one.rows.equals(other.rows), label
    assert one.totals == other.totals, label
    assert one.unpriced_models == other.unpriced_models, label
    assert one.dropped_zero == other.dropped_zero, label
    if "local_date" not in one.keys:  # the writers show no local day (the page does)
        assert outputs(one) == outputs(other), label


def test_every_grouping_at_once_is_each_build_report(corpus):
    name, collected, rows = corpus
    table = PriceTable.load(None)
    groupings = [(by, also) for by in FAST_GROUPINGS for also in ALSO]
    compared = dropped = 0
    for variant in [*VARIANTS, *filter_variants(rows)]:
        settings = ReportSettings(**variant)
        usage = priced_usage(collected.parts, settings, table)
        got = build_reports(collected.parts, settings, groupings, table, usage)
        for (by, also), report in zip(groupings, got, strict=True):
            want = build_report(collected.parts, replace(settings, by=by), table, also=also, usage=usage)
            same(report, want, f"{name} --by {by} {also} {variant}")
            compared += want.rows.height
            dropped += want.dropped_zero
        # without a priced frame given, the same
        alone = build_reports(collected.parts, settings, groupings[:1], table)[0]
        same(alone, got[0], f"{name} {variant} unpriced frame")
    assert compared > 100 and dropped > 0  # real groups were compared, zero-token requests among them


def test_a_grouping_made_from_each_request_is_refused(corpus):
    _, collected, _ = corpus
    for by in ("block", "request"):
        with pytest.raises(ValueError, match=by):
            build_reports(collected.parts, ReportSettings(), [(by, ())])
