"""What the dashboard shows, read with a fixed number of aggregate queries.

No query here reads the judgments: the live numbers (slots done, judgments, the rate, the last
judgment) come from the campaigns' tallies (``annotation.tallies``, maintained by each
submission), so the campaign list, the campaign page and its poll cost the same with ten
judgments or a million.
The full report (tables, figures, agreement, worker quality) is built by a job instead
(``dashboard.services.report_job_start``) and the page shows its latest snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.db.models import Count, F, Sum
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from annotation.models import Assignment, AuditLog, Campaign, Dialogue, Item
from annotation.tallies import HOUR, Tally, campaign_tallies
from dashboard import glossary
from dashboard.glossary import Column
from dashboard.models import Job
from dashboard.money import campaign_currencies
from recruitment.models import Payment

# A worker counts as active when their assignment saw activity this recently.
ACTIVE_MINUTES = 10
# The rate behind the time-to-finish estimate is measured over the tallies' last hour.
RATE_WINDOW = HOUR
# The settings changes the campaign page lists before its "all" link.
HISTORY_SHOWN = 10
# Item counts from this size on are cached this long (see _items_counts).
ITEMS_CACHED_FROM = 10_000
ITEMS_CACHE_SECONDS = 60


@dataclass(frozen=True)
class CampaignRow:
    """One campaign's line on the list page, and the live header of its own page."""

    campaign: Campaign
    items: int
    needed: int
    done: int
    judgments: int
    workers_active: int
    spent: Decimal
    per_hour: float
    last_judgment_at: datetime | None
    currency: str  # of the spent money and the budget (``dashboard.money``)

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.needed) if self.needed else 0.0

    @property
    def percent(self) -> int:
        return int(round(100 * self.fraction))

    @property
    def remaining(self) -> int:
        return max(0, self.needed - self.done)

    @property
    def has_target(self) -> bool:
        return self.needed > 0

    @property
    def eta_hours(self) -> float | None:
        """Hours to finish at the current rate; None when nothing is happening."""
        if not self.needed:
            return None
        if not self.remaining:
            return 0.0
        if self.per_hour <= 0:
            return None
        return self.remaining / self.per_hour

    @property
    def eta_text(self) -> str:
        hours = self.eta_hours
        if hours is None:
            return "no target set" if not self.needed else "no recent work"
        if hours == 0:
            return "finished"
        if hours < 1:
            return f"~{max(1, math.ceil(hours * 60))} min"
        if hours < 48:
            return f"~{hours:.1f} h"
        return f"~{hours / 24:.1f} days"

    def as_json(self) -> dict[str, Any]:
        return {
            "slug": self.campaign.slug,
            "status": self.campaign.status,
            "items": self.items,
            "needed": self.needed,
            "done": self.done,
            "percent": self.percent,
            "judgments": self.judgments,
            "workers_active": self.workers_active,
            "spent": f"{self.spent:.2f}",
            "budget": f"{self.campaign.budget:.2f}",
            "currency": self.currency,
            "per_hour": round(self.per_hour, 1),
            "eta": self.eta_text,
        }


def _dialogue_progress(campaigns: Sequence[Campaign]) -> dict[int, tuple[int, int]]:
    """Return (complete dialogues, target) for chat campaigns (their unit of work)."""
    chats = [c for c in campaigns if _chat_target(c) is not None]
    if not chats:
        return {}
    complete = dict(
        Dialogue.objects.filter(campaign__in=chats, status=Dialogue.Status.COMPLETE)
        .values("campaign")
        .annotate(n=Count("pk"))
        .values_list("campaign", "n")
    )
    return {c.pk: (complete.get(c.pk, 0), _chat_target(c) or 0) for c in chats}


def _chat_target(campaign: Campaign) -> int | None:
    """How many conversations a live-chat campaign wants (None for an item campaign).

    Interactive SSA wants ``conversations_per_model`` for each of its models; ED collection
    sets no number (0: the page shows the conversations held, without a bar's end).
    """
    from annotation.protocols import LiveChat, registry

    try:
        protocol = registry.get(campaign.protocol)
    except KeyError:
        return None
    if not isinstance(protocol, LiveChat):
        return None
    parameters = campaign.parameters if isinstance(campaign.parameters, dict) else {}
    per_model, models = parameters.get("conversations_per_model"), parameters.get("models")
    if per_model is None and "conversations_per_model" in protocol.default_parameters():
        per_model = protocol.default_parameters()["conversations_per_model"]
    if isinstance(per_model, int) and isinstance(models, list):
        return per_model * len(models)
    return 0


def _items_key(campaign: Campaign) -> str:
    # created_at as well as the id: a test database that reuses ids never reuses both.
    return f"dashboard:items:{campaign.pk}:{campaign.created_at.timestamp()}"


def _items_counts(campaigns: Sequence[Campaign]) -> dict[int, int]:
    """Return each campaign's number of (non-gold) items, in one query at most.

    Counting items reads every item row (88 ms at 200,000 items), so a count of at least
    ``ITEMS_CACHED_FROM`` is kept ``ITEMS_CACHE_SECONDS`` in the cache: a large campaign's
    items are added at launch (or by its chats, a handful a minute), so the poll shows a new
    item at most that late. Smaller counts cost little and are always exact.
    """
    keys = {_items_key(c): c.pk for c in campaigns}
    counts = {keys[key]: n for key, n in cache.get_many(list(keys)).items()}
    missing = [c.pk for c in campaigns if c.pk not in counts]
    if missing:
        fresh = dict(
            Item.objects.filter(campaign__in=missing, gold__isnull=True)
            .values("campaign")
            .annotate(n=Count("pk"))
            .values_list("campaign", "n")
        )
        counts.update(fresh)
        cache.set_many(
            {
                _items_key(c): fresh[c.pk]
                for c in campaigns
                if fresh.get(c.pk, 0) >= ITEMS_CACHED_FROM
            },
            ITEMS_CACHE_SECONDS,
        )
    return counts


def campaign_rows(
    campaigns: Iterable[Campaign], *, now: datetime | None = None
) -> list[CampaignRow]:
    """Return the list page's rows, in the campaigns' order, with a fixed number of queries."""
    campaigns = list(campaigns)
    ids = [c.pk for c in campaigns]
    now = now or timezone.now()
    items = _items_counts(campaigns)
    stats = campaign_tallies(ids, now=now)
    chats = _dialogue_progress(campaigns)
    chats_per_hour = _dialogues_per_hour(list(chats), now)
    active = dict(
        Assignment.objects.filter(
            campaign__in=ids,
            status=Assignment.Status.ACCEPTED,
            last_activity_at__gte=now - timedelta(minutes=ACTIVE_MINUTES),
        )
        .values("campaign")
        .annotate(n=Count("worker", distinct=True))
        .values_list("campaign", "n")
    )
    spent = dict(
        Payment.objects.filter(campaign__in=ids)
        .exclude(status=Payment.Status.FAILED)
        .values("campaign")
        .annotate(s=Sum(F("amount") + F("fee")))
        .values_list("campaign", "s")
    )
    currencies = campaign_currencies(campaigns)
    rows = []
    for campaign in campaigns:
        stat = stats.get(campaign.pk, Tally())
        n_items = items.get(campaign.pk, 0)
        needed, finished = n_items * campaign.redundancy, stat.done
        # Judgments per hour become slots per hour by the campaign's own judgments per slot
        # (a Likert slot is three judgments, an A/B slot one).
        per_hour = _rate_per_hour(stat, now) * (finished / stat.judgments if stat.judgments else 0)
        if campaign.pk in chats:
            finished, needed = chats[campaign.pk]
            per_hour = chats_per_hour.get(campaign.pk, 0.0)
        rows.append(
            CampaignRow(
                campaign=campaign,
                items=n_items,
                needed=needed,
                done=finished,
                judgments=stat.judgments,
                workers_active=active.get(campaign.pk, 0),
                spent=spent.get(campaign.pk) or Decimal("0.00"),
                per_hour=per_hour,
                last_judgment_at=stat.last,
                currency=currencies[campaign.pk],
            )
        )
    return rows


def _rate_per_hour(stat: Tally, now: datetime) -> float:
    """Judgments per hour: the last hour's pace, else the average since the first judgment."""
    if not stat.judgments or stat.first is None or stat.last is None:
        return 0.0
    if stat.recent:
        return stat.recent / (RATE_WINDOW.total_seconds() / 3600)
    span = (stat.last - stat.first).total_seconds() / 3600
    # A campaign idle for longer than a day has no current rate.
    if span <= 0 or (now - stat.last) > timedelta(days=1):
        return 0.0
    return stat.judgments / span


def _dialogues_per_hour(campaign_ids: list[int], now: datetime) -> dict[int, float]:
    """Conversations completed per hour in the last hour, per chat campaign (one query)."""
    if not campaign_ids:
        return {}
    hours = RATE_WINDOW.total_seconds() / 3600
    counts = (
        Dialogue.objects.filter(
            campaign__in=campaign_ids,
            status=Dialogue.Status.COMPLETE,
            ended_at__gte=now - RATE_WINDOW,
        )
        .values("campaign")
        .annotate(n=Count("pk"))
        .values_list("campaign", "n")
    )
    return {campaign: n / hours for campaign, n in counts}


def campaign_row(campaign: Campaign) -> CampaignRow:
    """Return the live header numbers of one campaign."""
    return campaign_rows([campaign])[0]


def report_latest(campaign: Campaign) -> Job | None:
    """Return the newest finished report snapshot, if any."""
    return (
        Job.objects.filter(campaign=campaign, kind=Job.Kind.REPORT, status=Job.Status.DONE)
        .order_by("-finished_at", "-pk")
        .first()
    )


def report_judgments(campaign: Campaign) -> int | None:
    """Return how many judgments the newest report snapshot counted, if there is one.

    Only that key leaves the database: the snapshot itself (hundreds of kilobytes of tables
    at a million judgments) is not loaded, so the poll's cost does not grow with it.
    """
    value = (
        Job.objects.filter(campaign=campaign, kind=Job.Kind.REPORT, status=Job.Status.DONE)
        .order_by("-finished_at", "-pk")
        .annotate(judgments=KeyTextTransform("judgments", "result"))
        .values_list("judgments", flat=True)
        .first()
    )
    return None if value is None else int(value)


# A report job queued or running for longer than this is not waited for (its worker died).
REPORT_PENDING_FOR = timedelta(minutes=10)


def report_pending(campaign: Campaign) -> bool:
    """Whether a report build of the campaign is queued or running (recently started)."""
    return Job.objects.filter(
        campaign=campaign,
        kind=Job.Kind.REPORT,
        status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
        created_at__gte=timezone.now() - REPORT_PENDING_FOR,
    ).exists()


def jobs_recent(campaign: Campaign, *, limit: int = 10) -> list[Job]:
    """Return the campaign's latest jobs, newest first (the page's job list).

    Without their results: the list shows none, and a report's result is its whole snapshot
    (hundreds of kilobytes of JSON at a million judgments), decoded for every row otherwise.
    """
    return list(
        Job.objects.filter(campaign=campaign).select_related("campaign").defer("result")[:limit]
    )


@dataclass(frozen=True)
class QualityTable:
    """The snapshot's worker-quality table as the page shows it: who needs a look first."""

    columns: list[Column]
    rows: list[tuple[str, list[tuple[str, Any]]]]  # (pseudonym, (column, cell) after worker_id)
    total: int


def quality_table(snapshot: Job | None, *, limit: int | None = 50) -> QualityTable:
    """Return the workers of the report snapshot, those failing review first, then the busiest.

    ``limit`` keeps the page's size (and time) independent of the number of workers; the
    full table is one click away and in the snapshot's CSV.
    """
    table = (snapshot.result.get("quality") if snapshot else None) or {"columns": [], "rows": []}
    columns = list(table["columns"])
    if "pseudonym" not in columns:
        return QualityTable(columns=[], rows=[], total=0)
    at = {name: i for i, name in enumerate(columns)}
    rows = sorted(
        table["rows"],
        key=lambda r: (
            bool(r[at["passes"]]) if "passes" in at else True,
            -(r[at["items"]] or 0) if "items" in at else 0,
            r[at["pseudonym"]],
        ),
    )
    shown = rows if limit is None else rows[:limit]
    keep = [i for i, name in enumerate(columns) if name != "worker_id"]
    return QualityTable(
        columns=glossary.columns([columns[i] for i in keep]),
        rows=[(r[at["pseudonym"]], [(columns[i], r[i]) for i in keep]) for r in shown],
        total=len(rows),
    )


@dataclass(frozen=True)
class ReportTable:
    """One table of the report snapshot with readable headers; the files keep the raw names."""

    name: str
    title: str
    columns: list[Column]
    rows: list[list[tuple[str, Any]]]  # (column name, value): the cell filter formats by column


def report_tables(snapshot: Job | None) -> list[ReportTable]:
    """Return the snapshot's report tables as the page shows them."""
    tables = (snapshot.result.get("tables") if snapshot else None) or {}
    shown = []
    for name, table in tables.items():
        names = [str(c) for c in table.get("columns", [])]
        shown.append(
            ReportTable(
                name=name,
                title=name.replace("_", " ").capitalize(),
                columns=glossary.columns(names),
                rows=[list(zip(names, row, strict=False)) for row in table.get("rows", [])],
            )
        )
    return shown


def report_glossary(snapshot: Job | None) -> list[Column]:
    """The glossary of every column the snapshot's tables and worker table show."""
    result = snapshot.result if snapshot else {}
    names = [
        str(c)
        for table in [*(result.get("tables") or {}).values(), result.get("quality") or {}]
        for c in table.get("columns", [])
        if c != "worker_id"
    ]
    return glossary.entries(names)


@dataclass(frozen=True)
class CodeMatch:
    """An assignment whose completion code a worker (or a provider's list) quoted."""

    assignment: Assignment
    pseudonym: str
    provider: str
    external_id: str


CODE_MATCHES_SHOWN = 20


def completion_lookup(campaign: Campaign, code: str) -> list[CodeMatch]:
    """Return the campaign's assignments with completion code ``code`` (case and surrounding
    spaces ignored), newest first; at most ``CODE_MATCHES_SHOWN``."""
    code = code.strip()
    if not code:
        return []
    found = (
        Assignment.objects.filter(campaign=campaign, completion_code__iexact=code)
        .select_related("worker")
        .order_by("-accepted_at", "-pk")[:CODE_MATCHES_SHOWN]
    )
    return [
        CodeMatch(
            assignment=a,
            pseudonym=a.worker.pseudonym,
            provider=a.worker.provider,
            external_id=a.worker.external_id,
        )
        for a in found
    ]


def settings_history(campaign: Campaign, *, limit: int | None) -> tuple[list[AuditLog], int]:
    """Return the campaign's settings changes (``audit_settings``), newest first, at most
    ``limit`` (None: all), and how many there are."""
    changes = AuditLog.objects.filter(campaign=campaign, action=AuditLog.Action.SETTINGS)
    shown = list(changes if limit is None else changes[:limit])
    full = limit is not None and len(shown) == limit
    return shown, changes.count() if full else len(shown)
