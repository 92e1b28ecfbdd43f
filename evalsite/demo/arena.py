"""The demo's arena: GenericBot, the retrieval bot and (when it was built) the tiny GPT-2, two at
a time and anonymous, voted by a simulated crowd through the same services as the websocket.

``demo-arena``: each simulated worker arrives (the pair is drawn as for anyone), writes one to
three of the demo corpus's opening turns, lets both models answer, votes on every exchange by
the demo's truth (how good each bot is, with a careful worker's noise) and finishes; the
leaderboard then has numbers, and the printed link opens a conversation for you beside them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotation.models import Campaign, Dialogue, Utterance
from annotation.protocols import Simulated, registry
from annotation.protocols.arena import ArenaProtocol
from annotation.selectors import campaign_report
from annotation.services import campaign_create, campaign_set_status
from chat import arena, arena_votes
from chat.models import ChatSeat
from chat.seats import chat_arrive
from evalsite.demo import demo_dialogues
from evalstats.reports import report_text, report_write
from modelhub.demo import STREAMING_BOT
from modelhub.models import ModelEndpoint
from providers import Arrival

ARENA = "demo-arena"
ARENA_MODELS = ("generic-bot", "retrieval-minilm")
# How good a careful worker finds each demo bot's replies (the simulated crowd's truth).
ARENA_TRUTH = {"generic-bot": 0.35, "retrieval-minilm": 0.7, STREAMING_BOT: 0.15}
CONVERSATIONS = 24


def arena_study_create() -> Campaign:
    """Create the demo arena once (live) and return it."""
    campaign = Campaign.objects.filter(slug=ARENA).first()
    if campaign is not None:
        return campaign
    streaming = ModelEndpoint.objects.filter(name=STREAMING_BOT).exists()
    models = [*ARENA_MODELS, *([STREAMING_BOT] if streaming else [])]
    campaign = campaign_create(
        slug=ARENA,
        name="Demo: arena, two anonymous chatbots side by side",
        protocol=ArenaProtocol.name,
        parameters={"models": models, "conversations": 500, "max_turns": 3, "n_boot": 200},
        controls={"open_links": True},  # anyone may try the demo
    )
    return campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)


def arena_crowd_simulate(*, campaign: Campaign, conversations: int, seed: int = 0) -> int:
    """Hold ``conversations`` voted conversations as simulated workers (once: a re-run adds
    none); return how many completed."""
    if campaign.dialogues.exists():
        return 0
    protocol = registry.get(campaign.protocol)
    assert isinstance(protocol, Simulated)
    parameters = protocol.clean_parameters(campaign.parameters)
    rng = random.Random(seed)
    openers = [d.utterances[0].text for d in demo_dialogues()]
    completed = 0
    for n in range(conversations):
        arrival = Arrival(provider="simulated", worker_id=f"sim-arena-{n + 1}")
        seat = chat_arrive(campaign=campaign, arrival=arrival).seat
        if seat is None or seat.stage != ChatSeat.Stage.CHATTING:
            continue
        exchanges = rng.randint(1, parameters["max_turns"])
        for turn in range(1, exchanges + 1):
            text = openers[(n * 3 + turn) % len(openers)]
            if not _both_answered(seat, text, turn):
                break  # a model failed: the conversation ended, the worker is paid
            answers = _vote(protocol, parameters, seat, turn, rng)
            arena_votes.vote_submit(seat_id=seat.pk, turn=turn, answers=answers)
        seat.refresh_from_db()
        if seat.stage == ChatSeat.Stage.CHATTING:
            arena_votes.arena_end(seat_id=seat.pk)
            completed += 1
        elif seat.stage == ChatSeat.Stage.DONE:
            completed += 1
    return completed


def _both_answered(seat: ChatSeat, text: str, turn: int) -> bool:
    """Send the worker's message and let both models answer; return whether both did."""
    sent = arena.arena_message_send(seat_id=seat.pk, client_id=f"sim-{turn}", text=text, signals={})
    side_a = Dialogue.objects.get(seats=seat)
    sides = [side_a.pk, side_a.metadata["battle"]["b"]]
    for dialogue_id in sides:
        # Without a broker the task already ran (eagerly); with one, answer here.
        arena.arena_reply_run(dialogue_id=dialogue_id, index=sent.index + 1)
    answered = Utterance.objects.filter(dialogue_id__in=sides, index=sent.index + 1).count()
    return answered == 2


def _vote(
    protocol: Simulated,
    parameters: dict[str, Any],
    seat: ChatSeat,
    turn: int,
    rng: random.Random,
) -> dict[str, str]:
    payload = {"model_a": seat.endpoint, "model_b": seat.endpoint_b}
    truth = {"quality": ARENA_TRUTH}
    return protocol.simulate_answers(parameters, payload, {}, truth, "good", rng)


def arena_study_run(*, seed: int, out: Path, write: Callable[[str], Any]) -> list[Campaign]:
    """Create the demo arena, let the simulated crowd vote, print and write its report."""
    campaign = arena_study_create()
    write("Simulated workers voting in the arena …")
    arena_crowd_simulate(campaign=campaign, conversations=CONVERSATIONS, seed=seed)
    report = campaign_report(campaign)
    write(report_text(report))
    for path in report_write(report, out, stem=campaign.protocol):
        write(f"wrote {path}")
    return [campaign]
