"""Allocation: redundancy, leases, never the same item twice, and concurrency."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.db.models import Count, F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.allocation import item_next, leases_purge_expired, leases_release
from annotation.models import Assignment, Campaign, Item, Judgment, Lease
from annotation.services import (
    assignment_complete,
    assignment_start,
    campaign_set_status,
    judgment_submit,
    worker_visit,
)
from providers import Arrival
from tests.factories import CampaignFactory, ItemFactory, WorkerFactory

ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}


def _assignment(campaign, name):
    worker = WorkerFactory(external_id=name)
    return assignment_start(campaign=campaign, worker=worker)


def test_reload_returns_the_same_leased_item(campaign):
    assignment = _assignment(campaign, "w1")
    first = item_next(assignment=assignment)
    assert item_next(assignment=assignment) == first
    assert Lease.objects.filter(worker=assignment.worker).count() == 1


@pytest.mark.postgres
def test_a_worker_holding_no_lease_is_leased_an_item_in_one_statement(campaign):
    assignment = _assignment(campaign, "w1")
    with CaptureQueriesContext(connection) as captured:
        item = item_next(assignment=assignment)
    assert item is not None and len(captured) == 1
    lease = Lease.objects.get(worker=assignment.worker)
    assert (lease.item_id, lease.assignment_id) == (item.pk, assignment.pk)
    assert lease.expires_at > timezone.now()
    item.refresh_from_db()
    assert (item.claims, item.judged, item.payload) == (1, 0, item.payload)
    # A reload with the lease held takes the general path and gives the same item.
    assert item_next(assignment=assignment) == item
    assert Item.objects.get(pk=item.pk).claims == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_campaign_going_live_refreshes_the_items_statistics_for_its_plan():
    """Without its items in the statistics the planner expected one item and read them all
    (docs/architecture.md, "Allocation in one statement"). ``last_analyze`` is set only by
    an explicit ANALYZE (autovacuum's is ``last_autoanalyze``), whatever earlier tests left."""
    campaign = CampaignFactory(status=Campaign.Status.DRAFT)
    ItemFactory.create_batch(300, campaign=campaign)

    def analyzed() -> dict[str, object]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT relname, last_analyze FROM pg_stat_user_tables"
                " WHERE relname IN ('annotation_item', 'annotation_lease')"
            )
            return dict(cursor.fetchall())

    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        started = cursor.fetchone()[0]
    assert all(at is None or at < started for at in analyzed().values())
    campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
    after = analyzed()
    assert set(after) == {"annotation_item", "annotation_lease"}
    assert all(at is not None and at >= started for at in after.values())


@pytest.mark.postgres
def test_gold_dosing_takes_the_general_path_and_a_full_campaign_gives_nothing(db):
    """Gold turns are drawn by the general path (tests/annotation/test_quality.py checks the
    rate); with no open item left, the one statement leases nothing and neither does it."""
    campaign = CampaignFactory(redundancy=1, gold_rate=0.5)
    ItemFactory(campaign=campaign, gold={"empathy": ["4"]})
    ItemFactory(campaign=campaign)
    with CaptureQueriesContext(connection) as captured:
        assert item_next(assignment=_assignment(campaign, "w1")) is not None
    assert not any(q["sql"].startswith("\nWITH held") for q in captured.captured_queries)
    full = CampaignFactory(redundancy=1)
    only = ItemFactory(campaign=full)
    assert item_next(assignment=_assignment(full, "w2")) == only
    assert item_next(assignment=_assignment(full, "w3")) is None
    assert Item.objects.get(pk=only.pk).claims == 1


def test_item_never_given_to_more_workers_than_redundancy(db):
    campaign = CampaignFactory(redundancy=2)
    item = ItemFactory(campaign=campaign)
    got = [item_next(assignment=_assignment(campaign, f"w{i}")) for i in range(3)]
    assert got == [item, item, None]


def test_item_never_given_to_the_same_worker_twice(db):
    campaign = CampaignFactory(redundancy=3, items_per_assignment=10)
    items = ItemFactory.create_batch(2, campaign=campaign)
    assignment = _assignment(campaign, "w1")
    seen = []
    while (item := item_next(assignment=assignment)) is not None:
        judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)
        seen.append(item)
    assert sorted(i.pk for i in seen) == sorted(i.pk for i in items)


def test_expired_lease_returns_the_item_to_the_pool(db):
    campaign = CampaignFactory(redundancy=1, lease_seconds=60)
    item = ItemFactory(campaign=campaign)
    first = _assignment(campaign, "w1")
    second = _assignment(campaign, "w2")
    assert item_next(assignment=first) == item
    assert item_next(assignment=second) is None
    later = timezone.now() + timedelta(seconds=61)
    assert item_next(assignment=second, now=later) == item


def test_late_answer_after_expiry_is_refused_when_the_item_went_to_others(db):
    campaign = CampaignFactory(redundancy=1, lease_seconds=60)
    item = ItemFactory(campaign=campaign)
    slow, fast = _assignment(campaign, "slow"), _assignment(campaign, "fast")
    item_next(assignment=slow)
    later = timezone.now() + timedelta(seconds=61)
    item_next(assignment=fast, now=later)
    judgment_submit(assignment=fast, item_id=item.pk, answers=ANSWERS, now=later)
    with pytest.raises(Exception, match="ran out"):
        judgment_submit(assignment=slow, item_id=item.pk, answers=ANSWERS, now=later)
    assert Judgment.objects.filter(item=item).values("worker").distinct().count() == 1


def test_late_answer_after_expiry_is_kept_while_the_item_has_room(db):
    campaign = CampaignFactory(redundancy=2, lease_seconds=60)
    item = ItemFactory(campaign=campaign)
    slow = _assignment(campaign, "slow")
    item_next(assignment=slow)
    later = timezone.now() + timedelta(seconds=61)
    result = judgment_submit(assignment=slow, item_id=item.pk, answers=ANSWERS, now=later)
    assert result.created


def test_purge_deletes_only_expired_leases(campaign):
    a1, a2 = _assignment(campaign, "w1"), _assignment(campaign, "w2")
    item_next(assignment=a1)
    item_next(assignment=a2)
    Lease.objects.filter(worker=a1.worker).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert leases_purge_expired() == 1
    assert list(Lease.objects.values_list("worker", flat=True)) == [a2.worker.pk]


def _assert_counters_exact(campaign) -> None:
    """Each item's ``judged`` and ``claims`` equal a recount of its judgments and leases."""
    for item in Item.objects.filter(campaign=campaign).annotate(
        n_judged=Count("judgments__worker", distinct=True),
        n_leases=Count("leases", distinct=True),
    ):
        assert (item.judged, item.claims) == (item.n_judged, item.n_judged + item.n_leases), item


def test_counters_follow_leases_judgments_expiry_and_closed_assignments(db):
    campaign = CampaignFactory(redundancy=2, items_per_assignment=3, lease_seconds=60)
    ItemFactory.create_batch(5, campaign=campaign)
    a, b, c = (_assignment(campaign, name) for name in ("a", "b", "c"))
    first = item_next(assignment=a)
    _assert_counters_exact(campaign)
    judgment_submit(assignment=a, item_id=first.pk, answers=ANSWERS)
    item_next(assignment=a)
    item_next(assignment=b)
    _assert_counters_exact(campaign)
    assignment_complete(assignment=a)  # closing releases a's live lease
    assert not Lease.objects.filter(assignment=a).exists()
    _assert_counters_exact(campaign)
    later = timezone.now() + timedelta(seconds=61)
    item_next(assignment=c, now=later)
    assert leases_purge_expired(now=later) == 1  # b's lease
    _assert_counters_exact(campaign)
    assert leases_release(Lease.objects.filter(assignment=c)) == 1
    assert leases_release(Lease.objects.filter(assignment=c)) == 0  # released once only
    _assert_counters_exact(campaign)
    assert Item.objects.filter(claims__gt=0).count() == 1  # the judged item


def test_a_lease_released_while_its_answer_is_on_the_way_is_not_counted_twice(db):
    campaign = CampaignFactory(redundancy=1, lease_seconds=60)
    item = ItemFactory(campaign=campaign)
    slow = _assignment(campaign, "slow")
    item_next(assignment=slow)
    later = timezone.now() + timedelta(seconds=61)
    assert leases_purge_expired(now=later) == 1
    with pytest.raises(Exception, match="ran out"):
        judgment_submit(assignment=slow, item_id=item.pk, answers=ANSWERS, now=later)
    _assert_counters_exact(campaign)
    assert not Judgment.objects.exists()


def test_the_next_item_is_drawn_at_random_not_in_key_order(db):
    campaign = CampaignFactory(redundancy=1, items_per_assignment=20)
    items = ItemFactory.create_batch(200, campaign=campaign)
    assignment = _assignment(campaign, "w1")
    got = []
    for _ in range(20):
        item = item_next(assignment=assignment)
        judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)
        got.append(item.pk)
    # In key order the worker would get the first 20 items; at random, 20 of 200 all among
    # them has probability 1 / C(200, 20).
    assert set(got) != {i.pk for i in items[:20]}
    assert len(set(got)) == 20


def test_workers_take_the_fewest_claimed_items_first(db):
    campaign = CampaignFactory(redundancy=3, items_per_assignment=50)
    ItemFactory.create_batch(30, campaign=campaign)
    for n in range(4):
        assignment = _assignment(campaign, f"w{n}")
        for _ in range(20):
            theirs = Item.objects.filter(campaign=campaign, claims__lt=3).exclude(
                judgments__worker=assignment.worker
            )
            fewest = min(theirs.values_list("claims", flat=True))
            item = item_next(assignment=assignment)
            assert item.claims - 1 == fewest  # the level it had before this lease
            judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)
    _assert_counters_exact(campaign)


def test_fewest_claims_first_spreads_work_evenly(db):
    campaign = CampaignFactory(redundancy=3)
    ItemFactory.create_batch(4, campaign=campaign)
    got = [item_next(assignment=_assignment(campaign, f"w{i}")) for i in range(4)]
    assert len({i.pk for i in got}) == 4


def _crowd(campaign, n_workers: int, *, prefix: str, max_items: int | None = None) -> Counter:
    """Run ``n_workers`` threads that take and answer items at once; return stored answers."""
    stored: Counter[str] = Counter()
    errors: list[BaseException] = []
    barrier = threading.Barrier(n_workers)

    def work(n: int) -> None:
        try:
            barrier.wait()
            arrival = Arrival(provider="local", worker_id=f"{prefix}{n}")
            while max_items is None or stored[arrival.worker_id] < max_items:
                visit = worker_visit(campaign=campaign, arrival=arrival)
                if visit.kind == "nothing":
                    break
                if visit.kind == "done":
                    continue
                result = judgment_submit(
                    assignment=visit.assignment, item_id=visit.item.pk, answers=ANSWERS
                )
                assert result.created
                stored[arrival.worker_id] += 1
        except BaseException as exc:  # reported below, with the thread's context
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    return stored


def _assert_integrity(campaign, stored: Counter) -> None:
    per_item = Item.objects.filter(campaign=campaign, judged__gt=0).annotate(
        n=Count("judgments__worker", distinct=True)
    )
    assert all(i.n <= campaign.redundancy and i.n == i.judged for i in per_item)
    pairs = Judgment.objects.filter(item__campaign=campaign).values("item", "worker", "question")
    assert pairs.count() == len({tuple(p.values()) for p in pairs})
    # every successful submission is in the database: 3 questions per stored item answer
    assert Judgment.objects.filter(item__campaign=campaign).count() == 3 * sum(stored.values())


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_workers_never_overfill_or_lose_judgments():
    campaign = CampaignFactory(redundancy=3, items_per_assignment=4)
    ItemFactory.create_batch(40, campaign=campaign)
    stored = _crowd(campaign, 50, prefix="t")
    _assert_integrity(campaign, stored)
    assert sum(stored.values()) == 40 * 3  # the crowd was large enough to finish the job
    assert set(Item.objects.filter(campaign=campaign).values_list("judged", flat=True)) == {3}
    assert not Lease.objects.exists()
    _assert_counters_exact(campaign)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_workers_on_a_hundred_thousand_items():
    campaign = CampaignFactory(redundancy=3, items_per_assignment=4)
    payload = ItemFactory.build().payload
    Item.objects.bulk_create(
        (Item(campaign=campaign, key=f"k{n}", payload=payload) for n in range(100_000)),
        batch_size=5000,
    )
    stored = _crowd(campaign, 50, prefix="h", max_items=6)
    assert sum(stored.values()) == 50 * 6
    _assert_integrity(campaign, stored)
    # Fewest claims first: 300 answers on 100,000 items never put two judges on one item.
    assert set(Item.objects.filter(judged__gt=0).values_list("judged", flat=True)) == {1}
    assert Item.objects.filter(judged=1).count() == 300
    assert Item.objects.filter(claims__gt=F("judged")).count() == Lease.objects.count()
    assert Assignment.objects.filter(campaign=campaign).count() >= 50
