"""Maintained per-campaign counters ("tallies"): live numbers without scanning judgments.

Every stored (item, worker) pair on a non-gold item adds to one ``CampaignTally`` row,
keyed by (campaign, hour, shard, level), in one UPSERT inside the submission's transaction
(``tally_add``). Readers sum a campaign's rows (``campaign_tallies``): their number grows with
the hours a campaign was active (× 8 shards × its redundancy levels), never with judgments.

Why the numbers equal a scan of the judgments (``tests/annotation/test_tallies.py`` keeps the
scan as the reference and compares on random data):

- *Done slots* are Σ over items of min(distinct judging workers, redundancy). An item with n
  workers has had one pair at each level 1..n, so Σ_items min(n, r) = the pairs at levels
  1..r. The reader applies the campaign's *current* redundancy, so lowering or raising it
  later gives the same number as the scan (no recount).
- *Judgments*, *first* and *last* are sums, minima and maxima, which shards and hours split
  without loss.
- The writer calls ``tally_add`` while holding the item's row lock, after storing the pair's
  judgments, so the level (the item's distinct workers including this one) is counted under
  the lock and no two pairs of one item get the same level; the UPSERT adds atomically, so
  concurrent submissions to one row lose nothing (it waits for the other's commit and adds).
  The tally commits or rolls back with the judgments.
- *Judgments in the last hour* come from hourly buckets: this hour's judgments plus the
  previous hour's pro-rated by the part of it still inside the last 60 minutes (uniform
  within the hour): an estimate, only for the rate and time-to-finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Campaign, CampaignTally, Item, Judgment, Worker
from annotation.models.tallies import TALLY_SHARDS

HOUR = timedelta(hours=1)


def hour_of(moment: datetime) -> datetime:
    """Return the UTC hour ``moment`` falls in (its bucket)."""
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def tally_add(
    *, campaign_id: int, worker_id: int, level: int, judgments: int, now: datetime
) -> None:
    """Count one (item, worker) pair just stored on a non-gold item, in one UPSERT.

    ``level`` is the item's number of distinct workers with judgments, this worker included,
    counted under the item's row lock (the caller must hold it, in the transaction that stored
    the judgments); ``judgments`` the rows this pair stored; ``now`` when. Call it once per
    pair, never for gold items, last in the transaction (the tally row stays locked until the
    commit, so other workers of the same shard and level wait only for the commit).
    """
    if level < 1 or judgments < 0:
        raise ValueError(f"A tallied pair has level >= 1 and judgments >= 0: {level}, {judgments}")
    at = connection.ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(
            tally_upsert_sql("VALUES (%s, %s, %s, %s, 1, %s, %s, %s)"),
            [campaign_id, *tally_key(worker_id, now), level, judgments, at, at],
        )


def tally_key(worker_id: int, now: datetime) -> tuple[Any, int]:
    """The hour (adapted for the database) and shard a pair stored at ``now`` counts in."""
    return connection.ops.adapt_datetimefield_value(hour_of(now)), worker_id % TALLY_SHARDS


def tally_upsert_sql(rows: str) -> str:
    """The UPSERT that adds ``rows`` (a VALUES list or a SELECT of campaign_id, hour, shard,
    level, pairs, judgments, first_at, last_at) to the tallies: the one statement every
    writer of tallies runs (``tally_add``, ``tallies_add``, and the answer's one statement on
    PostgreSQL, ``services.judgments``)."""
    table = CampaignTally._meta.db_table
    least, greatest = ("LEAST", "GREATEST") if connection.vendor == "postgresql" else ("MIN", "MAX")
    return f"""
        INSERT INTO {table} (campaign_id, hour, shard, level, pairs, judgments, first_at, last_at)
        {rows}
        ON CONFLICT (campaign_id, hour, shard, level) DO UPDATE SET
            pairs = {table}.pairs + EXCLUDED.pairs,
            judgments = {table}.judgments + EXCLUDED.judgments,
            first_at = {least}({table}.first_at, EXCLUDED.first_at),
            last_at = {greatest}({table}.last_at, EXCLUDED.last_at)
    """  # noqa: S608 -- the table name comes from the model, values are parameters


def tallies_add(
    *, campaign_id: int, pairs: Sequence[tuple[int, int, int, datetime, datetime]]
) -> None:
    """Count many (item, worker) pairs stored at once (an import of judgments,
    ``services.imports``) as ``tally_add`` once per pair would, with the same rules and the
    same caller's locks: ``pairs`` are (worker id, level, judgments, first and last stored
    time of its rows); one UPSERT per (hour, shard, level) they fall in.
    """
    groups: dict[tuple[datetime, int, int], list[Any]] = {}
    for worker_id, level, judgments, first, last in pairs:
        if level < 1 or judgments < 0:
            raise ValueError(
                f"A tallied pair has level >= 1 and judgments >= 0: {level}, {judgments}"
            )
        key = (hour_of(first), worker_id % TALLY_SHARDS, level)
        group = groups.setdefault(key, [0, 0, first, last])
        group[0] += 1
        group[1] += judgments
        group[2], group[3] = min(group[2], first), max(group[3], last)
    adapt = connection.ops.adapt_datetimefield_value
    sql = tally_upsert_sql("VALUES (%s, %s, %s, %s, %s, %s, %s, %s)")
    rows = [
        [campaign_id, adapt(hour), shard, level, n, judgments, adapt(first), adapt(last)]
        for (hour, shard, level), (n, judgments, first, last) in sorted(groups.items())
    ]
    if rows:
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)


@dataclass(frozen=True)
class Tally:
    """A campaign's live numbers, as a scan of its non-gold judgments would give them."""

    done: int = 0  # (item, worker) slots, each item capped at the campaign's redundancy
    judgments: int = 0
    recent: float = 0.0  # judgments in the last hour (an estimate: see the module's doc)
    first: datetime | None = None
    last: datetime | None = None


def as_datetime(value: Any) -> datetime | None:
    """Read a raw query's timestamp: PostgreSQL gives datetimes, SQLite gives UTC text."""
    if value is None or isinstance(value, datetime):
        return value
    parsed = parse_datetime(str(value))
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    return parsed


def campaign_tallies(campaign_ids: Sequence[int], *, now: datetime) -> dict[int, Tally]:
    """Return the live numbers of each campaign that has any, in one query over its tallies."""
    if not campaign_ids:
        return {}
    this_hour = hour_of(now)
    adapt = connection.ops.adapt_datetimefield_value
    marks = ", ".join(["%s"] * len(campaign_ids))
    tally, campaign = CampaignTally._meta.db_table, Campaign._meta.db_table
    sql = f"""
        SELECT t.campaign_id,
               SUM(CASE WHEN t.level <= c.redundancy THEN t.pairs ELSE 0 END),
               SUM(t.judgments),
               SUM(CASE WHEN t.hour >= %s THEN t.judgments ELSE 0 END),
               SUM(CASE WHEN t.hour = %s THEN t.judgments ELSE 0 END),
               MIN(t.first_at), MAX(t.last_at)
        FROM {tally} t JOIN {campaign} c ON c.id = t.campaign_id
        WHERE t.campaign_id IN ({marks})
        GROUP BY t.campaign_id
    """  # noqa: S608 -- table names come from the models, values are parameters
    # The part of the previous hour that is still within the last 60 minutes.
    overlap = 1.0 - (now - this_hour) / HOUR
    with connection.cursor() as cursor:
        cursor.execute(sql, [adapt(this_hour), adapt(this_hour - HOUR), *campaign_ids])
        return {
            int(cid): Tally(
                done=int(done or 0),
                judgments=int(judgments or 0),
                recent=float(current or 0) + float(previous or 0) * max(0.0, overlap),
                first=as_datetime(first),
                last=as_datetime(last),
            )
            for cid, done, judgments, current, previous, first, last in cursor.fetchall()
        }


def _hour_sql(column: str) -> str:
    if connection.vendor == "postgresql":
        return f"date_trunc('hour', {column})"  # the connection's time zone is UTC
    return f"strftime('%%Y-%%m-%%d %%H:00:00', {column})"  # how Django stores a whole hour


@transaction.atomic
def tallies_rebuild(campaign_ids: Sequence[int] | None = None) -> int:
    """Replace the tallies of the campaigns (default: all) by a count of their judgments.

    For upgrades (the migration that added tallies runs it), benchmarks that bulk-load
    judgments, and repairs. Run it while the campaigns take no submissions: a pair stored
    during the rebuild may be counted twice or not at all. A pair's level is its rank among
    the item's workers by their first judgment. Returns the number of tally rows written.
    """
    tally, judgment, item, worker = (
        CampaignTally._meta.db_table,
        Judgment._meta.db_table,
        Item._meta.db_table,
        Worker._meta.db_table,
    )
    only, params = "", list(campaign_ids or [])
    if campaign_ids is not None:
        if not params:
            return 0
        only = f"AND i.campaign_id IN ({', '.join(['%s'] * len(params))})"
        CampaignTally.objects.filter(campaign__in=params).delete()
    else:
        CampaignTally.objects.all().delete()
    sql = f"""
        INSERT INTO {tally} (campaign_id, hour, shard, level, pairs, judgments, first_at, last_at)
        SELECT q.campaign_id, {_hour_sql("q.first")}, q.worker_id %% {TALLY_SHARDS}, q.level,
               COUNT(*), SUM(q.n), MIN(q.first), MAX(q.last)
        FROM (
            SELECT p.campaign_id AS campaign_id, p.worker_id AS worker_id, p.n AS n,
                   p.first AS first, p.last AS last,
                   ROW_NUMBER() OVER (
                       PARTITION BY p.item_id ORDER BY p.first, p.worker_id
                   ) AS level
            FROM (
                SELECT i.campaign_id AS campaign_id, j.item_id AS item_id,
                       j.worker_id AS worker_id, COUNT(*) AS n,
                       MIN(j.created_at) AS first, MAX(j.created_at) AS last
                FROM {judgment} j JOIN {item} i ON i.id = j.item_id
                WHERE i.gold IS NULL {only}
                  AND j.worker_id NOT IN (SELECT id FROM {worker} WHERE provider = 'model')
                GROUP BY i.campaign_id, j.item_id, j.worker_id
            ) p
        ) q
        GROUP BY 1, 2, 3, 4
    """  # noqa: S608 -- table names come from the models, values are parameters
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return max(0, cursor.rowcount)
