"""Worker pages: the task page, answer submission and the end screen.

These pages live inside the provider's iframe (MTurk) or a plain tab (Prolific, local). They
do not rely on cookies: the worker's identity comes from the URL's provider parameters and
each form carries a signed assignment token, which is why the submit view is CSRF-exempt
(third-party cookies are blocked in iframes, and the token already proves the sender).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from annotation.chat_views import chat_page
from annotation.exceptions import AnnotationError, InvalidAnswer, NotAllowed
from annotation.models import Assignment, Campaign
from annotation.payments import arrival_verify, assignment_completion
from annotation.protocols import Question, registry
from annotation.providers import Arrival, arrival_parse, arrival_query
from annotation.services import (
    Visit,
    assignment_from_token,
    assignment_token,
    judgment_submit,
    presentation_seed,
    worker_visit,
)


def _framed(response: HttpResponse) -> HttpResponse:
    """Allow the page inside the providers' iframes, and nowhere else."""
    ancestors = " ".join(settings.WORKER_FRAME_ANCESTORS)
    response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
    return response


def _message(request: HttpRequest, text: str, status: int, title: str = "") -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"ok": False, "error": text}, status=status)
    page = render(
        request,
        "annotation/message.html",
        {"title": title or "Sorry", "text": text},
        status=status,
    )
    return _framed(page)


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


def _campaign(slug: str) -> Campaign | None:
    return Campaign.objects.filter(slug=slug).first()


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
        context["completion"] = assignment_completion(assignment=visit.assignment)
    elif visit.kind in ("nothing", "stopped"):
        template = "annotation/nothing.html"
    else:
        assert visit.item is not None and visit.assignment is not None
        template = "annotation/task.html"
        context.update(
            protocol=protocol,
            protocol_template=protocol.template_name,
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
        )
    return _framed(render(request, template, context, status=status))


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
def task(request: HttpRequest, slug: str) -> HttpResponse:
    """Show the worker their next item (or the preview, or the end screen)."""
    campaign = _campaign(slug)
    if campaign is None:
        return _message(request, "There is no study at this address.", 404)
    try:
        arrival = arrival_parse(request.GET)
        if registry.get(campaign.protocol).live_chat:
            return _framed(chat_page(request, campaign, arrival))
        if arrival.preview:
            return _preview(request, campaign)
        arrival_verify(campaign=campaign, arrival=arrival)
        visit = worker_visit(campaign=campaign, arrival=arrival)
    except AnnotationError as exc:
        return _message(request, exc.message, exc.status_code)
    return _render_visit(request, campaign, arrival, visit)


def _preview(request: HttpRequest, campaign: Campaign) -> HttpResponse:
    if campaign.status == Campaign.Status.DRAFT and not request.user.is_staff:
        # A draft is not published: to anyone else its address is like an unknown one.
        return _message(request, "There is no study at this address.", 404)
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    item = campaign.items.order_by("pk").first()
    context = {
        "campaign": campaign,
        "preview": True,
        "protocol_template": protocol.template_name,
        "payload": item.payload if item else None,
        "shown": protocol.presentation(parameters, item.payload, "preview") if item else {},
        "fields": _fields(protocol.questions(parameters), None, None),
        "total": campaign.items_per_assignment,
        "visit": Visit(kind="item", position=1),
    }
    return _framed(render(request, "annotation/task.html", context))


@csrf_exempt
@xframe_options_exempt
@require_POST
def task_submit(request: HttpRequest, slug: str) -> HttpResponse:
    """Store the worker's answers to one item, then send them to the next page."""
    campaign = _campaign(slug)
    if campaign is None:
        return _message(request, "There is no study at this address.", 404)
    data: dict[str, Any] = {}
    try:
        arrival = arrival_parse(request.GET)
        if arrival.preview:
            raise NotAllowed("This is a preview: accept the HIT before answering.")
        data = _submitted_data(request)
        assignment = _assignment_of(campaign, arrival, str(data.get("token", "")))
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
            return _message(request, again.message, again.status_code)
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
        return _message(request, exc.message, exc.status_code)
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
def task_done(request: HttpRequest, slug: str) -> HttpResponse:
    """End a finished assignment: MTurk's submit form, Prolific's redirect or a code."""
    campaign = _campaign(slug)
    if campaign is None:
        return _message(request, "There is no study at this address.", 404)
    try:
        arrival = arrival_parse(request.GET)
        assignment = _assignment_of(campaign, arrival, request.GET.get("token", ""))
        if assignment.is_open:
            raise NotAllowed("This assignment is not finished yet.")
        completion = assignment_completion(assignment=assignment)
    except AnnotationError as exc:
        return _message(request, exc.message, exc.status_code)
    if completion.kind == "redirect":
        return redirect(completion.url)
    return _render_visit(request, campaign, arrival, Visit(kind="done", assignment=assignment))


def _assignment_of(campaign: Campaign, arrival: Arrival, token: str) -> Assignment:
    """Return the token's assignment if it belongs to this campaign and arriving worker."""
    assignment = assignment_from_token(token)
    worker = assignment.worker
    if assignment.campaign_id != campaign.pk or (worker.provider, worker.external_id) != (
        arrival.provider,
        arrival.worker_id,
    ):
        raise NotAllowed("This assignment belongs to another worker.")
    return assignment


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
