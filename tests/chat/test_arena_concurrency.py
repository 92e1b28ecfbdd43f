"""The arena under concurrency, on PostgreSQL: arrivals at once never pass the conversations'
target or a worker's cap per pair; a final vote sent from two tabs at once completes the
conversation once (one judgment per vote); the two sides' replies stored at once both land."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Dialogue, Item, Judgment
from chat import arena, arena_votes
from chat.models import ChatSeat
from chat.seats import chat_arrive
from providers import Arrival
from tests.chat.test_arena import arena_campaign
from tests.concurrency import at_once

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def bots(transactional_db):
    from modelhub.services import endpoint_register

    for name in ("bot-x", "bot-y", "bot-z"):
        endpoint_register(name=name, backend="generic_bot")


def test_arrivals_at_once_never_pass_the_conversations_target(bots):
    campaign = arena_campaign(slug="arena-rush", conversations=4)
    counter = iter(range(100))

    def arrive():
        n = next(counter)
        arrival = Arrival(provider="local", worker_id=f"r{n}")
        return chat_arrive(campaign=campaign, arrival=arrival).kind

    kinds = Counter(at_once(arrive, 10))
    assert kinds == {"chat": 4, "nothing": 6}
    assert ChatSeat.objects.filter(campaign=campaign).count() == 4


def test_one_worker_in_several_tabs_never_meets_a_pair_past_the_cap(bots):
    campaign = arena_campaign(slug="arena-tabs", max_pair_per_worker=1, min_exposure=0)

    def arrive():
        arrival = Arrival(provider="local", worker_id="tabs")
        return chat_arrive(campaign=campaign, arrival=arrival, another=True).kind

    outcomes = at_once(arrive, 6)
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    pairs = Counter(frozenset(p) for p in ChatSeat.objects.values_list("endpoint", "endpoint_b"))
    assert pairs and max(pairs.values()) == 1  # three models: at most three conversations


def test_the_final_vote_from_two_tabs_at_once_completes_the_conversation_once(bots):
    campaign = arena_campaign(slug="arena-twice", vote="end")
    seat = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id="w")).seat
    sent = arena.arena_message_send(seat_id=seat.pk, client_id="c1", text="Hi both", signals={})
    side_a = Dialogue.objects.get(pk=seat.dialogue_id)
    sides = [side_a.pk, side_a.metadata["battle"]["b"]]

    # Both replies stored at once (two tasks, one per side): both land, neither is lost.
    def reply():
        side = sides.pop()
        return arena.arena_reply_run(dialogue_id=side, index=sent.index + 1)["stored"]

    assert at_once(reply, 2) == [True, True]
    later = timezone.now() + timedelta(seconds=30)

    def vote():
        return arena_votes.vote_submit(seat_id=seat.pk, turn=1, answers={"winner": "a"}, now=later)

    outcomes = at_once(vote, 4)
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert sorted(o for o in outcomes if o) == [[seat.pk]]  # one completed it; three: no-ops
    assert Item.objects.count() == 1 and Judgment.objects.count() == 1
    seat.refresh_from_db()
    assert seat.stage == ChatSeat.Stage.DONE
