"""Which item a worker gets next, in time that does not grow with the campaign.

Every item keeps two counters that only this module changes: ``judged`` (the workers who
judged it) and ``claims`` (``judged`` plus the item's lease rows, live or expired). An item
is open while ``claims < redundancy``. A worker never gets an item they judged or hold. The
next item is drawn among the open items with the fewest claims, starting from a random point
of the items' fixed random ``shuffle`` rank, so workers spread over the campaign instead of
all rating its first items in key order. The partial index ``item_open_idx`` (campaign,
claims, shuffle) turns that into two short index scans, whatever the campaign's size.

Why the counters stay exact (docs/architecture.md, "Allocation"):
- a lease is created under its item's row lock, after the lock re-read ``claims``; the
  insert and ``claims + 1`` commit together;
- a lease turns into a judgment (``lease_fulfil``) in the transaction that stores the
  judgment: ``judged + 1``, ``claims`` unchanged;
- a lease is released (expired, assignment closed) by deleting it by primary key and
  subtracting the number of rows that DELETE removed, so two releases of one lease subtract
  once.
Leases expire: an expired lease keeps its claim until it is released, which happens to the
worker's own leases on their next request, to a campaign's expired leases when it seems to
have no open item left, and to all of them in the housekeeping task.

Concurrency: candidates are locked with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so
concurrent workers take different items instead of queueing on one; under READ COMMITTED the
locked row is the latest version, re-checked against the query's conditions. On SQLite, whose
transactions are IMMEDIATE in our settings, allocations are serialised by the database lock.
Hidden gold checks (quality.py) are slipped in at the campaign's gold rate and are exempt from
redundancy.

Top-up: when a worker's judgments stop counting (a soft block, a withdrawal whose campaign
drops judgments), ``items_reopen`` lowers ``judged`` (and ``claims`` with it) of the items they
judged to the number of workers whose judgments still count, so those items open again for
other workers, within the campaign's top-up cap. The excluded worker's judgment rows stay, so
``_open`` never gives them the item again.
"""

from __future__ import annotations

import functools
import random
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, QuerySet, Subquery
from django.utils import timezone

from annotation import steering
from annotation.locks import ITEM_CLAIM_SQL, campaign_lock, item_claim, items_lock
from annotation.models import (
    Assignment,
    Campaign,
    Item,
    Judgment,
    Lease,
    Participation,
    Worker,
)
from evalsite.errors import Conflict

# Expired leases released at most per sweep of one campaign (the housekeeping task loops).
_SWEEP = 500

_RANK = random.SystemRandom()


def _open(campaign: Campaign, worker: Worker) -> QuerySet[Item]:
    """Return the campaign's open items that this worker has neither judged nor holds."""
    return Item.objects.filter(
        campaign=campaign, gold__isnull=True, claims__lt=campaign.redundancy
    ).exclude(
        Exists(Judgment.objects.filter(item=OuterRef("pk"), worker=worker))
        | Exists(Lease.objects.filter(item=OuterRef("pk"), worker=worker))
    )


def _candidates(campaign: Campaign, worker: Worker) -> list[QuerySet[Item]]:
    """Return the queries to try in turn, each ordered so its first row is the one to take.

    First the fewest-claimed level from a random rank upwards, then the same level from the
    lowest rank (the wrap-around), then any open item, fewest claims first (when the worker
    judged every item of the lowest level, or all of them are locked by other requests).
    """
    level = Subquery(
        Item.objects.filter(campaign=campaign, gold__isnull=True, claims__lt=campaign.redundancy)
        .order_by("claims")
        .values("claims")[:1]
    )
    rank = _RANK.randrange(2**31)
    mine = _open(campaign, worker)
    return [
        mine.filter(claims=level, shuffle__gte=rank).order_by("shuffle"),
        mine.filter(claims=level, shuffle__lt=rank).order_by("shuffle"),
        mine.order_by("claims", "shuffle"),
    ]


def items_available(*, campaign: Campaign, worker: Worker, now: datetime) -> bool:
    """Tell whether the worker could be given an item now (expired leases released first
    if none seems open)."""
    if _open(campaign, worker).exists():
        return True
    return leases_release_expired(campaign=campaign, now=now) > 0 and (
        _open(campaign, worker).exists()
    )


def item_next(*, assignment: Assignment, now: datetime | None = None) -> Item | None:
    """Return the item the assignment's worker should judge now, leased to them; or None.

    The worker's live lease in the campaign comes first, so reloading the page shows the same
    item. Otherwise the worker's expired leases are released and a new item is leased.
    """
    now = now or timezone.now()
    leased = _lease_in_one_statement(assignment, now)
    if leased is not None:
        return leased
    campaign = assignment.campaign
    worker = assignment.worker
    with transaction.atomic():
        mine = list(
            Lease.objects.filter(worker=worker, item__campaign=campaign)
            .select_related("item")
            .order_by("pk")
        )
        live = next((lease for lease in mine if lease.expires_at > now), None)
        if live is not None:
            if live.assignment_id != assignment.pk:
                Lease.objects.filter(pk=live.pk).update(assignment=assignment)
            return live.item
        _release([(lease.pk, lease.item_id) for lease in mine])

        gold = _gold_pick(campaign, worker)
        if gold is not None:
            return _lease(gold, assignment, now)
        # Adaptive allocation (steering.py) first tries a few planned items of a pair drawn
        # by weight; the plan was computed outside requests, so this stays constant time.
        planned = steering.steered_items(campaign=campaign, u=_RANK.random())
        steered = (
            [_open(campaign, worker).filter(pk__in=planned).order_by("claims", "shuffle")]
            if planned
            else []
        )
        for sweep in (False, True):
            if sweep and not leases_release_expired(campaign=campaign, now=now):
                break
            for query in steered + _candidates(campaign, worker):
                item = item_claim(query)
                if item is not None and item.claims < campaign.redundancy:
                    return _lease(item, assignment, now)
                if steered and query is steered[0]:
                    steering.plan_ran_dry(campaign=campaign)
    return None


# The common case of ``item_next`` on PostgreSQL as one statement (docs/architecture.md,
# "Allocation in one statement"): a worker who holds no lease in the campaign, which has no
# gold items to dose and does not steer, takes the first open item of the fewest-claimed
# level from a random rank (then below it), claimed by ``locks.ITEM_CLAIM_SQL``, and leases
# it: the lease's INSERT and ``claims + 1`` commit together, as in ``lease_create``. The lock
# re-checks ``claims < redundancy`` on the row's latest version (READ COMMITTED), so a
# concurrent lease never takes an item past its redundancy. No row: the general path.
_LEASE_ONE = """
WITH held AS (
    SELECT 1 FROM {lease} l JOIN {item} i ON i.id = l.item_id
    WHERE l.worker_id = %(worker)s AND i.campaign_id = %(campaign)s LIMIT 1
), level AS (
    SELECT claims FROM {item}
    WHERE campaign_id = %(campaign)s AND gold IS NULL AND claims < %(redundancy)s
    ORDER BY claims LIMIT 1
), above AS ({above}), below AS ({below}),
chosen AS (SELECT id FROM above UNION ALL SELECT id FROM below LIMIT 1),
leased AS (
    INSERT INTO {lease} (item_id, worker_id, assignment_id, created_at, expires_at)
    SELECT id, %(worker)s, %(assignment)s, %(now)s, %(expires)s FROM chosen
    RETURNING item_id
)
UPDATE {item} SET claims = {item}.claims + 1 FROM leased WHERE {item}.id = leased.item_id
RETURNING {columns}
"""


@functools.cache
def _lease_sql() -> str:
    tables = {
        "item": Item._meta.db_table,
        "lease": Lease._meta.db_table,
        "judgment": Judgment._meta.db_table,
    }
    columns = ", ".join(f"{tables['item']}.{f.column}" for f in Item._meta.concrete_fields)
    return _LEASE_ONE.format(
        above=ITEM_CLAIM_SQL.format(side=">=", **tables),
        below=ITEM_CLAIM_SQL.format(side="<", **tables),
        columns=columns,
        **tables,
    )


def _lease_in_one_statement(assignment: Assignment, now: datetime) -> Item | None:
    """Lease the worker the next item in one statement where that is the whole work (see
    ``_LEASE_ONE``); None where the general path of ``item_next`` must decide."""
    campaign = assignment.campaign
    if (
        connection.vendor != "postgresql"
        or campaign.gold_rate > 0
        or steering.steering_on(campaign)
    ):
        return None
    expires_at = now + timedelta(seconds=lease_seconds(assignment))
    params = {
        "campaign": campaign.pk,
        "worker": assignment.worker_id,
        "assignment": assignment.pk,
        "redundancy": campaign.redundancy,
        "rank": _RANK.randrange(2**31),
        "now": now,
        "expires": expires_at,
    }
    return next(iter(Item.objects.raw(_lease_sql(), params)), None)


def items_statistics_refresh() -> None:
    """Refresh PostgreSQL's statistics of the items and leases (``ANALYZE``): call when a
    campaign goes live. The next-item statement's plan rests on them: with the statistics of
    a table that had not seen the new campaign's items, the planner expected one item and
    read all of them (20,000 items: 44 ms and 81,584 buffers a call instead of 0.6 ms and 74),
    which under 300 thinking workers made PostgreSQL spend 24 ms a request (docs/
    architecture.md, "Allocation in one statement"). A sampled ANALYZE reads at most 30,000
    rows, whatever the table's size."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {Item._meta.db_table}, {Lease._meta.db_table}")


def lease_create(*, item: Item, assignment: Assignment, expires_at: datetime) -> Item:
    """Lease ``item`` to the assignment's worker until ``expires_at``: the one way a lease is
    made. The caller holds the item's row lock and checked it is open (gold items excepted:
    they have no redundancy limit to protect)."""
    Lease.objects.create(
        item=item, worker=assignment.worker, assignment=assignment, expires_at=expires_at
    )
    Item.objects.filter(pk=item.pk).update(claims=F("claims") + 1)
    item.claims += 1
    return item


def lease_seconds(assignment: Assignment) -> int:
    """Return how long a new lease of the assignment lasts: the campaign's lease, except that
    an open-link arrival (no provider session) that has answered nothing yet holds its first
    item at most ``EVALSITE_OPEN_FIRST_LEASE_SECONDS``: ids invented to hold a study's items
    give them back soon, and a real worker's first answer earns the full lease."""
    campaign = assignment.campaign
    first = assignment.items_done == 0 and not assignment.provider_assignment_id
    if campaign.open_links and first:
        return min(campaign.lease_seconds, settings.OPEN_FIRST_LEASE_SECONDS)
    return campaign.lease_seconds


def _lease(item: Item, assignment: Assignment, now: datetime) -> Item:
    expires_at = now + timedelta(seconds=lease_seconds(assignment))
    return lease_create(item=item, assignment=assignment, expires_at=expires_at)


def lease_fulfil(*, lease: Lease, item: Item) -> None:
    """Turn the worker's lease into their judgment of ``item``: the caller read the item
    under its row lock and stores the judgments in the same transaction.

    Raise Conflict if the lease was released meanwhile (its time ran out and it was swept).
    On PostgreSQL the DELETE and ``judged + 1`` are one statement (``_FULFIL``).
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                _FULFIL.format(item=Item._meta.db_table, lease=Lease._meta.db_table),
                [lease.pk, item.pk],
            )
            fulfilled = cursor.fetchone() is not None
    elif fulfilled := bool(Lease.objects.filter(pk=lease.pk).delete()[0]):
        Item.objects.filter(pk=item.pk).update(judged=F("judged") + 1)
    if not fulfilled:
        raise Conflict(LEASE_GONE)
    item.judged += 1


# A lease swept (its time ran out) before the answer that would have ended it.
LEASE_GONE = (
    "Your time for this item ran out and it went back to the pool; "
    "please continue with the next item."
)


_FULFIL = """
WITH gone AS (DELETE FROM {lease} WHERE id = %s RETURNING id)
UPDATE {item} SET judged = judged + 1 WHERE id = %s AND EXISTS (SELECT 1 FROM gone)
RETURNING id
"""


def item_judged_unleased(*, item: Item) -> None:
    """Count a judgment of ``item`` made without a lease (a live chat's bot turn, labeled in
    the chat): ``judged`` and ``claims`` both grow, so claims stay judged plus leases. The
    caller holds the item's row lock and stores the judgments in the same transaction."""
    Item.objects.filter(pk=item.pk).update(judged=F("judged") + 1, claims=F("claims") + 1)
    item.judged += 1
    item.claims += 1


def items_judged_imported(*, added: Mapping[int, int]) -> None:
    """Count workers who judged items without a lease (judgments imported from a file,
    ``services.imports``): item id → workers added. ``judged`` and ``claims`` both grow, as
    for ``item_judged_unleased``; one UPDATE per distinct number added. The caller holds the
    items' row locks and stores the judgments in the same transaction."""
    by_count: dict[int, list[int]] = defaultdict(list)
    for pk, count in added.items():
        if count:
            by_count[count].append(pk)
    for count, pks in by_count.items():
        for start in range(0, len(pks), 1000):
            Item.objects.filter(pk__in=pks[start : start + 1000]).update(
                judged=F("judged") + count, claims=F("claims") + count
            )


def leases_release(leases: QuerySet[Lease]) -> int:
    """Delete the given leases and give their claims back; return how many were released."""
    return _release(list(leases.values_list("pk", "item_id")))


def _release(leases: list[tuple[int, int]]) -> int:
    """Delete leases given as (pk, item id) and subtract what each DELETE removed."""
    by_item: dict[int, list[int]] = defaultdict(list)
    for pk, item_id in leases:
        by_item[item_id].append(pk)
    released = 0
    for item_id in sorted(by_item):
        deleted = Lease.objects.filter(pk__in=by_item[item_id]).delete()[0]
        if deleted:
            Item.objects.filter(pk=item_id).update(claims=F("claims") - deleted)
            released += deleted
    return released


def leases_release_expired(*, campaign: Campaign, now: datetime) -> int:
    """Release up to a sweep's worth of the campaign's expired leases; return how many."""
    expired = Lease.objects.filter(item__campaign=campaign, expires_at__lte=now).order_by(
        "expires_at"
    )
    return _release(list(expired.values_list("pk", "item_id")[:_SWEEP]))


def item_claims(*, item: Item, now: datetime, exclude_worker: Worker) -> int:
    """Count the workers who judged ``item`` plus the live leases of other workers on it
    (``item`` read under its row lock)."""
    others = Lease.objects.filter(item=item, expires_at__gt=now).exclude(worker=exclude_worker)
    return item.judged + others.count()


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
    """Release every expired lease (housekeeping: allocation releases them as it needs)."""
    now = now or timezone.now()
    released = 0
    while batch := list(
        Lease.objects.filter(expires_at__lte=now)
        .order_by("expires_at")
        .values_list("pk", "item_id")[:_SWEEP]
    ):
        with transaction.atomic():
            released += _release(batch)
    return released


def topup_cap(campaign: Campaign) -> int:
    """Return how many excluded judgments the campaign may replace in all: its ``topup_max``,
    or, left empty, a tenth of its item slots (non-gold items × redundancy), rounded up."""
    if campaign.topup_max is not None:
        return campaign.topup_max
    items = Item.objects.filter(campaign=campaign, gold__isnull=True).count()
    return -(-items * campaign.redundancy // 10)


@transaction.atomic
def items_reopen(*, campaign: Campaign, worker: Worker) -> int:
    """Re-open the campaign's items whose judgment by ``worker`` stopped counting; return how
    many item slots this call re-opened.

    Call after the worker's exclusion is stored (a soft-blocked Participation). Each item the
    worker judged gets ``judged`` lowered to its workers who still count (``claims`` by as
    much), so it takes replacements until it has the campaign's redundancy of valid
    judgments again. Items are recounted, never decremented blindly, so a repeated call
    re-opens nothing more. The campaign's row lock serialises the cap's accounting
    (``Campaign.topup_reopened`` against ``topup_cap``); items are locked in key order, as
    ``_release`` does. Slots past the cap stay closed.
    """
    locked = campaign_lock(campaign)
    room = topup_cap(locked) - locked.topup_reopened
    if room <= 0:
        return 0
    excluded = Participation.objects.filter(campaign=campaign, soft_blocked=True).values("worker")
    mine = Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True, worker=worker)
    items = items_lock(mine.values_list("item", flat=True))
    reopened = 0
    for item in items:
        valid = (
            Judgment.objects.filter(item=item)
            .exclude(worker__in=excluded)
            .exclude(worker__provider=Worker.Provider.MODEL)  # LLM judges never count
            .order_by()
            .values("worker")
            .distinct()
            .count()
        )
        lower = min(item.judged - valid, room - reopened)
        if lower <= 0:
            continue
        Item.objects.filter(pk=item.pk).update(
            judged=F("judged") - lower, claims=F("claims") - lower
        )
        reopened += lower
        if reopened >= room:
            break
    if reopened:
        Campaign.objects.filter(pk=campaign.pk).update(
            topup_reopened=F("topup_reopened") + reopened
        )
        campaign.topup_reopened = locked.topup_reopened + reopened
    return reopened
