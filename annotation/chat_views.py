"""The live chat page (ED collection, interactive SSA); the task view sends chat studies here.

The page is rendered once; everything after that goes over the websocket
(``annotation.consumers``). Like every worker page it relies on no cookie: the websocket URL
carries the provider parameters and the signed assignment token.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from annotation.chat.seats import chat_arrive, protocol_of
from annotation.models import Campaign
from annotation.payments import arrival_verify
from annotation.providers import Arrival, arrival_query
from annotation.services import Visit, assignment_token


def chat_page(request: HttpRequest, campaign: Campaign, arrival: Arrival) -> HttpResponse:
    """Render the chat page for the arriving worker (or the preview, or the end screen).

    Raises AnnotationError for the task view to turn into a message page.
    """
    protocol, parameters = protocol_of(campaign)
    query = urlencode(arrival_query(arrival))
    context = {"campaign": campaign, "protocol": protocol, "parameters": parameters}
    if arrival.preview:
        return render(request, "annotation/chat.html", context | {"preview": True})
    arrival_verify(campaign=campaign, arrival=arrival)
    visit = chat_arrive(campaign=campaign, arrival=arrival)
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
    }
    return render(request, "annotation/chat.html", context)


def visit_of(visit: object) -> Visit:
    """Return the task pages' Visit for an arrival with nothing to do."""
    return Visit(kind=getattr(visit, "kind", "nothing"), stop=getattr(visit, "stop", ""))
