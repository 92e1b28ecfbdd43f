"""The leaderboard page's reads: an arena's ranking as its latest report snapshot has it
(docs/dashboard.md, "Leaderboard").

A campaign has the page when its protocol has battles (``annotation.protocols.Battles``:
every vote is one battle of two models). Everything shown comes from the report snapshot
that the campaign page shows too (a job builds it: ``dashboard.services``), never from the
judgments, so the page and its poll cost the same at ten votes or a million. Only the
snapshot's tables, figures and notes leave the database, not its worker table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.utils import timezone

from annotation.models import Campaign
from annotation.protocols import Battles, registry
from annotation.tallies import campaign_tallies
from dashboard import glossary
from dashboard.glossary import Column
from dashboard.models import Job
from dashboard.selectors import ReportTable

# The snapshot's tables the page and its JSON show (a leaderboard of groups never compared is
# ``leaderboard_1``, ``leaderboard_2``, …).
TABLES = ("leaderboard_style", "style_coefficients", "win_matrix", "pairs", "win_rates", "models")
_GROUP = re.compile(r"^leaderboard(?:_(\d+))?$")
# Headers this page words for battles; other columns keep the glossary's.
_HEADERS: dict[str, tuple[str, str]] = {
    "n": ("Votes", "Votes with this model (or on this pair): ties and 'both bad' included."),
}
# The style-controlled ranking's columns beside the plain strength (one group only).
STYLE_COLUMNS = ("strength_style", "strength_style_low", "strength_style_high", "rank_style")
FIGURE_ORDER = ("leaderboard", "ratio_heatmap")


def leaderboard_available(campaign: Campaign) -> bool:
    """Whether the campaign has a leaderboard page: its protocol's votes are battles."""
    try:
        protocol = registry.get(campaign.protocol)
    except KeyError:
        return False
    return isinstance(protocol, Battles)


@dataclass(frozen=True)
class Snapshot:
    """What the page reads of a report snapshot (a finished report job)."""

    pk: int
    finished_at: datetime | None
    judgments: int | None
    tables: dict[str, Any]
    figures: dict[str, Any]
    notes: list[str]


def leaderboard_snapshot(campaign: Campaign) -> Snapshot | None:
    """Return the newest report snapshot's tables, figures and notes (one query; the worker
    table, the snapshot's largest part, stays in the database)."""
    row = (
        Job.objects.filter(campaign=campaign, kind=Job.Kind.REPORT, status=Job.Status.DONE)
        .order_by("-finished_at", "-pk")
        .annotate(
            snapshot_tables=KeyTransform("tables", "result"),
            snapshot_figures=KeyTransform("figures", "result"),
            snapshot_notes=KeyTransform("notes", "result"),
            snapshot_judgments=KeyTextTransform("judgments", "result"),
        )
        .values(
            "pk",
            "finished_at",
            "snapshot_tables",
            "snapshot_figures",
            "snapshot_notes",
            "snapshot_judgments",
        )
        .first()
    )
    if row is None:
        return None
    judgments = row["snapshot_judgments"]
    return Snapshot(
        pk=row["pk"],
        finished_at=row["finished_at"],
        judgments=None if judgments is None else int(judgments),
        tables=row["snapshot_tables"] or {},
        figures=row["snapshot_figures"] or {},
        notes=[str(note) for note in row["snapshot_notes"] or []],
    )


def judgments_now(campaign: Campaign) -> int:
    """Return the campaign's judgments so far, from its tallies (one small query)."""
    tally = campaign_tallies([campaign.pk], now=timezone.now()).get(campaign.pk)
    return tally.judgments if tally else 0


@dataclass(frozen=True)
class WinMatrix:
    """The row model's win rate over the column model (None: the pair never met)."""

    models: list[str]
    rows: list[tuple[str, list[float | None]]]


@dataclass(frozen=True)
class Leaderboard:
    """The page's content: rankings (one per group never compared with the others), the
    style coefficients, the win-rate matrix, votes per pair and the operations table."""

    snapshot: Snapshot | None
    rankings: list[ReportTable]
    style: ReportTable | None
    matrix: WinMatrix | None
    pairs: ReportTable | None
    operations: ReportTable | None
    figures: list[tuple[str, dict[str, Any]]]
    judgments: int  # the campaign's judgments now (its tallies)
    building: bool  # a report build is queued or running

    @property
    def votes(self) -> int:
        """Votes counted in the snapshot (the pairs' votes)."""
        rows = self.pairs.rows if self.pairs else []
        return sum(int(value or 0) for row in rows for column, value in row if column == "n")

    @property
    def stale(self) -> bool:
        """Whether judgments arrived since the snapshot (or there are some and no snapshot)."""
        built_from = self.snapshot.judgments if self.snapshot else 0
        return built_from != self.judgments

    @property
    def notes(self) -> list[str]:
        return self.snapshot.notes if self.snapshot else []


def _columns(names: list[str]) -> list[Column]:
    return [
        Column(name=n, header=_HEADERS[n][0], help=_HEADERS[n][1]) if n in _HEADERS else column
        for n, column in zip(names, glossary.columns(names), strict=True)
    ]


def _table(name: str, title: str, data: dict[str, Any] | None) -> ReportTable | None:
    """Return a snapshot table as the page shows it, or None when it is absent or empty."""
    if not data or not data.get("rows"):
        return None
    names = [str(c) for c in data.get("columns", [])]
    rows = [list(zip(names, row, strict=False)) for row in data["rows"]]
    return ReportTable(name=name, title=title, columns=_columns(names), rows=rows)


def _with_style(ranking: dict[str, Any], style: dict[str, Any] | None) -> dict[str, Any]:
    """Return the ranking with the length-controlled strength, interval and rank beside the
    plain strength (after its interval)."""
    columns = list(ranking["columns"])
    if not style or not style.get("rows") or not {"model", "ci_high"} <= set(columns):
        return ranking
    at = {c: i for i, c in enumerate(style["columns"])}
    keys = ("strength", "ci_low", "ci_high", "rank")
    by_model = {row[at["model"]]: [row[at[key]] for key in keys] for row in style["rows"]}
    cut = columns.index("ci_high") + 1
    model = columns.index("model")
    rows = [
        [*row[:cut], *by_model.get(row[model], [None] * len(STYLE_COLUMNS)), *row[cut:]]
        for row in ranking["rows"]
    ]
    return {"columns": [*columns[:cut], *STYLE_COLUMNS, *columns[cut:]], "rows": rows}


def _rankings(tables: dict[str, Any]) -> list[ReportTable]:
    groups = sorted((int(m.group(1) or 0), name) for name in tables if (m := _GROUP.match(name)))
    if len(groups) == 1:
        data = _with_style(tables[groups[0][1]], tables.get("leaderboard_style"))
        table = _table(groups[0][1], "Leaderboard", data)
        return [table] if table else []
    shown = [_table(name, f"Group {number}", tables[name]) for number, name in groups]
    return [table for table in shown if table]


def _matrix(data: dict[str, Any] | None) -> WinMatrix | None:
    if not data or not data.get("rows"):
        return None
    models = [str(c) for c in data["columns"][1:]]
    rows = [
        (str(row[0]), [None if value is None else float(value) for value in row[1:]])
        for row in data["rows"]
    ]
    return WinMatrix(models=models, rows=rows)


def leaderboard_of(snapshot: Snapshot | None, *, judgments: int, building: bool) -> Leaderboard:
    """Return what the page shows of ``snapshot`` (empty parts when it has no votes), with
    the campaign's ``judgments`` now and whether a report is ``building``."""
    tables = snapshot.tables if snapshot else {}
    figures = snapshot.figures if snapshot else {}
    order = [name for name in FIGURE_ORDER if name in figures]
    order += [name for name in figures if name not in order]
    return Leaderboard(
        snapshot=snapshot,
        rankings=_rankings(tables),
        style=_table("style_coefficients", "Style coefficients", tables.get("style_coefficients")),
        matrix=_matrix(tables.get("win_matrix")),
        pairs=_table("pairs", "Votes per pair", tables.get("pairs")),
        operations=_table("models", "Operations", tables.get("models")),
        figures=[(name, figures[name]) for name in order],
        judgments=judgments,
        building=building,
    )


def leaderboard_json(campaign: Campaign, board: Leaderboard) -> dict[str, Any]:
    """Return the page's poll: the snapshot's id, time and tables as records (the report's
    machine-readable column names), and whether newer votes wait for a new build."""
    snapshot = board.snapshot
    tables = snapshot.tables if snapshot else {}
    finished = snapshot.finished_at if snapshot else None
    return {
        "slug": campaign.slug,
        "status": campaign.status,
        "live": campaign.status == Campaign.Status.LIVE,
        "snapshot": snapshot.pk if snapshot else None,
        "computed_at": finished.isoformat() if finished else None,
        "judgments": snapshot.judgments if snapshot else None,
        "judgments_now": board.judgments,
        "stale": board.stale,
        "building": board.building,
        "votes": board.votes,
        "groups": len(board.rankings),
        "checked_at": timezone.now().isoformat(timespec="seconds"),
        "tables": {name: t for name, t in tables.items() if _GROUP.match(name) or name in TABLES},
        "notes": board.notes,
    }
