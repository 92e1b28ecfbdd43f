"""Dashboard pages: thin views over dashboard.selectors and dashboard.services.

Every view is staff only (``staff_required``) and sees only the user's campaigns
(``campaign_for``); every action is a POST with Django's CSRF check.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.exceptions import AnnotationError
from dashboard import selectors, services
from dashboard.access import campaign_for, campaigns_visible, staff_required
from dashboard.models import Job


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
    if services.report_refresh_due(campaign, snapshot, row.judgments):
        services.job_start(campaign=campaign, kind=Job.Kind.REPORT, user=request.user)
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
        "actions": services.WORKER_ACTIONS,
    }
    return render(request, "dashboard/campaign_detail.html", context)


@require_GET
@staff_required
def campaign_progress(request: HttpRequest, slug: str) -> JsonResponse:
    """The live numbers the campaign page polls (tallies, and one key of the snapshot)."""
    campaign = campaign_for(request.user, slug)
    data = selectors.campaign_row(campaign).as_json()
    data["report_judgments"] = selectors.report_judgments(campaign)
    return JsonResponse(data)


@require_GET
@staff_required
def campaign_spotcheck(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    checks = selectors.spot_checks(campaign)
    return render(request, "dashboard/spotcheck.html", {"campaign": campaign, "checks": checks})


@require_POST
@staff_required
def job_create(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    kind = request.POST.get("kind", "")
    options = {
        "what": request.POST.get("what", "judgments"),
        "format": request.POST.get("format", ""),
        "include_flagged": request.POST.get("include_flagged") == "on",
        "by_author": request.POST.get("by_author") == "on",
    }
    try:
        job = services.job_start(
            campaign=campaign,
            kind=kind,
            options=options if kind == Job.Kind.EXPORT else {},
            user=request.user,
        )
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Started {job.get_kind_display().lower()} job #{job.pk}.")
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
    """Download one of a finished job's files (only names the job recorded)."""
    job = _job(request, slug, job_id)
    if job.status != Job.Status.DONE or name not in job.files:
        raise Http404("No such file.")
    path: Path = job.directory / name
    if not path.is_file():
        raise Http404("The file is gone; run the job again.")
    inline = request.GET.get("inline") == "1"
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FileResponse(
        path.open("rb"), as_attachment=not inline, filename=name, content_type=content_type
    )


@require_POST
@staff_required
def worker_action(request: HttpRequest, slug: str) -> HttpResponse:
    campaign = campaign_for(request.user, slug)
    try:
        summary = services.worker_act(
            campaign=campaign,
            pseudonym=request.POST.get("worker", ""),
            action=request.POST.get("action", ""),
            actor=request.user.get_username(),
            reason=request.POST.get("reason", ""),
            amount=request.POST.get("amount", ""),
        )
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, summary)
    return redirect(reverse("dashboard:campaign", args=[campaign.slug]) + "#workers")
