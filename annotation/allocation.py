"""Which item a worker gets next.

An item is open while its *claims* — workers who judged it plus live leases — are fewer than
the campaign's redundancy. A worker never gets an item they judged. Leases expire, so
abandoned work returns to the pool. Hidden gold checks (quality.py) are slipped in at the
campaign's gold rate and are exempt from redundancy.

Concurrency: every lease is created while holding the item's row lock, and the claims are
counted again after the lock is taken (a new statement, so a fresh snapshot under READ
COMMITTED). Candidates are locked with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so
concurrent workers take different items instead of queueing on one. On SQLite, whose
transactions are IMMEDIATE in our settings, allocations are serialised by the database lock.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import Assignment, Campaign, Item, Judgment, Lease, Worker

# After this many candidates turned out full on recount, give up for this request; the worker
# simply asks again.
_MAX_ATTEMPTS = 20


def _claims_subqueries(now: datetime) -> tuple[Subquery, Subquery]:
    judged = (
        Judgment.objects.filter(item=OuterRef("pk"))
        .order_by()
        .values("item")
        .annotate(c=Count("worker", distinct=True))
        .values("c")
    )
    leased = (
        Lease.objects.filter(item=OuterRef("pk"), expires_at__gt=now)
        .order_by()
        .values("item")
        .annotate(c=Count("pk"))
        .values("c")
    )
    return (
        Subquery(judged, output_field=IntegerField()),
        Subquery(leased, output_field=IntegerField()),
    )


def open_items(*, campaign: Campaign, worker: Worker, now: datetime) -> QuerySet[Item]:
    """Return the campaign's items this worker may still get, fewest claims first."""
    judged, leased = _claims_subqueries(now)
    return (
        Item.objects.filter(campaign=campaign, gold__isnull=True)
        .exclude(judgments__worker=worker)
        .exclude(leases__worker=worker)
        .annotate(claims=Coalesce(judged, Value(0)) + Coalesce(leased, Value(0)))
        .filter(claims__lt=campaign.redundancy)
        .order_by("claims", "pk")
    )


def item_claims(*, item: Item, now: datetime, exclude_worker: Worker | None = None) -> int:
    """Count the workers who judged ``item`` plus the live leases on it."""
    judged = Judgment.objects.filter(item=item)
    leased = Lease.objects.filter(item=item, expires_at__gt=now)
    if exclude_worker is not None:
        judged = judged.exclude(worker=exclude_worker)
        leased = leased.exclude(worker=exclude_worker)
    return judged.values("worker").distinct().count() + leased.count()


def item_next(*, assignment: Assignment, now: datetime | None = None) -> Item | None:
    """Return the item the assignment's worker should judge now, leased to them; or None.

    The worker's live lease in the campaign comes first, so reloading the page shows the same
    item. Otherwise the worker's expired leases are dropped and a new item is leased.
    """
    now = now or timezone.now()
    campaign = assignment.campaign
    worker = assignment.worker
    with transaction.atomic():
        mine = Lease.objects.filter(worker=worker, item__campaign=campaign)
        live = mine.filter(expires_at__gt=now).select_related("item").order_by("pk").first()
        if live is not None:
            if live.assignment_id != assignment.pk:
                Lease.objects.filter(pk=live.pk).update(assignment=assignment)
            return live.item
        mine.filter(expires_at__lte=now).delete()

        gold = _gold_pick(campaign, worker)
        if gold is not None:
            return _lease(gold, assignment, now)
        tried: list[int] = []
        for _ in range(_MAX_ATTEMPTS):
            candidate = (
                open_items(campaign=campaign, worker=worker, now=now)
                .exclude(pk__in=tried)
                .select_for_update(skip_locked=True, of=("self",))
                .first()
            )
            if candidate is None:
                return None
            if item_claims(item=candidate, now=now) < campaign.redundancy:
                return _lease(candidate, assignment, now)
            tried.append(candidate.pk)
    return None


def _lease(item: Item, assignment: Assignment, now: datetime) -> Item:
    Lease.objects.create(
        item=item,
        worker=assignment.worker,
        assignment=assignment,
        expires_at=now + timedelta(seconds=assignment.campaign.lease_seconds),
    )
    return item


def _gold_pick(campaign: Campaign, worker: Worker) -> Item | None:
    """Return a gold item for this turn, or None; at ``gold_rate``, unseen gold only.

    Whether a turn is a gold turn is drawn from a generator seeded by the worker and how many
    items they have judged here, so it cannot be forced by reloading. Gold items have no
    redundancy limit: every worker may get each one once.
    """
    if campaign.gold_rate <= 0:
        return None
    seen = Judgment.objects.filter(item__campaign=campaign, worker=worker)
    turn = seen.values("item").distinct().count()
    rng = random.Random(f"{campaign.pk}:{worker.pk}:{turn}")
    if rng.random() >= campaign.gold_rate:
        return None
    unseen = list(
        Item.objects.filter(campaign=campaign, gold__isnull=False)
        .exclude(judgments__worker=worker)
        .exclude(leases__worker=worker)
        .values_list("pk", flat=True)
    )
    if not unseen:
        return None
    return Item.objects.get(pk=rng.choice(sorted(unseen)))


def leases_purge_expired(*, now: datetime | None = None) -> int:
    """Delete expired leases (housekeeping; allocation already ignores them)."""
    deleted, _ = Lease.objects.filter(expires_at__lte=now or timezone.now()).delete()
    return deleted
