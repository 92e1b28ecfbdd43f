"""The arena's conversations: two hidden models, votes held until the end, the reveal, the
fair end when a model fails, the pair draw."""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from annotation.models import Dialogue, Item, Judgment, Utterance
from annotation.protocols import registry
from annotation.selectors import campaign_report
from annotation.services import WITHDRAWN, campaign_create, campaign_set_status, worker_forget
from chat import arena, arena_votes
from chat.arena_start import pair_counts, pair_next, vote_matrices
from chat.frames import OutOfTurn
from chat.models import ChatSeat
from chat.seats import chat_arrive
from chat.snapshot import chat_state
from evalsite.errors import Conflict, InvalidAnswer, InvalidParameters
from modelhub.services import endpoint_register
from providers import Arrival

MODELS = ["bot-x", "bot-y", "bot-z"]


def arena_campaign(slug: str = "arena", **parameters):
    campaign = campaign_create(
        slug=slug,
        name="Arena",
        protocol="arena",
        parameters={"models": MODELS, "heartbeat_s": 1, **parameters},
        controls={"open_links": True},
    )
    return campaign_set_status(campaign=campaign, status="live")


@pytest.fixture
def bots(db):
    for name in MODELS:
        endpoint_register(name=name, backend="generic_bot")


def _arrive(campaign, worker="w1"):
    visit = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id=worker))
    assert visit.kind == "chat", visit
    return visit.seat


def _exchange(seat, n: int, text: str = "Tell me about the sea."):
    """Send message ``n`` (1-based) and let both sides answer."""
    sent = arena.arena_message_send(seat_id=seat.pk, client_id=f"c{n}", text=text, signals={})
    side_a = Dialogue.objects.get(pk=seat.dialogue_id)
    for dialogue_id in (side_a.pk, side_a.metadata["battle"]["b"]):
        result = arena.arena_reply_run(dialogue_id=dialogue_id, index=sent.index + 1)
        assert result["stored"], result
    return sent


def _vote(seat, turn, winner="a", **extra):
    later = timezone.now() + timedelta(seconds=30)
    return arena_votes.vote_submit(
        seat_id=seat.pk, turn=turn, answers={"winner": winner, **extra}, now=later
    )


def test_a_message_reaches_both_models_and_each_sees_only_its_own_side(bots):
    seat = _arrive(arena_campaign())
    _exchange(seat, 1)
    side_a = Dialogue.objects.get(pk=seat.dialogue_id)
    side_b = Dialogue.objects.get(pk=side_a.metadata["battle"]["b"])
    assert {side_a.metadata["model"], side_b.metadata["model"]} == {
        seat.endpoint,
        seat.endpoint_b,
    }
    assert seat.endpoint != seat.endpoint_b
    for side in (side_a, side_b):
        assert list(side.utterances.values_list("speaker", flat=True)) == ["user", "bot"]
    state = chat_state(seat_id=seat.pk)
    assert state["needs_vote"] == 1 and not state["your_turn"]
    assert state["revealed"] is None
    assert [s["label"] for s in state["sides"]] == ["A", "B"]


def test_votes_become_judgments_only_when_the_conversation_completes_then_models_revealed(bots):
    campaign = arena_campaign(min_turns=2, max_turns=3)
    seat = _arrive(campaign)
    _exchange(seat, 1)
    with pytest.raises(OutOfTurn, match="vote"):
        arena.arena_message_send(seat_id=seat.pk, client_id="c2", text="More?", signals={})
    _vote(seat, 1, "a", reason="clearer")
    assert not Judgment.objects.exists()  # held on the conversation, not counted yet
    with pytest.raises(OutOfTurn, match="2 exchanges"):
        arena_votes.arena_end(seat_id=seat.pk, now=timezone.now() + timedelta(seconds=60))
    _exchange(seat, 2)
    _vote(seat, 2, "tie")
    arena_votes.arena_end(seat_id=seat.pk, now=timezone.now() + timedelta(seconds=60))
    seat.refresh_from_db()
    assert seat.stage == ChatSeat.Stage.DONE
    votes = dict(Judgment.objects.filter(question="winner").values_list("item__key", "value"))
    assert votes == {f"arena-{seat.pk}/1": "a", f"arena-{seat.pk}/2": "tie"}
    item = Item.objects.get(key=f"arena-{seat.pk}/2")
    assert item.payload["turn"] == 2 and len(item.payload["conversation_a"]) == 4
    assert registry.get("arena").clean_item(item.payload) == item.payload
    state = chat_state(seat_id=seat.pk)
    assert state["revealed"] == {"a": seat.endpoint, "b": seat.endpoint_b}


def test_a_vote_after_the_reveal_is_refused_and_counts_nowhere(bots):
    campaign = arena_campaign(vote="end")
    seat = _arrive(campaign)
    _exchange(seat, 1)
    _vote(seat, 1, "b")  # the one vote of an "end" conversation: it completes it
    assert chat_state(seat_id=seat.pk)["revealed"] is not None
    with pytest.raises(Conflict):
        _vote(seat, 1, "a")  # another vote on the same exchange after the reveal
    with pytest.raises(OutOfTurn, match="revealed"):
        _vote(seat, 2, "a")
    assert list(Judgment.objects.values_list("value", flat=True)) == ["b"]
    report = campaign_report(campaign)
    assert report.tables["pairs"]["n"].sum() == 1


def test_a_model_that_fails_ends_the_conversation_fairly(bots):
    campaign = arena_campaign(min_turns=1, max_turns=3)
    seat = _arrive(campaign)
    _exchange(seat, 1)
    _vote(seat, 1, "a")
    sent = arena.arena_message_send(seat_id=seat.pk, client_id="c2", text="And?", signals={})
    side_a = Dialogue.objects.get(pk=seat.dialogue_id)
    assert arena.arena_fail(dialogue_id=side_a.pk, index=sent.index + 1, error="boom")
    seat.refresh_from_db()
    assert seat.stage == ChatSeat.Stage.FAILED and seat.assignment.status == "submitted"
    assert set(Dialogue.objects.values_list("status", flat=True)) == {"partial"}
    assert not Judgment.objects.exists() and not Item.objects.exists()
    # The other side's late reply is dropped; the worker can no longer vote.
    b = side_a.metadata["battle"]["b"]
    assert not arena.arena_reply_run(dialogue_id=b, index=sent.index + 1)["stored"]
    with pytest.raises(OutOfTurn, match="ended"):
        _vote(seat, 2, "b")
    report = campaign_report(campaign)
    models = report.tables["models"].set_index("model")
    assert models.loc[side_a.metadata["model"], "failed"] == 1
    assert any("ended early because a model failed" in n for n in report.notes)


def test_a_reply_past_the_deadline_fails_the_conversation(bots):
    seat = _arrive(arena_campaign(reply_deadline_s=5))
    arena.arena_message_send(seat_id=seat.pk, client_id="c1", text="Hello", signals={})
    assert arena.arena_expire(seat_id=seat.pk, now=timezone.now()) == []
    later = timezone.now() + timedelta(seconds=6)
    assert arena.arena_expire(seat_id=seat.pk, now=later) == [seat.pk]
    seat.refresh_from_db()
    assert seat.stage == ChatSeat.Stage.FAILED and seat.ended_reason == "bot_timeout"


def test_bad_votes_are_refused_and_change_nothing(bots):
    seat = _arrive(arena_campaign())
    _exchange(seat, 1)
    with pytest.raises(InvalidAnswer):
        _vote(seat, 1, "c")
    with pytest.raises(InvalidAnswer):
        _vote(seat, 1, "a", reason="x" * 3000)
    with pytest.raises(OutOfTurn):
        _vote(seat, 2, "a")  # no such exchange yet
    _vote(seat, 1, "a")
    _vote(seat, 1, "a")  # the same vote again: nothing new
    with pytest.raises(Conflict):
        _vote(seat, 1, "b")
    side_a = Dialogue.objects.get(pk=seat.dialogue_id)
    assert list(side_a.metadata["battle"]["votes"]) == ["1"]


def test_messages_are_rate_limited_per_minute(bots):
    seat = _arrive(arena_campaign(messages_per_minute=1, vote="end", max_turns=5))
    _exchange(seat, 1)
    with pytest.raises(OutOfTurn, match="very fast"):
        arena.arena_message_send(seat_id=seat.pk, client_id="c2", text="Again", signals={})


def test_a_moderation_hook_refuses_a_message_before_any_model_sees_it(bots, settings):
    settings.EVALSITE_MODERATION = {"strict": "tests.chat.test_arena:no_sea"}
    seat = _arrive(arena_campaign(moderation="strict"))
    with pytest.raises(InvalidAnswer, match="no sea talk"):
        arena.arena_message_send(seat_id=seat.pk, client_id="c1", text="The sea!", signals={})
    assert not Dialogue.objects.get(pk=seat.dialogue_id).utterances.exists()
    arena.arena_message_send(seat_id=seat.pk, client_id="c1", text="Hello", signals={})


def no_sea(text: str) -> str | None:
    """A moderation hook of the tests: refuses any message about the sea."""
    return "no sea talk" if "sea" in text.lower() else None


def test_the_pair_draw_caps_each_pair_per_worker_and_covers_every_model_first(bots):
    campaign = arena_campaign(max_pair_per_worker=1, min_exposure=1)
    parameters = registry.get("arena").clean_parameters(campaign.parameters)
    seen = []
    for n in range(3):
        seat = _arrive(campaign, worker="w1") if n == 0 else None
        if seat is None:
            visit = chat_arrive(
                campaign=campaign,
                arrival=Arrival(provider="local", worker_id="w1"),
                another=True,
            )
            assert visit.kind == "chat"
            seat = visit.seat
        seen.append(frozenset((seat.endpoint, seat.endpoint_b)))
        ChatSeat.objects.filter(pk=seat.pk).update(stage=ChatSeat.Stage.DONE)
        seat.assignment.status = "submitted"
        seat.assignment.save(update_fields=["status"])
    assert len(set(seen)) == 3  # every pair once: the cap of 1 left no choice
    worker = ChatSeat.objects.first().worker
    assert (
        pair_next(
            campaign=campaign,
            parameters=parameters,
            models=MODELS,
            worker=worker,
            rng=random.Random(1),
        )
        is None
    )
    assert sum(pair_counts(campaign).values()) == 3


def test_forgetting_a_worker_erases_their_arena_texts_everywhere(bots):
    campaign = arena_campaign(min_turns=1, max_turns=3)
    done = _arrive(campaign, worker="gone")
    _exchange(done, 1, text="My secret plan for Tuesday.")
    _vote(done, 1, "a", reason="A understood my plan")
    arena_votes.arena_end(seat_id=done.pk, now=timezone.now() + timedelta(seconds=60))
    held = chat_arrive(
        campaign=campaign, arrival=Arrival(provider="local", worker_id="gone"), another=True
    ).seat
    _exchange(held, 1, text="Another secret.")
    _vote(held, 1, "b", reason="B kept my secret")  # held: this conversation never ends
    worker_forget(worker=done.worker, actor="test")
    everything = json.dumps(
        [list(Item.objects.values_list("payload", flat=True))]
        + [list(Judgment.objects.values_list("value", flat=True))]
        + [list(Dialogue.objects.values_list("metadata", flat=True))]
        + [list(Utterance.objects.values_list("text", flat=True))]
    )
    for text in ("secret", "plan", "understood"):
        assert text not in everything, text
    assert WITHDRAWN in everything


def test_adaptive_draws_read_the_votes_per_pair_and_steer_to_the_uncertain_pair(bots):

    campaign = arena_campaign(allocation="adaptive", adaptive_min_per_pair=0, min_exposure=0)
    # bot-x beats bot-y every time; bot-y and bot-z tie: x~y is decided, y~z is not.
    for n, (pair, winners) in enumerate(
        [(("bot-x", "bot-y"), "aaaa"), (("bot-y", "bot-z"), "ab"), (("bot-x", "bot-z"), "a")]
    ):
        with mock.patch("chat.seats.pair_next", return_value=pair):
            seat = _arrive(campaign, worker=f"v{n}")
        for turn, winner in enumerate(winners, start=1):
            _exchange(seat, turn)
            _vote(seat, turn, winner)
        arena_votes.arena_end(seat_id=seat.pk, now=timezone.now() + timedelta(seconds=90))
    wins, votes = vote_matrices(campaign, MODELS)
    assert votes.tolist() == [[0, 4, 1], [4, 0, 2], [1, 2, 0]]
    assert wins[0, 1] == 4 and wins[1, 2] == 1 and wins[2, 1] == 1
    parameters = registry.get("arena").clean_parameters(campaign.parameters)
    drawn = Counter(
        frozenset(
            pair_next(
                campaign=campaign,
                parameters=parameters,
                models=MODELS,
                worker=ChatSeat.objects.first().worker,
                rng=random.Random(seed),
            )
            or ()
        )
        for seed in range(200)
    )
    assert drawn[frozenset(("bot-y", "bot-z"))] > drawn[frozenset(("bot-x", "bot-y"))]


def test_an_attention_check_answers_for_one_side_hidden_from_its_model_and_checked(
    bots, monkeypatch
):
    from annotation.quality import gold_tallies
    from chat.arena import ATTENTION, model_turns

    campaign = arena_campaign(attention_rate=0.5, max_turns=3)
    draws = iter([0.1, 0.9])  # the first exchange is checked, the second is not
    monkeypatch.setattr("chat.arena.random.random", lambda: next(draws))
    monkeypatch.setattr("chat.arena.random.choice", lambda sides: sides[1])  # side B
    seat = _arrive(campaign)
    sent = arena.arena_message_send(seat_id=seat.pk, client_id="c1", text="Hi", signals={})
    side_a = Dialogue.objects.get(pk=seat.dialogue_id)
    side_b = Dialogue.objects.get(pk=side_a.metadata["battle"]["b"])
    check = side_b.utterances.get(index=1)
    assert check.signals == {ATTENTION: True} and '"B is better"' in check.text
    assert not side_b.metadata["pending"]  # no model was asked for side B
    assert arena.arena_reply_run(dialogue_id=side_a.pk, index=sent.index + 1)["stored"]
    state = chat_state(seat_id=seat.pk)
    assert state["needs_vote"] == 1 and state["sides"][1]["utterances"][1]["text"] == check.text
    _vote(seat, 1, "a")  # the check asked for B: failed
    _exchange(seat, 2, text="Tell me a joke.")
    # Side B's model saw only the second message: the checked exchange is left out whole.
    rows = list(side_b.utterances.order_by("index").values_list("text", "speaker", "signals"))
    assert model_turns(rows[:3]) == ["Tell me a joke."]
    _vote(seat, 2, "b")
    arena_votes.arena_end(seat_id=seat.pk, now=timezone.now() + timedelta(seconds=90))
    checked = Item.objects.get(key=f"arena-{seat.pk}/1")
    assert checked.attention and checked.gold == {"winner": ["b"]}
    tally = gold_tallies(campaign)[seat.worker_id]
    assert (tally.attention_answered, len(tally.attention_failed)) == (1, 1)
    # The report counts the real vote only.
    assert campaign_report(campaign).tables["pairs"]["n"].sum() == 1


def test_attention_checks_need_a_vote_after_every_exchange():
    protocol = registry.get("arena")
    with pytest.raises(InvalidParameters) as refused:
        protocol.clean_parameters({"models": MODELS, "attention_rate": 0.2, "vote": "end"})
    assert "vote 'each'" in refused.value.fields["attention_rate"]
    with pytest.raises(InvalidParameters) as refused:
        protocol.clean_parameters({"models": MODELS, "attention_text": "vote now, please"})
    assert "%(side)s" in refused.value.fields["attention_text"]
    assert protocol.clean_parameters({"models": MODELS, "attention_rate": 0.2})


def test_the_least_time_holds_the_end_until_it_has_passed(bots):
    seat = _arrive(arena_campaign(min_seconds=600, max_turns=1))
    _exchange(seat, 1)
    _vote(seat, 1, "a")  # the last exchange's vote, 30 s in: held, not the end
    seat.refresh_from_db()
    assert seat.stage == ChatSeat.Stage.CHATTING and chat_state(seat_id=seat.pk)["can_end"]
    with pytest.raises(OutOfTurn, match="more time"):
        arena_votes.arena_end(seat_id=seat.pk, now=timezone.now() + timedelta(seconds=60))
    assert not Judgment.objects.exists()
    arena_votes.arena_end(seat_id=seat.pk, now=timezone.now() + timedelta(seconds=601))
    assert Judgment.objects.count() == 1
