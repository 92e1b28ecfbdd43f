"""Dashboard pages: thin views over dashboard.selectors and dashboard.services.

Every view is staff only (``staff_required``) and sees only the user's campaigns
(``campaign_for``); every action is a POST with Django's CSRF check.
"""

from __future__ import annotations

import csv
import mimetypes
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.campaign_settings import BONUS
from annotation.models import Campaign
from annotation.selectors import training_summary
from dashboard import controls, judges, leaderboard, money, review, selectors, services
from dashboard.access import campaign_for, campaigns_visible, staff_required
from dashboard.files import job_file_open
from dashboard.models import Job
from dashboard.spot_checks import spot_checks
from evalsite.errors import AnnotationError, InvalidParameters
from evalstats.aggregation import AGGREGATE_NAMES
from evalstats.spreadsheets import cell_safe
from judges.services import MODES as JUDGE_MODES
from judges.services import judge_start
from modelhub.models import ModelEndpoint
from recruitment.services import payments_attention, worker_links


@require_GET
@staff_required
def campaign_list(request: HttpRequest) -> HttpResponse:
    campaigns = campaigns_visible(request.user).select_related("owner").order_by("-created_at")
    rows = selectors.campaign_rows(campaigns)
    return render(request, "dashboard/campaign_list.html", {"rows": rows})


@require_GET
@staff_required
def campaign_detail(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    row = selectors.campaign_row(campaign)
    snapshot = selectors.report_latest(campaign)
    built_from = snapshot.result.get("judgments") if snapshot else None
    built_at = snapshot.finished_at if snapshot else None
    if services.report_refresh_due(
        campaign, built_from=built_from, built_at=built_at, judgments=row.judgments
    ):
        services.job_start(campaign=campaign, kind=Job.Kind.REPORT, user=request.user)
    code = request.GET.get("code", "").strip()[:64]
    history, history_total = selectors.settings_history(
        campaign,
        limit=None if request.GET.get("history") == "all" else selectors.HISTORY_SHOWN,
    )
    context = {
        "campaign": campaign,
        "row": row,
        "snapshot": snapshot,
        "stale": snapshot is None or snapshot.result.get("judgments") != row.judgments,
        "jobs": selectors.jobs_recent(campaign),
        "quality": selectors.quality_table(
            snapshot, limit=None if request.GET.get("workers") == "all" else 50
        ),
        "exports": services.EXPORTS,
        "aggregates": list(AGGREGATE_NAMES.items()),
        "actions": services.WORKER_ACTIONS,
        "bonus_max": BONUS.high,
        "tables": selectors.report_tables(snapshot),
        "glossary": selectors.report_glossary(snapshot),
        "status_actions": controls.status_actions(campaign),
        "code": code,
        "training": training_summary(campaign),
        "leaderboard": leaderboard.leaderboard_available(campaign),
        "payments_attention": payments_attention(campaign),
        "payment_actions": money.PAYMENT_ACTIONS,
        "history": history,
        "history_total": history_total,
    }
    if code:
        context["code_matches"] = selectors.completion_lookup(campaign, code)
    return render(request, "dashboard/campaign_detail.html", context)


@require_GET
@staff_required
def campaign_progress(request: HttpRequest, slug: str) -> JsonResponse:
    """The live numbers the campaign page polls (tallies, and one key of the snapshot)."""
    campaign = campaign_for(request.user, slug)
    data = selectors.campaign_row(campaign).as_json()
    data["report_judgments"] = selectors.report_judgments(campaign)
    return JsonResponse(data)


def _leaderboard(request: HttpRequest, slug: str) -> tuple[Campaign, leaderboard.Leaderboard]:
    """Return the campaign (404 unless it is the user's and has battles) and its leaderboard;
    queue a new report when votes arrived since the snapshot (with a broker)."""
    campaign = campaign_for(request.user, slug)
    if not leaderboard.leaderboard_available(campaign):
        raise Http404("This campaign's protocol has no leaderboard.")
    snapshot = leaderboard.leaderboard_snapshot(campaign)
    judgments = leaderboard.judgments_now(campaign)
    if services.report_refresh_due(
        campaign,
        built_from=snapshot.judgments if snapshot else None,
        built_at=snapshot.finished_at if snapshot else None,
        judgments=judgments,
    ):
        services.job_start(campaign=campaign, kind=Job.Kind.REPORT, user=request.user)
    building = selectors.report_pending(campaign)
    return campaign, leaderboard.leaderboard_of(snapshot, judgments=judgments, building=building)


@require_GET
@staff_required
def campaign_leaderboard(request: HttpRequest, slug: str) -> HttpResponse:
    """The leaderboard of a campaign whose votes are battles (the arena), from its report
    snapshot; while the campaign is live it polls ``campaign_leaderboard_data``."""
    campaign, board = _leaderboard(request, slug)
    context = {
        "campaign": campaign,
        "board": board,
        "live": campaign.status == Campaign.Status.LIVE,
    }
    return render(request, "dashboard/leaderboard.html", context)


@require_GET
@staff_required
def campaign_leaderboard_data(request: HttpRequest, slug: str) -> JsonResponse:
    """The leaderboard page's poll: the snapshot's id and time, and its tables as records."""
    campaign, board = _leaderboard(request, slug)
    return JsonResponse(leaderboard.leaderboard_json(campaign, board))


@require_GET
@staff_required
def campaign_spotcheck(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    checks = spot_checks(campaign)
    return render(request, "dashboard/spotcheck.html", {"campaign": campaign, "checks": checks})


@require_POST
@staff_required
def job_create(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    kind = request.POST.get("kind", "")
    options: dict[str, Any] = {"aggregate": request.POST.get("aggregate", "majority")}
    if kind == Job.Kind.EXPORT:
        options = {
            "what": request.POST.get("what", "judgments"),
            "format": request.POST.get("format", ""),
            "include_flagged": request.POST.get("include_flagged") == "on",
            "judges": request.POST.get("judges") == "on",
            "by_author": request.POST.get("by_author") == "on",
        }
    try:
        job = services.job_start(campaign=campaign, kind=kind, options=options, user=request.user)
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Started {job.get_kind_display().lower()} job #{job.pk}.")
    if request.POST.get("back") == "leaderboard" and leaderboard.leaderboard_available(campaign):
        return redirect("dashboard:leaderboard", slug=campaign.slug)
    return redirect(reverse("dashboard:campaign", args=[campaign.slug]) + "#jobs")


def _job(request: HttpRequest, slug: str, job_id: int) -> Job:
    campaign = campaign_for(request.user, slug)
    job = Job.objects.filter(pk=job_id, campaign=campaign).select_related("campaign").first()
    if job is None:
        raise Http404("No such job.")
    return job


@require_GET
@staff_required
def job_status(request: HttpRequest, slug: str, job_id: int) -> JsonResponse:
    job = _job(request, slug, job_id)
    return JsonResponse(
        {
            "id": job.pk,
            "kind": job.kind,
            "status": job.status,
            "progress": round(job.progress, 3),
            "message": job.message,
            "error": job.error,
            "files": [
                reverse("dashboard:job_file", args=[slug, job.pk, name]) for name in job.files
            ],
        }
    )


@require_GET
@staff_required
def job_file(request: HttpRequest, slug: str, job_id: int, name: str) -> FileResponse:
    """Download one of a finished job's files (only names the job recorded), streamed from
    the shared storage."""
    job = _job(request, slug, job_id)
    if job.status != Job.Status.DONE or name not in job.files:
        raise Http404("No such file.")
    content = job_file_open(job, name)
    if content is None:
        raise Http404("The file is gone; run the job again.")
    inline = request.GET.get("inline") == "1"
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FileResponse(content, as_attachment=not inline, filename=name, content_type=content_type)


@require_POST
@staff_required
def worker_links_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """Download personal signed links (CSV worker_id,link) for the ids typed and/or a number
    of new random ids: what a local study without open links sends its workers."""
    campaign = campaign_for(request.user, slug)
    count_text = request.POST.get("count", "").strip() or "0"
    try:
        if not count_text.isascii() or not count_text.isdigit():
            raise InvalidParameters("The number of new links must be a whole number ≥ 0.")
        links = worker_links(
            campaign=campaign,
            worker_ids=request.POST.get("workers", "").split(),
            count=int(count_text),
            base_url=request.build_absolute_uri("/").rstrip("/"),
        )
    except AnnotationError as exc:
        messages.error(request, exc.message)
        return redirect(reverse("dashboard:campaign", args=[campaign.slug]) + "#links")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{campaign.slug}-links.csv"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow(["worker_id", "link"])
    writer.writerows([cell_safe(cell) for cell in link] for link in links)
    return response


def _back(campaign: Campaign, anchor: str) -> HttpResponse:
    return redirect(reverse("dashboard:campaign", args=[campaign.slug]) + anchor)


def _act(
    request: HttpRequest, campaign: Campaign, anchor: str, action: Callable[[], str]
) -> HttpResponse:
    """Carry out one dashboard action: show its summary, or why it was refused (nothing
    changed), then go back to the page's section ``anchor``."""
    try:
        summary = action()
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, summary)
    return _back(campaign, anchor)


@require_POST
@staff_required
def worker_action(request: HttpRequest, slug: str) -> HttpResponse:
    """Act on one worker; a reject or block first shows a confirmation page (no JavaScript
    needed): its form posts the same fields again with ``confirmed=1``."""
    campaign = campaign_for(request.user, slug)
    action = request.POST.get("action", "")
    if action in services.CONFIRMED_ACTIONS and request.POST.get("confirmed") != "1":
        try:
            worker = services.worker_act_check(
                campaign=campaign,
                pseudonym=request.POST.get("worker", ""),
                action=action,
                reason=request.POST.get("reason", ""),
            )
        except AnnotationError as exc:
            messages.error(request, str(exc))
            return _back(campaign, "#workers")
        context = {"campaign": campaign, "worker": worker, "action": action}
        context["reason"] = request.POST.get("reason", "").strip()
        return render(request, "dashboard/confirm.html", context)
    return _act(
        request,
        campaign,
        "#workers",
        lambda: services.worker_act(
            campaign=campaign,
            pseudonym=request.POST.get("worker", ""),
            action=action,
            actor=request.user.get_username(),
            reason=request.POST.get("reason", ""),
            amount=request.POST.get("amount", ""),
            scope=campaigns_visible(request.user),
        ),
    )


@require_POST
@staff_required
def workers_approve(request: HttpRequest, slug: str) -> HttpResponse:
    """Approve the ticked workers' submitted work, or (``scope=all``) everyone's."""
    campaign = campaign_for(request.user, slug)
    everyone = request.POST.get("scope") == "all"
    return _act(
        request,
        campaign,
        "#workers",
        lambda: review.workers_approve(
            campaign=campaign,
            pseudonyms=None if everyone else request.POST.getlist("workers"),
            actor=request.user.get_username(),
        ),
    )


@require_POST
@staff_required
def campaign_review(request: HttpRequest, slug: str) -> HttpResponse:
    """Review by quality control on every publication (``campaign_review``): first a page
    with what it would do, then (``confirmed=1``) the review itself."""
    campaign = campaign_for(request.user, slug)
    try:
        if request.POST.get("confirmed") != "1":
            plan = review.campaign_review_plan(campaign=campaign)
            context = {"campaign": campaign, "plan": plan}
            return render(request, "dashboard/review_confirm.html", context)
        summary = review.campaign_review_run(campaign=campaign, actor=request.user.get_username())
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, summary)
    return _back(campaign, "#workers")


@require_POST
@staff_required
def bonuses_upload(request: HttpRequest, slug: str) -> HttpResponse:
    """Pay the bonuses of a CSV file (worker,amount,reason), checked all or nothing first."""
    campaign = campaign_for(request.user, slug)
    upload = request.FILES.get("file")

    def pay() -> str:
        if upload is None:
            raise InvalidParameters("Choose a CSV file of worker,amount,reason lines.")
        if upload.size and upload.size > review.BONUS_FILE_MAX_BYTES:
            raise InvalidParameters("The file is over 1 MB; split it. Nothing was paid.")
        lines = review.bonuses_check(campaign=campaign, data=upload.read())
        return review.bonuses_pay(campaign=campaign, lines=lines, actor=request.user.get_username())

    return _act(request, campaign, "#bonuses", pay)


@require_POST
@staff_required
def payment_action(request: HttpRequest, slug: str) -> HttpResponse:
    """Retry a payment that needs attention, or mark it paid or not paid with a note."""
    campaign = campaign_for(request.user, slug)
    return _act(
        request,
        campaign,
        "#payments",
        lambda: money.payment_act(
            campaign=campaign,
            payment_id=request.POST.get("payment", ""),
            action=request.POST.get("action", ""),
            note=request.POST.get("note", ""),
            actor=request.user.get_username(),
        ),
    )


@require_POST
@staff_required
def campaign_status(request: HttpRequest, slug: str) -> HttpResponse:
    """Pause, resume or finish a launched campaign (finishing needs the confirmation box)."""
    campaign = campaign_for(request.user, slug)
    return _act(
        request,
        campaign,
        "#controls",
        lambda: controls.campaign_status_change(
            campaign=campaign,
            action=request.POST.get("action", ""),
            actor=request.user.get_username(),
            confirmed=request.POST.get("confirmed") == "on",
        ),
    )


@require_POST
@staff_required
def campaign_budget(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    return _act(
        request,
        campaign,
        "#controls",
        lambda: controls.campaign_budget_set(
            campaign=campaign,
            budget=request.POST.get("budget", ""),
            actor=request.user.get_username(),
        ),
    )


@require_GET
@staff_required
def judges_page(request: HttpRequest, slug: str) -> HttpResponse:
    """LLM judges: their runs with progress, a form to start one, and the newest report of
    their agreement with the crowd (table and figure)."""
    campaign = campaign_for(request.user, slug)
    snapshot = judges.judges_report_latest(campaign)
    context = {
        "campaign": campaign,
        "runs": judges.judge_runs(campaign),
        "endpoints": ModelEndpoint.objects.order_by("name"),
        "modes": JUDGE_MODES,
        "snapshot": snapshot,
        "tables": selectors.report_tables(snapshot),
        "pending": Job.objects.filter(
            campaign=campaign,
            kind=Job.Kind.JUDGES,
            status__in=[Job.Status.QUEUED, Job.Status.RUNNING],
        ).exists(),
    }
    return render(request, "dashboard/judges.html", context)


@require_POST
@staff_required
def judge_run_start(request: HttpRequest, slug: str) -> HttpResponse:
    """Start a judge on every item of the campaign (``judge_start``; one run per judge)."""
    campaign = campaign_for(request.user, slug)
    back = redirect("dashboard:judges", slug=slug)
    endpoint = ModelEndpoint.objects.filter(name=request.POST.get("endpoint", "")).first()
    if endpoint is None:
        messages.error(request, "Choose a registered model (manage.py register_model adds one).")
        return back
    mode = request.POST.get("mode", "") or None
    try:
        job = judge_start(
            campaign=campaign,
            endpoint=endpoint,
            mode=mode,
            both_orders=request.POST.get("both_orders") == "on",
        )
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.info(request, f"Judge run #{job.pk} of {endpoint.name}: {job.total} request(s).")
    return back


@require_POST
@staff_required
def judges_report_start(request: HttpRequest, slug: str) -> HttpResponse:
    """Build the judges' agreement report (a dashboard job of kind ``judges``)."""
    campaign = campaign_for(request.user, slug)
    try:
        job = services.job_start(campaign=campaign, kind=Job.Kind.JUDGES, user=request.user)
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Building the judges' report (job #{job.pk}).")
    return redirect("dashboard:judges", slug=slug)
