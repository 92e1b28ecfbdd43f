"""The training page: training items before the study, each answer followed by its feedback.

A worker reaches it after consenting (``views.task_consent``) when the campaign asks for
training (docs/protocols.md); the services in ``annotation.services.training`` keep the
attempts, and this page only shows them.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from annotation.models import Campaign
from annotation.protocols import registry
from annotation.ratelimits import SUBMIT, limited
from annotation.services import (
    consent_pending,
    training_answer,
    training_pending,
    training_presentation,
    training_state,
    worker_get_or_create,
)
from annotation.study_pages import TRAINING_FAILED, instructions_shown, markdown_safe
from evalsite.errors import AnnotationError, InvalidAnswer, NotAllowed
from providers import Arrival
from recruitment.services import arrival_verify
from workerpages.helpers import (
    arrival_of,
    framed,
    instructions_card,
    message_page,
    no_study,
    personal_link,
    question_fields,
    refused,
    script_strings,
    submitted_data,
    task_url,
)


@csrf_exempt  # as task_submit: workers in a provider's iframe have no session cookie
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
@limited(SUBMIT)
def task_training(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """The training: the next training item (GET); an answer, then its feedback (POST).

    Authenticated like the consent page (``arrival_verify``), after consent. Passed (or
    none to do): on to the items. Every attempt used: a polite end with the provider's
    return path, never a rejection.
    """
    if campaign is None or not campaign.is_live:
        return no_study(request)
    try:
        arrival = arrival_of(request)
        if arrival.preview:
            raise NotAllowed(_("This is a preview: accept the HIT to start."))
        arrival, _worker = arrival_verify(campaign=campaign, arrival=arrival)
        if consent_pending(campaign=campaign, arrival=arrival):
            return redirect(task_url(campaign, arrival, "task_consent"))
        if not training_pending(campaign=campaign, arrival=arrival):
            return redirect(task_url(campaign, arrival))
        if request.method == "POST":
            return _training_answered(request, campaign, arrival)
        worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
        again = request.GET.get("again") == "1"
        state = training_state(campaign=campaign, worker=worker, again=again)
    except AnnotationError as exc:
        return refused(request, exc)
    if state.failed:
        return _training_failed(request, arrival)
    return _training_page(request, campaign, arrival, state)


def _training_answered(request: HttpRequest, campaign: Campaign, arrival: Arrival) -> HttpResponse:
    data = submitted_data(request)
    answers = data.get("answers")
    try:
        if not isinstance(answers, dict):
            raise InvalidAnswer("'answers' must be an object of question → answer.")
        result = training_answer(
            campaign=campaign, arrival=arrival, item_id=data.get("item"), answers=answers
        )
    except InvalidAnswer as exc:
        worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
        state = training_state(campaign=campaign, worker=worker, again=True)
        return _training_page(
            request, campaign, arrival, state, errors=exc.fields, answers=answers,
            error_message=exc.message, status=400,
        )  # fmt: skip
    over = result.finished and not result.passed and result.attempts_left <= 0
    worker = result.attempt.worker
    context = {
        "campaign": campaign,
        "protocol_template": registry.get(campaign.protocol).template_name,
        "instructions_card": instructions_card(campaign),  # not shown: it hides the default
        "payload": result.feedback.item.payload,
        "shown": training_presentation(item=result.feedback.item, worker=worker),
        "result": result,
        "feedback": result.feedback,
        "explanation": mark_safe(markdown_safe(result.feedback.item.explanation)),
        "pass_mark": campaign.training_pass_mark,
        "next_url": task_url(campaign, arrival, "task" if result.passed else "task_training"),
        "over": _training_over(arrival) if over else "",
    }
    return framed(render(request, "annotation/training_feedback.html", context))


def _training_page(
    request: HttpRequest,
    campaign: Campaign,
    arrival: Arrival,
    state: Any,
    *,
    errors: dict[str, str] | None = None,
    answers: Any = None,
    error_message: str = "",
    status: int = 200,
) -> HttpResponse:
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    instructions = instructions_shown(campaign.protocol, parameters, campaign.instructions)
    context: dict[str, Any] = {
        "campaign": campaign,
        "state": state,
        "pass_mark": campaign.training_pass_mark,
        "instructions_card": mark_safe(markdown_safe(instructions)),
        "action": task_url(campaign, arrival, "task_training"),
        "again_url": task_url(campaign, arrival, "task_training") + "&again=1",
        "personal_link": personal_link(request, arrival),
    }
    if state.item is not None:
        context.update(
            protocol_template=protocol.template_name,
            payload=state.item.payload,
            shown=state.shown,
            fields=question_fields(
                protocol.questions(parameters),
                errors,
                answers if isinstance(answers, dict) else None,
            ),
            errors=errors or {},
            error_message=error_message,
            script_strings=script_strings(),
        )
    return framed(render(request, "annotation/training.html", context, status=status))


def _training_over(arrival: Arrival) -> str:
    return str(TRAINING_FAILED.get(arrival.provider, TRAINING_FAILED["local"]))


def _training_failed(request: HttpRequest, arrival: Arrival) -> HttpResponse:
    return message_page(request, _training_over(arrival), 200, title=_("The training is over"))
