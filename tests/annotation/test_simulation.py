"""The simulated crowd works through the real services."""

from django.db.models import Count

from annotation.models import Assignment, Judgment, Worker
from annotation.simulation import crowd_make, crowd_run
from tests.factories import CampaignFactory, ItemFactory


def test_crowd_fills_every_item_to_its_redundancy(db):
    campaign = CampaignFactory(redundancy=3, items_per_assignment=4)
    ItemFactory.create_batch(10, campaign=campaign)
    run = crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=1, spammer=1), seed=3)
    assert run.total == 30 and not run.errors
    per_item = Judgment.objects.values("item").annotate(n=Count("worker", distinct=True))
    assert {row["n"] for row in per_item} == {3}
    assert set(Worker.objects.values_list("provider", flat=True)) == {"simulated"}
    assert not Assignment.objects.filter(status="accepted", judgments__isnull=True).exists()


def test_crowd_stops_at_max_items(db):
    campaign = CampaignFactory(redundancy=2)
    ItemFactory.create_batch(5, campaign=campaign)
    run = crowd_run(campaign=campaign, workers=crowd_make(good=2, noisy=0, spammer=0), max_items=7)
    assert run.total == 7
    assert Judgment.objects.values("item", "worker").distinct().count() == 7


def test_crowd_make_builds_the_requested_mix():
    crowd = crowd_make(good=2, noisy=1, spammer=3)
    assert [w.reliability for w in crowd].count("spammer") == 3
    assert len({w.external_id for w in crowd}) == 6
