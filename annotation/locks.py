"""Row locks of the core: one function per kind of row, and the order every app takes them in.

Every ``SELECT … FOR UPDATE`` of the core is one of these functions (tests/annotation/
test_locks.py fails on any other); each returns the row (or rows) read fresh under the lock,
held until the transaction ends. SQLite has no row locks: its IMMEDIATE transactions
serialise writers, and these are plain reads there.

The order. A transaction that takes more than one of these takes them in this order
(outermost first), so that no two transactions wait on each other in a cycle:

1. the dashboard's draft row (``dashboard.drafts.store.draft_locked``: a launch, an upload);
2. ``worker_lock``: a withdrawal (``worker_forget``), a training answer;
3. ``campaign_lock``, ``campaign_lock_by_slug``: status and settings changes, the ledger and
   launches, the ED lobby, a bot chat's arrival, training and ACUTE items, the top-up
   (``items_reopen``);
4. ``payment_lock_by_key`` (recruitment's, in ``recruitment.locks``): the ledger only, right
   after the campaign;
5. a conversation: ``pair_lock`` (ED: a pair's messages and ends) or ``dialogue_lock``,
   ``seat_dialogue_lock`` (a bot chat's turns, labels and end);
6. ``seat_lock``, ``seat_lock_first``: the lobby (campaign first), a seat's socket and
   situation; under a pair or a dialogue seats are only UPDATEd, which locks them too.
   ``pair_lock`` and the seat locks are chat's rows, in ``chat.locks``;
7. ``item_lock``, ``item_lock_in``, ``items_lock`` (several: always in primary-key order, as
   allocation's lease releases UPDATE them): a submission, a chat label, an import, the
   top-up;
8. ``assignment_lock``, ``assignment_lock_open``, ``assignments_lock_by_provider_ids``,
   ``assignment_lock_closing``: last, under the item the submission stores; closing an
   assignment (``assignment_lock_closing``) locks the items its leases hold first, because
   releasing them UPDATEs those items.

``item_claim`` (and ``ITEM_CLAIM_SQL``, the same claim inside allocation's one statement) is
allocation's ``FOR UPDATE SKIP LOCKED``: a claim, not a wait. It passes over a row another
transaction holds, so it never waits and is no step of the order.

Foreign keys are checked when a transaction commits (Django's PostgreSQL constraints are
``DEFERRABLE INITIALLY DEFERRED``), taking ``FOR KEY SHARE`` on the row referenced, and a
``FOR UPDATE`` lock blocks that: inserting a lease, a judgment or a tally waits at the commit
for whoever holds its item, assignment or campaign. Hence two choices here:
- the campaign's lock is ``FOR NO KEY UPDATE``: it excludes every other campaign lock and
  every UPDATE of the row as ``FOR UPDATE`` did, but not those checks, which are everywhere
  (items, assignments, tallies, payments, seats, situations are inserted under a campaign).
  Otherwise the top-up, holding the campaign while it waits for an item, and a submission
  of that item, holding the item while its tally row's check waits for the campaign, would
  deadlock;
- ``assignment_lock_closing`` takes the leased items before the assignment, the order of the
  submission (item, then assignment) and of allocation (its items, then its lease's check on
  the assignment at the commit).

Where the code goes against the order, and why (docs/architecture.md, "Row locks"):
- a submission that completes its assignment releases the assignment's other leases (items
  after the assignment). Only the same worker can hold two leases of one assignment (two
  tabs allocating at once); their two submissions at once may deadlock, PostgreSQL aborts
  one, and its page sends it again (503, ``evalsite.overload``), answered from stored rows;
- a failed attention check soft-blocks the worker inside the submission: item and
  assignment, then the Participation row (``update_or_create`` locks it), the campaign and
  the worker's non-gold items (``items_reopen``). Before the campaign it holds only its gold
  item and its assignment, which no other holder of the campaign waits for: no cycle;
- a withdrawal (``worker_forget``) releases the worker's leases and scrubs payloads (items)
  before the top-up of each campaign whose policy drops their judgments (the campaign, then
  items). It can deadlock with another worker's top-up in that campaign waiting for one of
  those items; PostgreSQL aborts one; both are atomic and idempotent, and are asked again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Model, QuerySet

from annotation.models import Assignment, Campaign, Dialogue, Item, Lease, Worker
from evalsite.rows import Columns

# Primary keys per locking statement (an IN list of parameters).
_BATCH = 1000


def _pk(row: Model | int) -> int:
    return row if isinstance(row, int) else int(row.pk)


def worker_lock(worker: Worker | int) -> Worker:
    """Lock the worker's row and return it fresh."""
    return Worker.objects.select_for_update().get(pk=_pk(worker))


def campaign_lock(campaign: Campaign | int) -> Campaign:
    """Lock the campaign's row (``FOR NO KEY UPDATE``: rows inserted under the campaign are
    not kept waiting at their commit) and return it fresh."""
    return Campaign.objects.select_for_update(no_key=True).get(pk=_pk(campaign))


def campaign_lock_by_slug(slug: str) -> Campaign | None:
    """Lock the campaign at ``slug`` as ``campaign_lock`` does; None if there is none."""
    return Campaign.objects.select_for_update(no_key=True).filter(slug=slug).first()


def dialogue_lock(dialogue: Dialogue | int, *, with_campaign: bool = False) -> Dialogue:
    """Lock a dialogue's row (a bot chat's conversation) and return it fresh; with its
    campaign read in the same query when asked (the campaign is not locked)."""
    if with_campaign:
        query = Dialogue.objects.select_for_update(of=("self",)).select_related("campaign")
        return query.get(pk=_pk(dialogue))
    return Dialogue.objects.select_for_update().get(pk=_pk(dialogue))


def item_lock(item: Item | int) -> Item:
    """Lock an item's row and return it fresh (its counters as they are now)."""
    return Item.objects.select_for_update().get(pk=_pk(item))


def item_lock_in(campaign: Campaign, pk: int, worker: Worker) -> tuple[Item, Lease | None] | None:
    """Lock the item ``pk`` if it is one of the campaign's and return it with the worker's
    lease on it (or None), read in the same statement (a join; the lease row is not locked);
    None if the campaign has no such item. Written as SQL (``_ITEM_LOCK_IN``): the hot path's
    answer runs it, and building it through the ORM cost 0.9 ms of CPU (``evalsite.rows``)."""
    sql = _ITEM_LOCK_IN.format(
        item_columns=_ITEM.sql,
        lease_columns=_LEASE.sql,
        item=Item._meta.db_table,
        lease=Lease._meta.db_table,
        lock=_for_update("i"),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [worker.pk, pk, campaign.pk])
        row = cursor.fetchone()
    if row is None:
        return None
    item = _ITEM.instance(row)
    lease_row = row[len(_ITEM) :]
    if lease_row[0] is None:
        return item, None
    lease = _LEASE.instance(lease_row)
    lease.item, lease.worker = item, worker
    return item, lease


_ITEM, _LEASE = Columns(Item, "i"), Columns(Lease, "l")
_ITEM_LOCK_IN = """
SELECT {item_columns}, {lease_columns}
FROM {item} i LEFT JOIN {lease} l ON l.item_id = i.id AND l.worker_id = %s
WHERE i.id = %s AND i.campaign_id = %s {lock}
"""


def _for_update(alias: str) -> str:
    """``FOR UPDATE OF`` the table under ``alias`` on PostgreSQL; nothing on SQLite, whose
    IMMEDIATE transactions serialise writers (as Django's ``select_for_update`` does there)."""
    return f"FOR UPDATE OF {alias}" if connection.features.has_select_for_update_of else ""


def items_lock(ids: Iterable[int]) -> list[Item]:
    """Lock the items ``ids`` in primary-key order, a thousand per statement; return them
    in that order (ids of no item are left out)."""
    unique = sorted(set(ids))
    items: list[Item] = []
    for start in range(0, len(unique), _BATCH):
        batch = unique[start : start + _BATCH]
        items += Item.objects.filter(pk__in=batch).order_by("pk").select_for_update()
    return items


def item_claim(items: QuerySet[Item]) -> Item | None:
    """Claim the first item of ``items`` that no other transaction holds (``FOR UPDATE SKIP
    LOCKED``), locked; None if every one is held or there is none. A claim, not a wait:
    concurrent workers take different items instead of queueing on one."""
    return items.select_for_update(skip_locked=True).first()


# ``item_claim`` as part of one statement (allocation's ``_LEASE_ONE``, PostgreSQL): the first
# open item of the campaign at the statement's ``level`` (a CTE: the fewest claims), on one
# ``side`` of the random rank, that the worker neither judged nor holds, and no lease of the
# worker's in the campaign (the CTE ``held``). Formatted with the tables' names.
ITEM_CLAIM_SQL = """
    SELECT i.id FROM {item} i
    WHERE i.campaign_id = %(campaign)s AND i.gold IS NULL AND i.claims < %(redundancy)s
      AND i.claims = (SELECT claims FROM level) AND i.shuffle {side} %(rank)s
      AND NOT EXISTS (SELECT 1 FROM held)
      AND NOT EXISTS (SELECT 1 FROM {judgment} j
                      WHERE j.item_id = i.id AND j.worker_id = %(worker)s)
      AND NOT EXISTS (SELECT 1 FROM {lease} l WHERE l.item_id = i.id AND l.worker_id = %(worker)s)
    ORDER BY i.shuffle LIMIT 1 FOR UPDATE SKIP LOCKED
"""


def assignment_lock(
    assignment: Assignment | int, *, excluded: tuple[str, list[Any]] | None = None
) -> Assignment:
    """Lock an assignment's row and return it fresh; with ``excluded`` (SQL of a condition on
    the row's worker, ``a.worker_id``, and its parameters: an answer's exclusion check,
    ``quality.exclusion_sql``) read in the same statement as its attribute ``excluded``
    (it locks nothing more). Under a submission the item comes first; to close an assignment
    use ``assignment_lock_closing``. Written as SQL, as ``item_lock_in``."""
    condition, params = excluded if excluded is not None else ("FALSE", [])
    sql = _ASSIGNMENT_LOCK.format(
        columns=_ASSIGNMENT.sql,
        condition=condition,
        assignment=Assignment._meta.db_table,
        lock=_for_update("a"),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, _pk(assignment)])
        row = cursor.fetchone()
    if row is None:
        raise Assignment.DoesNotExist("Assignment matching query does not exist.")
    locked = _ASSIGNMENT.instance(row)
    locked.excluded = bool(row[len(_ASSIGNMENT)])  # type: ignore[attr-defined]
    return locked


_ASSIGNMENT = Columns(Assignment, "a")
_ASSIGNMENT_LOCK = """
SELECT {columns}, ({condition}) AS excluded FROM {assignment} a WHERE a.id = %s {lock}
"""


def assignment_lock_closing(assignment: Assignment | int) -> Assignment:
    """Lock the items the assignment's leases hold (releasing a lease UPDATEs its item),
    then the assignment; return the assignment fresh.

    The order of a submission (item, then assignment), so closing an assignment while its
    worker submits or is given an item waits instead of deadlocking.
    """
    items_lock(Lease.objects.filter(assignment=_pk(assignment)).values_list("item", flat=True))
    return assignment_lock(assignment)


def assignment_lock_open(campaign: Campaign, worker: Worker) -> Assignment | None:
    """Lock the worker's open (accepted) assignment in the campaign; None if there is none."""
    return (
        Assignment.objects.select_for_update()
        .filter(campaign=campaign, worker=worker, status=Assignment.Status.ACCEPTED)
        .first()
    )


def assignments_lock_by_provider_ids(campaign: Campaign, ids: Iterable[str]) -> list[Assignment]:
    """Lock the campaign's assignments with these provider assignment ids, in primary-key
    order; return them (ids of no assignment are left out)."""
    return list(
        Assignment.objects.filter(campaign=campaign, provider_assignment_id__in=list(ids))
        .order_by("pk")
        .select_for_update()
    )
