"""What the report engines' equivalence tests vary (tests/test_report_fast.py, test_report_build_reports.py): the
option sets (`VARIANTS`), the filters that select part of a corpus (`filter_variants`), and a report's text in
each format (`outputs`), compared byte for byte."""

from __future__ import annotations

from datetime import timedelta

from batchcompact.report import fast
from batchcompact.report.render import write_report

VARIANTS = [
    {},
    {"breakdown": True},
    {"order": "desc"},
    {"order": "asc", "timezone": "America/New_York"},
    {"timezone": "Asia/Kolkata", "start_of_week": "sunday", "breakdown": True},
    {"cost_mode": "calculate"},
    {"cost_mode": "recorded", "order": "desc"},
]


def outputs(report) -> dict[str, str]:
    return {
        "table": write_report(report, "table", None),
        "compact": write_report(report, "table", None, compact=True),
        "json": write_report(report, "json", None, sources=[{"agent": "x"}]),
        "csv": write_report(report, "csv", None),
    }


def filter_variants(rows: list[tuple]) -> list[dict]:
    """Filters that select part of these rows: agents (one, two, a place label), a project by path and by folder name,
    a session id prefix, a date range in two time zones, `--last` (a pinned "now")."""
    projects = sorted({r[fast.PROJECT] for r in rows if r[fast.PROJECT]})
    sessions = sorted({r[fast.SESSION] for r in rows if r[fast.SESSION]})
    days = sorted({r[fast.TIME].date() for r in rows if r[fast.TIME]})
    agents = sorted({r[fast.AGENT] for r in rows})
    latest = max(r[fast.TIME] for r in rows if r[fast.TIME])
    middle = days[len(days) // 2]
    return [
        {"agents": (agents[0],)},
        {"agents": tuple(agents[-2:])},
        {"agents": ("codex", "atomic")},  # a place label selects its agent's rows (pi's)
        {"projects": (projects[0],)},
        {"projects": (projects[-1].rstrip("/").rsplit("/", 1)[-1] + "/", "/nowhere")},
        {"sessions": (sessions[0][:4], sessions[-1])},
        {"since": middle},
        {"until": middle, "timezone": "Pacific/Kiritimati"},
        {"since": days[0], "until": middle, "timezone": "America/Los_Angeles", "breakdown": True},
        {"last": 2, "now": latest + timedelta(days=1)},  # periods: the last 2 from "now"; others: 2 groups
        {"last": 3, "now": latest, "order": "desc", "breakdown": True, "timezone": "Asia/Tokyo"},
        {"last": 1, "now": latest, "since": middle, "agents": (agents[-1],)},
        # [report.projects]: an alias by path and one by folder name to one name, a group of it and
        # another project, and --project naming the alias
        {"project_aliases": ((projects[0], "shop"), (projects[-1].rsplit("/", 1)[-1], "shop")),
         "project_groups": (("store", ("shop", projects[len(projects) // 2])),), "breakdown": True},
        {"project_aliases": ((projects[0], "shop"),), "projects": ("shop",)},
    ]
