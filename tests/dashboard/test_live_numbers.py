"""The dashboard's live numbers come from tallies and equal a scan of the judgments.

END TO END: these tests submit through ``annotation.services.judgment_submit``, so they pass
only once the submission path calls ``annotation.tallies.tally_add`` for every stored
(item, worker) pair on a non-gold item (``_judgment_store``, under the item's row lock).
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign, CampaignTally, Judgment
from annotation.selectors import campaign_progress
from annotation.services import campaign_settings_update, items_add
from annotation.simulation import crowd_make, crowd_run
from dashboard.models import Job
from dashboard.selectors import campaign_rows, report_judgments
from tests.annotation.test_tallies import judgment_scan
from tests.factories import CampaignFactory, ItemFactory, likert_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_gold(researcher) -> Campaign:
    """A live Likert campaign with gold checks, part-judged by a simulated crowd."""
    campaign = CampaignFactory(owner=researcher, redundancy=3, items_per_assignment=3)
    ItemFactory.create_batch(8, campaign=campaign)
    items_add(
        campaign=campaign,
        items=[(f"gold-{i}", likert_payload(100 + i), {"fluency": [4, 5]}) for i in range(3)],
    )
    campaign_settings_update(campaign=campaign, values={"gold_rate": 0.3})
    crowd_run(campaign=campaign, workers=crowd_make(good=4, noisy=1, spammer=0), seed=5)
    return campaign


def test_submitted_judgments_show_on_the_dashboard_as_the_scan_counts_them(with_gold) -> None:
    assert Judgment.objects.filter(item__campaign=with_gold, item__gold__isnull=False).exists()
    now = timezone.now()
    done, judgments, recent, _, last = judgment_scan([with_gold.pk], now - timedelta(hours=1))[
        with_gold.pk
    ]
    row = campaign_rows([with_gold], now=now)[0]
    assert (row.done, row.judgments) == (done, judgments) and done > 0
    assert campaign_progress(with_gold).done == done
    # The tally's time is the first stored judgment's; its siblings' differ by microseconds.
    assert row.last_judgment_at is not None
    assert abs((row.last_judgment_at - last).total_seconds()) < 1
    assert row.per_hour == pytest.approx(recent * done / judgments, rel=0.01)


def test_a_lowered_redundancy_is_counted_as_the_scan_counts_it(with_gold) -> None:
    Campaign.objects.filter(pk=with_gold.pk).update(redundancy=1)
    with_gold.refresh_from_db()
    now = timezone.now()
    done = judgment_scan([with_gold.pk], now)[with_gold.pk][0]
    assert campaign_rows([with_gold], now=now)[0].done == done == campaign_progress(with_gold).done


def test_the_poll_reads_tallies_not_judgments_and_one_key_of_the_snapshot(
    client, researcher, with_gold, monkeypatch
) -> None:
    Job.objects.create(
        campaign=with_gold,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        finished_at=timezone.now(),
        result={"judgments": 41, "tables": [["x" * 100] * 100]},
    )
    assert report_judgments(with_gold) == 41
    client.force_login(researcher)

    def snapshot_loaded(*args):
        raise AssertionError("the poll decoded a whole report snapshot")

    monkeypatch.setattr(Job._meta.get_field("result"), "from_db_value", snapshot_loaded)
    with CaptureQueriesContext(connection) as queries:
        data = client.get(reverse("dashboard:progress", args=[with_gold.slug])).json()
    assert data["report_judgments"] == 41
    assert data["done"] == judgment_scan([with_gold.pk], timezone.now())[with_gold.pk][0]
    sql = "\n".join(q["sql"] for q in queries.captured_queries)
    assert Judgment._meta.db_table not in sql
    assert CampaignTally._meta.db_table in sql


def test_a_large_campaigns_item_count_is_cached_briefly_and_a_small_ones_is_exact(
    researcher, monkeypatch
) -> None:
    from django.core.cache import cache

    from dashboard import selectors

    # Never cache.clear(): with REDIS_URL the cache is a Redis database shared with others.
    large, small = CampaignFactory(owner=researcher), CampaignFactory(owner=researcher)
    ItemFactory.create_batch(6, campaign=large)
    ItemFactory.create_batch(2, campaign=small)
    monkeypatch.setattr(selectors, "ITEMS_CACHED_FROM", 5)
    assert [r.items for r in campaign_rows([large, small])] == [6, 2]
    ItemFactory(campaign=large), ItemFactory(campaign=small)
    with CaptureQueriesContext(connection) as queries:
        assert [r.items for r in campaign_rows([large, small])] == [6, 3]
    counted = [q["sql"] for q in queries.captured_queries if "annotation_item" in q["sql"]]
    assert len(counted) == 1 and f"IN ({small.pk})" in counted[0]
    cache.delete_many([selectors._items_key(c) for c in (large, small)])
    assert [r.items for r in campaign_rows([large, small])] == [7, 3]


def test_interactive_ssa_labels_count_in_the_live_numbers(researcher) -> None:
    import random

    from annotation.protocols import registry
    from chat import bot
    from chat.seats import chat_arrive
    from modelhub.services import endpoint_register
    from providers import Arrival
    from tests.chat.helpers import ssa_campaign

    endpoint_register(name="generic-bot", backend="generic_bot")
    campaign = ssa_campaign(models=["generic-bot"])
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    seat = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id="w1")).seat
    assert seat is not None and seat.dialogue_id is not None
    sent = bot.ssa_message_send(seat_id=seat.pk, client_id="c1", text="I love hiking.", signals={})
    bot.bot_turn_run(dialogue_id=seat.dialogue_id, index=sent.index + 1)
    answers = protocol.simulate_answers(
        parameters, {}, {}, {"sensible": True, "specific": False}, "good", random.Random(0)
    )
    bot.label_submit(seat_id=seat.pk, index=sent.index + 1, answers=dict(answers))
    stored = Judgment.objects.filter(item__campaign=campaign, item__gold__isnull=True).count()
    assert stored > 0
    assert campaign_rows([campaign])[0].judgments == stored
