"""Tallies: the live numbers they give equal a scan of the judgments, under any history."""

import importlib
import random
import threading
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from django.db import close_old_connections, connection, transaction

from annotation.models import Campaign, CampaignTally, Item, Judgment
from annotation.tallies import as_datetime, campaign_tallies, hour_of, tallies_rebuild, tally_add
from tests.factories import AssignmentFactory, CampaignFactory, ItemFactory, WorkerFactory

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 3, 2, 14, 30, tzinfo=UTC)


def judgment_scan(campaign_ids: list[int], since: datetime) -> dict[int, tuple]:
    """The dashboard's numbers as it computed them before tallies, by scanning every judgment
    (the reference): (done slots, judgments, judgments since ``since``, first, last)."""
    marks = ", ".join(["%s"] * len(campaign_ids))
    sql = f"""
        SELECT t.campaign_id, SUM(CASE WHEN t.n > t.r THEN t.r ELSE t.n END),
               SUM(t.j), SUM(t.recent), MIN(t.first), MAX(t.last)
        FROM (
            SELECT i.campaign_id AS campaign_id, c.redundancy AS r,
                   COUNT(DISTINCT j.worker_id) AS n, COUNT(*) AS j,
                   SUM(CASE WHEN j.created_at >= %s THEN 1 ELSE 0 END) AS recent,
                   MIN(j.created_at) AS first, MAX(j.created_at) AS last
            FROM {Judgment._meta.db_table} j
            JOIN {Item._meta.db_table} i ON i.id = j.item_id
            JOIN {Campaign._meta.db_table} c ON c.id = i.campaign_id
            WHERE i.gold IS NULL AND i.campaign_id IN ({marks})
            GROUP BY j.item_id, i.campaign_id, c.redundancy
        ) t
        GROUP BY t.campaign_id
    """  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [connection.ops.adapt_datetimefield_value(since), *campaign_ids])
        return {
            int(cid): (int(done), int(n), int(recent), as_datetime(first), as_datetime(last))
            for cid, done, n, recent, first, last in cursor.fetchall()
        }


def tallied(campaign_ids: list[int], now: datetime) -> dict[int, tuple]:
    """The tallies' numbers in the scan's shape, the last hour's estimate left out."""
    return {
        cid: (t.done, t.judgments, t.first, t.last)
        for cid, t in campaign_tallies(campaign_ids, now=now).items()
    }


def scanned(campaign_ids: list[int], now: datetime) -> dict[int, tuple]:
    return {
        cid: (done, n, first, last)
        for cid, (done, n, _, first, last) in judgment_scan(campaign_ids, now).items()
    }


def history_store(campaigns: list[Campaign], seed: int, *, pairs: int = 300) -> datetime:
    """Store random judgments as the submission path does (a tally per stored pair), spread
    over several hours, with gold items, over-full items and 1–3 questions per item.

    Returns the last submission's time.
    """
    rng = random.Random(seed)
    workers = WorkerFactory.create_batch(12)
    items = []
    for campaign in campaigns:
        items += ItemFactory.create_batch(8, campaign=campaign)
        items += ItemFactory.create_batch(2, campaign=campaign, gold={"empathy": [3]})
    assignments = {
        (c.pk, w.pk): AssignmentFactory(campaign=c, worker=w) for c in campaigns for w in workers
    }
    judged: dict[int, set[int]] = defaultdict(set)
    at = NOW - timedelta(hours=5, minutes=17)
    for _ in range(pairs):
        item, worker = rng.choice(items), rng.choice(workers)
        if worker.pk in judged[item.pk]:
            continue
        at += timedelta(seconds=rng.randint(1, 120))
        questions = ["empathy", "relevance", "fluency"][: rng.randint(1, 3)]
        stored = Judgment.objects.bulk_create(
            Judgment(
                item=item,
                worker=worker,
                assignment=assignments[(item.campaign_id, worker.pk)],
                question=q,
                value=rng.randint(1, 5),
                time_spent_ms=1000,
            )
            for q in questions
        )
        Judgment.objects.filter(pk__in=[j.pk for j in stored]).update(created_at=at)
        judged[item.pk].add(worker.pk)
        if item.gold is None:
            tally_add(
                campaign_id=item.campaign_id,
                worker_id=worker.pk,
                level=len(judged[item.pk]),
                judgments=len(questions),
                now=at,
            )
    return at


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tallies_equal_a_scan_of_the_judgments_on_random_histories(seed) -> None:
    campaigns = [CampaignFactory(redundancy=r) for r in (1, 3)]
    last = history_store(campaigns, seed)
    ids = [c.pk for c in campaigns]
    assert CampaignTally.objects.values("hour").distinct().count() >= 3  # several hours
    assert tallied(ids, last) == scanned(ids, last)
    assert set(tallied(ids, last)) == set(ids)


@pytest.mark.parametrize("redundancy", [1, 2, 4, 9])
def test_a_redundancy_changed_afterwards_counts_as_the_scan_does(redundancy) -> None:
    campaign = CampaignFactory(redundancy=3)
    last = history_store([campaign], seed=redundancy, pairs=400)
    Campaign.objects.filter(pk=campaign.pk).update(redundancy=redundancy)
    assert tallied([campaign.pk], last) == scanned([campaign.pk], last)


def test_gold_items_and_campaigns_without_judgments_have_no_numbers() -> None:
    campaign, idle = CampaignFactory(), CampaignFactory()
    gold = ItemFactory(campaign=campaign, gold={"empathy": [3]})
    assignment = AssignmentFactory(campaign=campaign)
    Judgment.objects.create(
        item=gold,
        worker=assignment.worker,
        assignment=assignment,
        question="q",
        value=1,
        time_spent_ms=1,
    )
    assert campaign_tallies([campaign.pk, idle.pk], now=NOW) == {}
    assert tallies_rebuild([campaign.pk, idle.pk]) == 0
    assert judgment_scan([campaign.pk, idle.pk], NOW) == {}


def test_rebuild_and_the_upgrade_migration_count_what_the_submissions_counted() -> None:
    campaigns = [CampaignFactory(redundancy=2), CampaignFactory(redundancy=3)]
    last = history_store(campaigns, seed=7)
    ids = [c.pk for c in campaigns]
    added = tallied(ids, last)
    rows = tallies_rebuild(ids[:1])
    assert rows == CampaignTally.objects.filter(campaign=ids[0]).count() > 0
    assert tallied(ids, last) == added
    tallies_rebuild()
    assert tallied(ids, last) == added
    migration = importlib.import_module("annotation.migrations.0008_campaign_tallies")
    CampaignTally.objects.all().delete()

    class SchemaEditor:
        pass

    editor = SchemaEditor()
    editor.connection = connection  # type: ignore[attr-defined]
    migration._fill(None, editor)
    assert tallied(ids, last) == added == scanned(ids, last)


def test_the_last_hour_is_this_hour_plus_the_part_of_the_previous_hour_still_in_it() -> None:
    campaign = CampaignFactory()
    this_hour = hour_of(NOW)  # NOW is half past
    for at, n in [
        (this_hour - timedelta(hours=2), 100),  # outside the window
        (this_hour - timedelta(minutes=45), 10),  # the previous hour: half of it counts
        (this_hour + timedelta(minutes=5), 4),
        (NOW, 3),
    ]:
        tally_add(campaign_id=campaign.pk, worker_id=1, level=1, judgments=n, now=at)
    tally = campaign_tallies([campaign.pk], now=NOW)[campaign.pk]
    assert tally.recent == pytest.approx(4 + 3 + 10 * 0.5)
    assert tally.judgments == 117 and tally.done == 4
    assert tally.first == this_hour - timedelta(hours=2) and tally.last == NOW
    next_hour = campaign_tallies([campaign.pk], now=this_hour + timedelta(hours=1))[campaign.pk]
    assert next_hour.recent == pytest.approx(4 + 3)  # the whole previous hour, nothing yet


def test_a_pair_adds_to_its_shard_and_level_only() -> None:
    campaign = CampaignFactory()
    for worker_id in (3, 11, 4):
        tally_add(campaign_id=campaign.pk, worker_id=worker_id, level=2, judgments=3, now=NOW)
    rows = sorted(CampaignTally.objects.values_list("shard", "level", "pairs", "judgments"))
    assert rows == [(3, 2, 2, 6), (4, 2, 1, 3)]
    with pytest.raises(ValueError):
        tally_add(campaign_id=campaign.pk, worker_id=1, level=0, judgments=1, now=NOW)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_submissions_add_up_exactly_on_postgresql() -> None:
    campaign = CampaignFactory()
    threads_n, per_thread = 16, 25
    barrier = threading.Barrier(threads_n)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            barrier.wait()
            for k in range(per_thread):
                with transaction.atomic():
                    # two workers per shard, every level and hour contended by many threads
                    tally_add(
                        campaign_id=campaign.pk,
                        worker_id=n,
                        level=1 + k % 2,
                        judgments=3,
                        now=NOW + timedelta(hours=k % 3),
                    )
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    tally = campaign_tallies([campaign.pk], now=NOW + timedelta(hours=3))[campaign.pk]
    assert tally.judgments == 3 * threads_n * per_thread
    assert tally.done == threads_n * per_thread  # levels 1 and 2, redundancy 3
    assert CampaignTally.objects.filter(campaign=campaign).count() == 8 * 2 * 3
