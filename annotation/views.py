"""Worker pages: the task page, answer submission and the end screen.

These pages live inside the provider's iframe (MTurk) or a plain tab (Prolific, local). They
do not rely on cookies: the worker's identity comes from the URL's provider parameters and
each form carries a signed assignment token, which is why the submit view is CSRF-exempt
(third-party cookies are blocked in iframes, and the token already proves the sender).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.functional import Promise
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.chat_views import chat_page
from annotation.exceptions import AnnotationError, InvalidAnswer, NotAllowed, TooMany
from annotation.models import Campaign
from annotation.payments import arrival_verify, assignment_completion
from annotation.protocols import LiveChat, Question, registry
from annotation.providers import Arrival, arrival_parse, arrival_query
from annotation.ratelimits import ARRIVE, SUBMIT, limited
from annotation.services import (
    Visit,
    assignment_authorise,
    assignment_token,
    consent_give,
    consent_pending,
    judgment_submit,
    presentation_seed,
    training_answer,
    training_pending,
    training_presentation,
    training_state,
    worker_forget,
    worker_get_or_create,
    worker_visit,
)
from annotation.study_pages import (
    DECLINED,
    TRAINING_FAILED,
    instructions_shown,
    markdown_safe,
)
from evalsite.addresses import client_address

# Unknown, draft, paused and finished studies all answer this, so the address tells a
# visitor nothing about which studies exist.
NO_STUDY = gettext_lazy(
    "There is no open study at this address. If you were taking part, your answers so far "
    "are saved."
)


def _framed(response: HttpResponse) -> HttpResponse:
    """Allow the page inside the providers' iframes, and nowhere else."""
    ancestors = " ".join(settings.WORKER_FRAME_ANCESTORS)
    response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
    return response


def _message(
    request: HttpRequest, text: str | Promise, status: int, title: str = ""
) -> HttpResponse:
    text = str(text)  # a lazy translation, in the language active now
    if _wants_json(request):
        return JsonResponse({"ok": False, "error": text}, status=status)
    page = render(
        request,
        "annotation/message.html",
        {"title": title or _("Sorry"), "text": text},
        status=status,
    )
    return _framed(page)


def _no_study(request: HttpRequest) -> HttpResponse:
    """The page of an address with no open study, in the site's language whatever the
    campaign's, so that it tells a visitor nothing (NO_STUDY)."""
    with translation.override(settings.LANGUAGE_CODE):
        return _message(request, NO_STUDY, 404)


def _refused(request: HttpRequest, exc: AnnotationError) -> HttpResponse:
    """The page (or JSON error) of a refused request; a 429 says when to come back."""
    response = _message(request, exc.message, exc.status_code)
    if isinstance(exc, TooMany):
        response["Retry-After"] = str(exc.retry_after)
    return response


def _arrival(request: HttpRequest) -> Arrival:
    """Return who arrives, from the URL's provider parameters and the request's address."""
    return replace(arrival_parse(request.GET), address=client_address(request))


def _wants_json(request: HttpRequest) -> bool:
    return request.content_type == "application/json" or "application/json" in request.headers.get(
        "Accept", ""
    )


def _task_url(campaign: Campaign, arrival: Arrival, name: str = "task") -> str:
    return (
        reverse(f"annotation:{name}", args=[campaign.slug])
        + "?"
        + urlencode(arrival_query(arrival))
    )


def _render_visit(
    request: HttpRequest,
    campaign: Campaign,
    arrival: Arrival,
    visit: Visit,
    *,
    errors: dict[str, str] | None = None,
    answers: dict[str, Any] | None = None,
    error_message: str = "",
    status: int = 200,
) -> HttpResponse:
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    context: dict[str, Any] = {"campaign": campaign, "visit": visit, "arrival": arrival}
    if visit.kind == "done":
        assert visit.assignment is not None
        template = "annotation/done.html"
        context.update(
            completion=assignment_completion(assignment=visit.assignment),
            continue_url=_task_url(campaign, arrival)
            + ("&another=1" if isinstance(protocol, LiveChat) else ""),
            live_chat=isinstance(protocol, LiveChat),
            withdraw_url=_task_url(campaign, arrival, "task_withdraw")
            + "&"
            + urlencode({"token": assignment_token(visit.assignment)}),
        )
    elif visit.kind in ("nothing", "stopped"):
        template = "annotation/nothing.html"
    else:
        assert visit.item is not None and visit.assignment is not None
        template = "annotation/task.html"
        context.update(
            protocol=protocol,
            protocol_template=protocol.template_name,
            instructions_card=_instructions_card(campaign),
            payload=visit.item.payload,
            shown=protocol.presentation(
                parameters,
                visit.item.payload,
                presentation_seed(item=visit.item, worker=visit.assignment.worker),
            ),
            fields=_fields(protocol.questions(parameters), errors, answers),
            errors=errors or {},
            error_message=error_message,
            min_seconds=campaign.min_seconds_per_item,
            token=assignment_token(visit.assignment),
            submit_url=_task_url(campaign, arrival, "task_submit"),
            total=visit.assignment.items_target,
            script_strings=_script_strings(),
        )
    return _framed(render(request, template, context, status=status))


def _script_strings() -> dict[str, str]:
    """The sentences task.js (and EmotionLines' script) write, in the page's language; the
    page carries them as JSON (``json_script``), placeholders as ``%(name)s``."""
    return {
        "wait": _("Please read carefully: you can answer in %(seconds)s s."),
        "too_fast": _(
            "Too fast: please think for at least %(seconds)s seconds about line %(line)s "
            "before answering (%(waited)s s so far). Your answer was not accepted."
        ),
    }


def _fields(
    questions: list[Question], errors: dict[str, str] | None, answers: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Pair each question with its error and the worker's previous answer (as a string)."""
    errors, answers = errors or {}, answers or {}
    return [
        {"q": q, "error": errors.get(q.key, ""), "answer": str(answers.get(q.key, ""))}
        for q in questions
    ]


@xframe_options_exempt
@require_GET
@limited(ARRIVE)
def task(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """Show the worker their next item (or the preview, or the end screen)."""
    if campaign is None or not (campaign.is_live or _may_preview(request, campaign)):
        return _no_study(request)
    try:
        arrival = _arrival(request)
        if consent_pending(campaign=campaign, arrival=arrival):  # intro and consent first
            return redirect(_task_url(campaign, arrival, "task_consent"))
        if training_pending(campaign=campaign, arrival=arrival):  # then the training
            return redirect(_task_url(campaign, arrival, "task_training"))
        if isinstance(registry.get(campaign.protocol), LiveChat):
            return _framed(chat_page(request, campaign, arrival))
        if arrival.preview:
            return _preview(request, campaign)
        arrival_verify(campaign=campaign, arrival=arrival)
        visit = worker_visit(campaign=campaign, arrival=arrival)
    except AnnotationError as exc:
        return _refused(request, exc)
    return _render_visit(request, campaign, arrival, visit)


def _may_preview(request: HttpRequest, campaign: Campaign) -> bool:
    """Whether a researcher may look at the pages of a study that is not live (a draft, or a
    paused or finished one previewed from the dashboard); to anyone else such a campaign is
    like an unknown address: it tells a visitor nothing."""
    return request.user.is_staff


def _instructions_card(campaign: Campaign) -> str:
    """The researcher's own instructions for the item pages, in place of the protocol's card
    ("" without them). Safe to mark: markdown_safe's output went through the sanitizer."""
    own = campaign.instructions.strip()
    return mark_safe(markdown_safe(campaign.instructions)) if own else ""


def _preview(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    item = campaign.items.order_by("pk").first()
    context = {
        "campaign": campaign,
        "preview": True,
        "protocol_template": protocol.template_name,
        "instructions_card": _instructions_card(campaign),
        "payload": item.payload if item else None,
        "shown": protocol.presentation(parameters, item.payload, "preview") if item else {},
        "fields": _fields(protocol.questions(parameters), None, None),
        "total": campaign.items_per_assignment,
        "visit": Visit(kind="item", position=1),
        "script_strings": _script_strings(),
    }
    return _framed(render(request, "annotation/task.html", context))


@csrf_exempt
@xframe_options_exempt
@require_POST
@limited(SUBMIT)
def task_submit(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """Store the worker's answers to one item, then send them to the next page."""
    if campaign is None or not campaign.is_live:
        return _no_study(request)
    data: dict[str, Any] = {}
    try:
        arrival = _arrival(request)
        data = _submitted_data(request)
        assignment = assignment_authorise(
            campaign=campaign, arrival=arrival, token=str(data.get("token", ""))
        )
        answers = data.get("answers")
        if not isinstance(answers, dict):
            raise InvalidAnswer("'answers' must be an object of question → answer.")
        result = judgment_submit(assignment=assignment, item_id=data.get("item"), answers=answers)
    except InvalidAnswer as exc:
        if _wants_json(request):
            return JsonResponse(
                {"ok": False, "error": exc.message, "fields": exc.fields}, status=400
            )
        try:
            visit = worker_visit(campaign=campaign, arrival=arrival)
        except AnnotationError as again:
            return _refused(request, again)
        return _render_visit(
            request,
            campaign,
            arrival,
            visit,
            errors=exc.fields,
            answers=data.get("answers"),
            error_message=exc.message,
            status=400,
        )
    except AnnotationError as exc:
        return _refused(request, exc)
    if _wants_json(request):
        return JsonResponse(
            {"ok": True, "stored": result.created, "assignment_done": result.assignment_done}
        )
    if result.assignment_done:
        url = _task_url(campaign, arrival, "task_done") + "&" + urlencode({"token": data["token"]})
        return redirect(url)
    return redirect(_task_url(campaign, arrival))


@xframe_options_exempt
@require_GET
@limited(ARRIVE)
def task_done(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """End a finished assignment: MTurk's submit form, Prolific's redirect or a code."""
    if campaign is None:  # a finished study still shows its workers their completion
        return _no_study(request)
    try:
        arrival = _arrival(request)
        assignment = assignment_authorise(
            campaign=campaign, arrival=arrival, token=request.GET.get("token", "")
        )
        if assignment.is_open:
            raise NotAllowed(_("This assignment is not finished yet."))
        completion = assignment_completion(assignment=assignment)
    except AnnotationError as exc:
        return _refused(request, exc)
    if completion.kind == "redirect":
        return redirect(completion.url)
    return _render_visit(request, campaign, arrival, Visit(kind="done", assignment=assignment))


@csrf_exempt  # as task_submit: workers in a provider's iframe have no session cookie
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
@limited(ARRIVE)
def task_consent(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """The study's intro and consent page (GET); then "I agree" records the consent and
    goes on to the items, "I do not agree" ends with the provider's return path (POST).

    Authenticated like the task page (``arrival_verify``); nothing is stored before the
    worker agrees: no worker row, assignment or lease.
    """
    if campaign is None or not (campaign.is_live or _may_preview(request, campaign)):
        return _no_study(request)
    try:
        arrival = _arrival(request)
        if arrival.preview:
            raise NotAllowed(_("This is a preview: accept the HIT to start."))
        arrival_verify(campaign=campaign, arrival=arrival)
        agrees = request.method == "POST" and request.POST.get("choice") == "agree"
        if agrees and consent_pending(campaign=campaign, arrival=arrival):
            consent_give(campaign=campaign, arrival=arrival)
    except AnnotationError as exc:
        return _refused(request, exc)
    if request.method == "POST" and request.POST.get("choice") != "agree":
        text = str(DECLINED.get(arrival.provider, DECLINED["local"]))
        return _message(request, text, 200, title=_("You are not taking part"))
    if request.method == "POST" or not consent_pending(campaign=campaign, arrival=arrival):
        return redirect(_task_url(campaign, arrival))
    return _framed(render(request, "annotation/intro.html", _intro_context(campaign, arrival)))


def _intro_context(campaign: Campaign, arrival: Arrival) -> dict[str, Any]:
    instructions = instructions_shown(
        campaign.protocol,
        registry.get(campaign.protocol).clean_parameters(campaign.parameters),
        campaign.instructions,
    )
    # Safe to mark: markdown_safe's output went through the sanitizer (nh3).
    return {
        "campaign": campaign,
        "training": campaign.training_size,
        "pass_mark": campaign.training_pass_mark,
        "description": mark_safe(markdown_safe(campaign.description)),
        "instructions": mark_safe(markdown_safe(instructions)),
        "consent": mark_safe(markdown_safe(campaign.consent_text)),
        "action": _task_url(campaign, arrival, "task_consent"),
    }


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
        return _no_study(request)
    try:
        arrival = _arrival(request)
        if arrival.preview:
            raise NotAllowed(_("This is a preview: accept the HIT to start."))
        arrival_verify(campaign=campaign, arrival=arrival)
        if consent_pending(campaign=campaign, arrival=arrival):
            return redirect(_task_url(campaign, arrival, "task_consent"))
        if not training_pending(campaign=campaign, arrival=arrival):
            return redirect(_task_url(campaign, arrival))
        if request.method == "POST":
            return _training_answered(request, campaign, arrival)
        worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
        again = request.GET.get("again") == "1"
        state = training_state(campaign=campaign, worker=worker, again=again)
    except AnnotationError as exc:
        return _refused(request, exc)
    if state.failed:
        return _training_failed(request, arrival)
    return _training_page(request, campaign, arrival, state)


def _training_answered(request: HttpRequest, campaign: Campaign, arrival: Arrival) -> HttpResponse:
    data = _submitted_data(request)
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
        "instructions_card": _instructions_card(campaign),  # not shown: it hides the default
        "payload": result.feedback.item.payload,
        "shown": training_presentation(item=result.feedback.item, worker=worker),
        "result": result,
        "feedback": result.feedback,
        "explanation": mark_safe(markdown_safe(result.feedback.item.explanation)),
        "pass_mark": campaign.training_pass_mark,
        "next_url": _task_url(campaign, arrival, "task" if result.passed else "task_training"),
        "over": _training_over(arrival) if over else "",
    }
    return _framed(render(request, "annotation/training_feedback.html", context))


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
        "action": _task_url(campaign, arrival, "task_training"),
        "again_url": _task_url(campaign, arrival, "task_training") + "&again=1",
    }
    if state.item is not None:
        context.update(
            protocol_template=protocol.template_name,
            payload=state.item.payload,
            shown=state.shown,
            fields=_fields(
                protocol.questions(parameters),
                errors,
                answers if isinstance(answers, dict) else None,
            ),
            errors=errors or {},
            error_message=error_message,
            script_strings=_script_strings(),
        )
    return _framed(render(request, "annotation/training.html", context, status=status))


def _training_over(arrival: Arrival) -> str:
    return str(TRAINING_FAILED.get(arrival.provider, TRAINING_FAILED["local"]))


def _training_failed(request: HttpRequest, arrival: Arrival) -> HttpResponse:
    return _message(request, _training_over(arrival), 200, title=_("The training is over"))


WITHDRAWN_PAGE = gettext_lazy(
    "You have withdrawn from this study. Your worker id and everything you wrote here are "
    "erased; your answers are kept anonymously or removed, as the study's description says. "
    "Any payment already made stays. On Prolific or Mechanical Turk, return the study there "
    "as well; you will not be rejected for withdrawing."
)


@csrf_exempt  # as task_submit: the signed token proves the sender
@xframe_options_exempt
@require_http_methods(["GET", "POST"])
@limited(SUBMIT)
def task_withdraw(request: HttpRequest, slug: str, campaign: Campaign | None) -> HttpResponse:
    """Withdraw from the study: a confirmation page (GET), then erasure (POST) by the
    campaign's policy (``worker_forget``)."""
    if campaign is None:
        return _no_study(request)
    token = (request.POST if request.method == "POST" else request.GET).get("token", "")
    try:
        arrival = _arrival(request)
        assignment = assignment_authorise(campaign=campaign, arrival=arrival, token=token)
        if request.method == "POST":
            worker_forget(worker=assignment.worker, actor="worker (withdrawal)", campaign=campaign)
    except AnnotationError as exc:
        return _refused(request, exc)
    if request.method == "POST":
        return _message(request, WITHDRAWN_PAGE, 200, title=_("You have withdrawn"))
    context = {
        "campaign": campaign,
        "token": token,
        "action": _task_url(campaign, arrival, "task_withdraw"),
        "back": _task_url(campaign, arrival),
        "drops": campaign.withdrawal == Campaign.Withdrawal.DROP,
    }
    return _framed(render(request, "annotation/withdraw.html", context))


def _submitted_data(request: HttpRequest) -> dict[str, Any]:
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


_STAFF_PATHS = ("/admin/", "/dashboard/")


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 page (``handler500``): plain, and on the worker pages framed as they are, so a
    worker inside a provider's iframe reads it instead of a blank frame."""
    text = (
        "<!doctype html><meta charset=utf-8><title>Sorry</title>"
        "<p>Something went wrong on our side. Your answers so far are saved; please reload "
        "this page in a minute.</p>"
    )
    response = HttpResponse(text, status=500)
    if not request.path.startswith(_STAFF_PATHS):
        response = _framed(response)
        response.xframe_options_exempt = True  # type: ignore[attr-defined]
    return response
