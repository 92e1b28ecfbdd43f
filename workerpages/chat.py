"""The live chat page (ED collection, interactive SSA, the arena); the task view sends chat
studies here.

The page is rendered once; everything after that goes over the websocket
(``chat.consumers``). Like every worker page it relies on no cookie: the websocket URL
carries the provider parameters and the signed assignment token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from annotation.models import Campaign
from annotation.services import Visit, assignment_token
from chat.seats import chat_arrive, protocol_of
from providers import Arrival, arrival_query
from recruitment.services import arrival_verify
from workerpages.helpers import personal_link


def chat_page(request: HttpRequest, campaign: Campaign, arrival: Arrival) -> HttpResponse:
    """Render the chat page for the arriving worker (or the preview, or the end screen).

    Raises AnnotationError for the task view to turn into a message page.
    """
    protocol, parameters = protocol_of(campaign)
    context = {"campaign": campaign, "protocol": protocol, "parameters": parameters}
    if arrival.preview:
        return render(request, "annotation/chat.html", context | {"preview": True})
    arrival, _worker = arrival_verify(campaign=campaign, arrival=arrival)
    query = urlencode(arrival_query(arrival))
    context["personal_link"] = personal_link(request, arrival)
    visit = chat_arrive(
        campaign=campaign, arrival=arrival, another=request.GET.get("another") == "1"
    )
    if visit.kind in ("nothing", "stopped"):
        return render(request, "annotation/nothing.html", context | {"visit": visit_of(visit)})
    assert visit.assignment is not None
    token = assignment_token(visit.assignment)
    done_url = (
        reverse("annotation:task_done", args=[campaign.slug])
        + f"?{query}&"
        + urlencode({"token": token})
    )
    if visit.kind == "done":
        return redirect(done_url)
    ws_path = reverse("annotation:task", args=[campaign.slug]).replace("/task/", "/ws/chat/", 1)
    context |= {
        "ws_path": f"{ws_path}?{query}&{urlencode({'token': token})}",
        "done_url": done_url,
        "seat_key": f"chat-{visit.seat.pk if visit.seat else 0}",
        "strings": chat_strings(parameters),
    }
    return render(request, "annotation/chat.html", context)


def chat_strings(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Return the sentences chat.js writes, in the active language (the campaign's); the page
    carries them as JSON (``json_script``), placeholders as ``%(name)s``."""
    return {
        "connected": _("Connected"),
        "disconnected": _("Disconnected"),
        "reconnecting": _("Connection lost; reconnecting…"),
        "thank_you": _("Thank you!"),
        "chat_ended": _("The chat has ended"),
        "you": _("You"),
        "partner": _("Partner"),
        "chatbot": _("Chatbot"),
        "your_message": _("Your message"),
        # The word counter: English and German need only the forms for 1 and for more.
        "words_one": ngettext("%(n)s word", "%(n)s words", 1),
        "words_other": ngettext("%(n)s word", "%(n)s words", 2),
        **_pair_strings(parameters),
        **_bot_strings(),
        **_arena_strings(),
    }


def _pair_strings(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The sentences of a chat between two workers (ED: the situation, the rounds, roles)."""
    return {
        "partner_arrived": _("Your partner arrived: the conversation begins."),
        "partner_arrived_title": _("Your partner arrived"),
        "you_ended": _("You ended conversation %(round)s."),
        "reached": _("Conversation %(round)s reached its %(most)s messages and ended."),
        "partner_ended": _("Your partner ended conversation %(round)s."),
        "next_round": _("Conversation %(round)s begins: now you are the %(role)s."),
        "speaker": _("Speaker"),
        "listener": _("Listener"),
        "situation_help_range": _(
            "1 to %(sentences)s sentences, between %(least)s and %(most)s words. Please write "
            "it yourself: do not paste text."
        ),
        "situation_help_most": _(
            "1 to %(sentences)s sentences, at most %(most)s words. Please write it yourself: "
            "do not paste text."
        ),
        "wait_limit": _(
            "If no one arrives within %(minutes)s minutes, you will be released and paid for "
            "your time."
        ),
        "pair_heading": _("Conversation %(round)s of %(rounds)s: you are the %(role)s"),
        "role_speaker": _(
            "Start the conversation about your situation below; your partner does not see it."
        ),
        "role_listener": _(
            "Your partner will talk about something that happened to them. Listen and "
            "respond with empathy; you do not know their situation."
        ),
        "my_situation": _("Your situation (%(emotion)s): %(text)s"),
        "pair_count_early": _(
            "Messages: %(n)s of %(least)s–%(most)s · either of you can end the conversation "
            "from %(least)s"
        ),
        "pair_count_ready": _(
            "Messages: %(n)s of %(least)s–%(most)s · either of you can end it now"
        ),
        "wait_partner": _("Please wait for your partner's message."),
        "end_pair": _("End this conversation"),
        # ED's feelings as the worker reads them (the values sent stay the stored labels).
        "emotions": {e: _(e) for e in parameters.get("emotions", [])},
    }


def _bot_strings() -> dict[str, str]:
    """The sentences of a chat with a model (interactive SSA: turns, labels)."""
    return {
        "bot_heading": _("Chat with the chatbot (turn %(turns)s of at least %(least)s)"),
        "bot_help": _(
            "Talk about anything you like. After each reply of the chatbot, say whether it "
            "makes sense and whether it is specific."
        ),
        "bot_count_early": _(
            "Turns: %(turns)s · you can end the chat after %(least)s (at most %(most)s)"
        ),
        "bot_count_ready": _("Turns: %(turns)s · you can end the chat now (at most %(most)s)"),
        "wait_bot": _("Please wait for the chatbot's reply."),
        "label_first": _("Label the reply first."),
        "end_bot": _("End the chat"),
    }


def _arena_strings() -> dict[str, str]:
    """The sentences of an arena chat (two hidden chatbots, votes, the reveal)."""
    return {
        "arena_heading": _("Two chatbots, A and B (exchange %(turns)s of at most %(most)s)"),
        "arena_help": _(
            "Write a message: both chatbots answer it. Each sees only its own side of the "
            "conversation. Vote for the better answer; the names are revealed at the end."
        ),
        "arena_count": _("Exchanges: %(turns)s · at least %(least)s, at most %(most)s"),
        "wait_both": _("Please wait for both answers."),
        "vote_first": _("Vote on the answers first."),
        "arena_last": _("The conversation has reached its longest: vote to finish."),
        "vote": _("Vote"),
        "vote_end": _("Vote and finish"),
        "end_arena": _("Finish the conversation"),
        "revealed": _("Chatbot A was %(a)s; chatbot B was %(b)s."),
    }


def visit_of(visit: object) -> Visit:
    """Return the task pages' Visit for an arrival with nothing to do."""
    return Visit(kind=getattr(visit, "kind", "nothing"), stop=getattr(visit, "stop", ""))
