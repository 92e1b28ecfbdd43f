"""The demo's live chat studies: interactive SSA with the demo bots, and ED collection.

``demo-ssa-chat``: workers chat with GenericBot, the retrieval bot and, when the tiny GPT-2 was
built, ``tiny-gpt2-chat``, whose replies stream into the page token by token; they label each
bot turn;
a few simulated workers hold conversations through the same services as the websocket (their
messages are the demo corpus's opening turns) so the report has numbers. ``demo-ed-chat``:
ED collection, empty, for you to try in two browser windows (README).
"""

from __future__ import annotations

import random

from annotation.models import Campaign, Utterance
from annotation.protocols import Simulated, registry
from annotation.protocols.empathetic_chat import EmpatheticChatProtocol
from annotation.protocols.ssa_interactive import InteractiveSSAProtocol
from annotation.services import campaign_create, campaign_set_status
from chat import bot
from chat.models import ChatSeat
from chat.seats import chat_arrive
from evalsite.demo import _spread, demo_dialogues
from modelhub.demo import STREAMING_BOT
from modelhub.models import ModelEndpoint
from providers import Arrival

SSA_CHAT = "demo-ssa-chat"
ED_CHAT = "demo-ed-chat"
SSA_CHAT_MODELS = ("generic-bot", "retrieval-minilm")
# How often a careful worker finds each demo bot's reply sensible and specific (GenericBot:
# Meena's 70% sensible, never specific).
CHAT_TRUTH = {
    "generic-bot": (0.7, 0.0),
    "retrieval-minilm": (0.6, 0.45),
    STREAMING_BOT: (0.2, 0.1),
}


def chat_studies_create() -> list[Campaign]:
    """Create the two live chat studies once (live) and return them."""
    campaigns = []
    streaming = ModelEndpoint.objects.filter(name=STREAMING_BOT).exists()
    ssa_models = [*SSA_CHAT_MODELS, *([STREAMING_BOT] if streaming else [])]
    for slug, name, protocol, parameters in (
        (
            SSA_CHAT,
            "Demo: chat with a bot and label its replies (interactive SSA)",
            InteractiveSSAProtocol.name,
            {"models": ssa_models, "n_boot": 200},
        ),
        (
            ED_CHAT,
            "Demo: empathetic dialogue collection (two workers)",
            EmpatheticChatProtocol.name,
            {},
        ),
    ):
        campaign = Campaign.objects.filter(slug=slug).first()
        if campaign is None:
            campaign = campaign_create(
                slug=slug,
                name=name,
                protocol=protocol,
                parameters=parameters,
                controls={"open_links": True},  # anyone may try the demo
            )
            campaign = campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
        campaigns.append(campaign)
    return campaigns


def ssa_chats_simulate(*, campaign: Campaign, per_model: int = 2, seed: int = 0) -> int:
    """Hold ``per_model`` conversations of 14 turns with each demo bot as simulated workers
    (once: a re-run adds none); return how many conversations were held."""
    if campaign.dialogues.exists():
        return 0
    protocol = registry.get(campaign.protocol)
    assert isinstance(protocol, Simulated)
    parameters = protocol.clean_parameters(campaign.parameters)
    rng = random.Random(seed)
    openers = [d.utterances[0].text for d in demo_dialogues()]
    held = 0
    for n in range(per_model * len(parameters["models"])):
        worker = f"sim-chat-{n + 1}"
        visit = chat_arrive(
            campaign=campaign, arrival=Arrival(provider="simulated", worker_id=worker)
        )
        seat = visit.seat
        if visit.kind != "chat" or seat is None or seat.stage != ChatSeat.Stage.CHATTING:
            continue
        for turn in range(7):
            text = openers[(n * 7 + turn) % len(openers)]
            sent = bot.ssa_message_send(
                seat_id=seat.pk, client_id=f"sim-{turn}", text=text, signals={}
            )
            index = sent.index + 1
            assert seat.dialogue_id is not None
            if not _bot_answered(seat_id=seat.pk, dialogue_id=seat.dialogue_id, index=index):
                break  # the bot failed every time: the worker ends the chat
            sensible_rate, specific_rate = CHAT_TRUTH.get(seat.endpoint, (0.5, 0.3))
            spread = _spread(f"{seat.pk}/{index}")
            truth = {"sensible": spread < sensible_rate, "specific": spread < specific_rate}
            answers = protocol.simulate_answers(parameters, {}, {}, truth, "good", rng)
            bot.label_submit(seat_id=seat.pk, index=index, answers=dict(answers))
        bot.ssa_end(seat_id=seat.pk)
        held += 1
    return held


BOT_ATTEMPTS = 3


def _bot_answered(*, seat_id: int, dialogue_id: int, index: int) -> bool:
    """Let the bot answer turn ``index``, asking again (as the page's button does) when its
    turn failed, e.g. the tiny GPT-2 ended its reply before a word; return whether it did."""
    for attempt in range(BOT_ATTEMPTS):
        if attempt:
            bot.bot_turn_retry(seat_id=seat_id)
        # Without a broker the task already ran (eagerly); with one, answer here.
        bot.bot_turn_run(dialogue_id=dialogue_id, index=index)
        if Utterance.objects.filter(dialogue_id=dialogue_id, index=index).exists():
            return True
    return False
