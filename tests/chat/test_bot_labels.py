"""Labels of a live chat's bot turns pass the checks every submitted answer passes."""

from datetime import timedelta

import pytest
from django.db.models import Count

from annotation.models import Item, Judgment
from annotation.quality import worker_soft_block
from annotation.services import campaign_settings_update
from chat import bot
from chat.seats import chat_arrive
from evalsite.errors import InvalidAnswer, NotAllowed
from modelhub.services import endpoint_register
from providers import Arrival
from tests.chat.helpers import ssa_campaign

LABELS = {"sensible": "yes", "specific": "no"}


def _labeled_turn(campaign):
    """Arrive, say something, let the bot answer; return the seat and the bot turn's index."""
    seat = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id="w1")).seat
    sent = bot.ssa_message_send(seat_id=seat.pk, client_id="c1", text="I love hiking.", signals={})
    bot.bot_turn_run(dialogue_id=seat.dialogue_id, index=sent.index + 1)
    return seat, sent.index + 1


@pytest.fixture
def campaign(db):
    endpoint_register(name="generic-bot", backend="generic_bot")
    return ssa_campaign(models=["generic-bot"])


def test_a_soft_blocked_worker_s_labels_are_refused_and_nothing_is_stored(campaign):
    seat, index = _labeled_turn(campaign)
    worker_soft_block(campaign=campaign, worker=seat.worker, reason="failed gold")
    with pytest.raises(NotAllowed, match="no more items"):
        bot.label_submit(seat_id=seat.pk, index=index, answers=LABELS)
    assert not Judgment.objects.exists()


def test_labels_sent_sooner_than_the_minimum_time_are_refused(campaign):
    campaign_settings_update(campaign=campaign, values={"min_seconds_per_item": 5})
    seat, index = _labeled_turn(campaign)
    shown = seat.dialogue.utterances.get(index=index).created_at
    with pytest.raises(InvalidAnswer, match="at least 5 s"):
        bot.label_submit(seat_id=seat.pk, index=index, answers=LABELS, now=shown)
    bot.label_submit(seat_id=seat.pk, index=index, answers=LABELS, now=shown + timedelta(seconds=6))
    assert Judgment.objects.filter(worker=seat.worker).count() == 2


def test_labels_keep_the_item_counters_and_the_tallies_exact(campaign):
    seat, index = _labeled_turn(campaign)
    bot.label_submit(seat_id=seat.pk, index=index, answers=LABELS)
    bot.label_submit(seat_id=seat.pk, index=index, answers=LABELS)  # again: stores nothing
    item = Item.objects.annotate(n=Count("judgments__worker", distinct=True)).get()
    assert (item.judged, item.claims, item.n) == (1, 1, 1)
    assert campaign.tallies.get().judgments == 2
