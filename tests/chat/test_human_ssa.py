"""Human–human SSA: collected conversations become a static SSA campaign."""

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign, Dialogue, Utterance
from annotation.services import campaign_set_status, worker_get_or_create, worker_visit
from providers import Arrival
from tests.chat.helpers import ed_campaign

pytestmark = pytest.mark.django_db


def _conversation(campaign, key, texts, workers=(), **fields):
    dialogue = Dialogue.objects.create(campaign=campaign, key=key, **fields)
    for i, text in enumerate(texts):
        worker = workers[i % len(workers)] if workers else None
        Utterance.objects.create(
            dialogue=dialogue, index=i, speaker="speaker", text=text, worker=worker
        )
    return dialogue


def test_every_later_turn_of_complete_unflagged_conversations_becomes_an_item(capsys):
    source = ed_campaign()
    _conversation(source, "pair-1-1", ["I won!", "Wow, well done!", "Thanks."])
    _conversation(source, "pair-1-2", ["My cat is ill.", "Oh no."], flagged=True, flags=["paste"])
    _conversation(source, "pair-2-1", ["Guess what", "What?"], status="partial")
    call_command("chat_to_ssa", source.slug, "ed-human-ssa")
    assert "2 turns to label (5 workers each)" in capsys.readouterr().out
    campaign = Campaign.objects.get(slug="ed-human-ssa")
    assert (campaign.protocol, campaign.status, campaign.redundancy) == ("ssa", "draft", 5)
    payloads = dict(campaign.items.values_list("key", "payload"))
    assert payloads["pair-1-1/2"] == {
        "context": ["I won!", "Wow, well done!"],
        "response": "Thanks.",
        "model": "human",
        "example": "pair-1-1",
    }
    assert sorted(payloads) == ["pair-1-1/1", "pair-1-1/2"]


def test_a_campaign_without_complete_conversations_is_refused_and_nothing_created():
    source = ed_campaign()
    with pytest.raises(CommandError, match="no complete conversations"):
        call_command("chat_to_ssa", source.slug, "empty-ssa")
    with pytest.raises(CommandError, match="no campaign"):
        call_command("chat_to_ssa", "nope", "x")
    assert not Campaign.objects.filter(slug="empty-ssa").exists()


def test_the_workers_who_held_the_conversations_cannot_label_them():
    source = ed_campaign()
    ana, ben = (worker_get_or_create(provider="local", external_id=w) for w in ("ana", "ben"))
    _conversation(source, "pair-1-1", ["I won!", "Wow, well done!", "Thanks."], workers=[ana, ben])
    call_command("chat_to_ssa", source.slug, "ed-third-party")
    campaign = campaign_set_status(
        campaign=Campaign.objects.get(slug="ed-third-party"), status="live"
    )
    for author in ("ana", "ben"):
        visit = worker_visit(campaign=campaign, arrival=Arrival(provider="local", worker_id=author))
        assert (visit.kind, visit.stop) == ("stopped", "blocked")
    third = worker_visit(campaign=campaign, arrival=Arrival(provider="local", worker_id="cleo"))
    assert third.kind == "item"
