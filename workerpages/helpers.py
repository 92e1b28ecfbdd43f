"""What the worker pages share: framing, message pages, arrivals, their URLs and form data.

The task, consent and withdrawal pages (``views``) and the training (``training_views``) live
inside the provider's iframe (MTurk) or a plain tab (Prolific, local) and rely on no cookie:
each answers through these, so every page is framed, refused and addressed alike.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import translation
from django.utils.functional import Promise
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotation.models import Campaign
from annotation.protocols import Question
from annotation.study_pages import markdown_safe
from evalsite.addresses import client_address
from evalsite.errors import AnnotationError, InvalidAnswer, TooMany
from providers import Arrival, arrival_parse, arrival_query

# Unknown, draft, paused and finished studies all answer this, so the address tells a
# visitor nothing about which studies exist.
NO_STUDY = gettext_lazy(
    "There is no open study at this address. If you were taking part, your answers so far "
    "are saved."
)


def framed(response: HttpResponse) -> HttpResponse:
    """Allow the page inside the providers' iframes, and nowhere else."""
    ancestors = " ".join(settings.WORKER_FRAME_ANCESTORS)
    response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
    return response


def message_page(
    request: HttpRequest, text: str | Promise, status: int, title: str = ""
) -> HttpResponse:
    """A page that only says ``text`` (JSON ``{"ok": false, "error"}`` to a JSON client)."""
    text = str(text)  # a lazy translation, in the language active now
    if wants_json(request):
        return JsonResponse({"ok": False, "error": text}, status=status)
    page = render(
        request,
        "annotation/message.html",
        {"title": title or _("Sorry"), "text": text},
        status=status,
    )
    return framed(page)


def no_study(request: HttpRequest) -> HttpResponse:
    """The page of an address with no open study, in the site's language whatever the
    campaign's, so that it tells a visitor nothing (NO_STUDY)."""
    with translation.override(settings.LANGUAGE_CODE):
        return message_page(request, NO_STUDY, 404)


def refused(request: HttpRequest, exc: AnnotationError) -> HttpResponse:
    """The page (or JSON error) of a refused request; a 429 says when to come back."""
    response = message_page(request, exc.message, exc.status_code)
    if isinstance(exc, TooMany):
        response["Retry-After"] = str(exc.retry_after)
    return response


def arrival_of(request: HttpRequest) -> Arrival:
    """Return who arrives, from the URL's provider parameters and the request's address."""
    return replace(arrival_parse(request.GET), address=client_address(request))


def wants_json(request: HttpRequest) -> bool:
    """Whether the client sent or accepts JSON (the page's script), not an HTML form."""
    return request.content_type == "application/json" or "application/json" in request.headers.get(
        "Accept", ""
    )


def task_url(campaign: Campaign, arrival: Arrival, name: str = "task") -> str:
    """The URL of the campaign's worker page ``name`` with the arrival's provider parameters."""
    return (
        reverse(f"annotation:{name}", args=[campaign.slug])
        + "?"
        + urlencode(arrival_query(arrival))
    )


def personal_link(request: HttpRequest, arrival: Arrival) -> str:
    """The address of this page with the arrival's key when the request came without it (an
    open link's first page; ``arrival_verify``), else "": the page's script puts it in the
    address bar, so that a reload or a bookmark comes back as this worker."""
    if request.method != "GET" or request.GET.get("key", "") == arrival.signature:
        return ""
    return request.path + "?" + urlencode(request.GET.dict() | arrival_query(arrival))


def script_strings() -> dict[str, str]:
    """The sentences task.js (and EmotionLines' script) write, in the page's language; the
    page carries them as JSON (``json_script``), placeholders as ``%(name)s``."""
    return {
        "wait": _("Please read carefully: you can answer in %(seconds)s s."),
        "too_fast": _(
            "Too fast: please think for at least %(seconds)s seconds about line %(line)s "
            "before answering (%(waited)s s so far). Your answer was not accepted."
        ),
    }


def question_fields(
    questions: list[Question], errors: dict[str, str] | None, answers: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Pair each question with its error and the worker's previous answer (as a string)."""
    errors, answers = errors or {}, answers or {}
    return [
        {"q": q, "error": errors.get(q.key, ""), "answer": str(answers.get(q.key, ""))}
        for q in questions
    ]


def instructions_card(campaign: Campaign) -> str:
    """The researcher's own instructions for the item pages, in place of the protocol's card
    ("" without them). Safe to mark: markdown_safe's output went through the sanitizer."""
    own = campaign.instructions.strip()
    return mark_safe(markdown_safe(campaign.instructions)) if own else ""


def submitted_data(request: HttpRequest) -> dict[str, Any]:
    """Return token, item and answers from a JSON body or an HTML form."""
    if request.content_type == "application/json":
        try:
            data = json.loads(request.body or b"{}")
        except (ValueError, RecursionError):  # RecursionError: nested too deeply
            raise InvalidAnswer("The request body is not valid JSON.") from None
        if not isinstance(data, dict):
            raise InvalidAnswer("The request body must be a JSON object.")
        return data
    fields = {k: v for k, v in request.POST.items() if k not in ("token", "item")}
    return {"token": request.POST.get("token"), "item": request.POST.get("item"), "answers": fields}
