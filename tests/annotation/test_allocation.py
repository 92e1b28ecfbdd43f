"""Allocation: redundancy, leases, never the same item twice, and concurrency."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.db.models import Count
from django.utils import timezone

from annotation.allocation import item_next, leases_purge_expired
from annotation.models import Item, Judgment, Lease
from annotation.providers import Arrival
from annotation.services import assignment_start, judgment_submit, worker_visit
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


def test_fewest_claims_first_spreads_work_evenly(db):
    campaign = CampaignFactory(redundancy=3)
    ItemFactory.create_batch(4, campaign=campaign)
    got = [item_next(assignment=_assignment(campaign, f"w{i}")) for i in range(4)]
    assert len({i.pk for i in got}) == 4


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_workers_never_overfill_or_lose_judgments():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL")
    campaign = CampaignFactory(redundancy=3, items_per_assignment=4)
    ItemFactory.create_batch(40, campaign=campaign)
    stored: Counter[str] = Counter()
    errors: list[BaseException] = []
    barrier = threading.Barrier(50)

    def work(n: int) -> None:
        try:
            barrier.wait()
            arrival = Arrival(provider="local", worker_id=f"t{n}")
            while True:
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

    threads = [threading.Thread(target=work, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    per_item = Item.objects.filter(campaign=campaign).annotate(
        n=Count("judgments__worker", distinct=True)
    )
    assert max(i.n for i in per_item) <= 3
    assert all(i.n == 3 for i in per_item)  # the crowd was large enough to finish the job
    pairs = Judgment.objects.filter(item__campaign=campaign).values("item", "worker", "question")
    assert pairs.count() == len({tuple(p.values()) for p in pairs})
    # every successful submission is in the database: 3 questions per stored item answer
    assert Judgment.objects.filter(item__campaign=campaign).count() == 3 * sum(stored.values())
    assert sum(stored.values()) == 40 * 3
