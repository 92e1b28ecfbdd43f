"""Reports and exports: jobs (``dashboard.services.job_start``) with progress and files."""

from __future__ import annotations

import mimetypes
from typing import Any

from django.http import FileResponse, HttpRequest
from django.urls import reverse
from ninja import Path, Query, Router, Status

from annotation.models import Campaign
from api.access import campaign_of, user_of
from api.errors import CLIENT_ERRORS, ApiError, ErrorOut, query_check
from api.schemas import FILE_PATTERN, CampaignSlug, ExportIn, JobOut, ReportOut
from dashboard import selectors, services
from dashboard.files import job_file_open
from dashboard.models import Job
from evalstats.aggregation import Aggregate

router = Router(tags=["reports and exports"])

JobId = Path(..., ge=1, le=2**62, description="The job's id.")
FileName = Path(..., pattern=FILE_PATTERN, description="A file the job wrote.")


def _file_url(request: HttpRequest, job: Job, name: str) -> str:
    return request.build_absolute_uri(
        reverse("api:job_file", args=[job.campaign.slug, job.pk, name])
    )


def job_out(request: HttpRequest, job: Job) -> dict[str, Any]:
    return {
        "id": job.pk,
        "kind": job.kind,
        "status": job.status,
        "progress": round(job.progress, 3),
        "message": job.message,
        "error": job.error,
        "files": [_file_url(request, job, n) for n in job.files]
        if job.status == Job.Status.DONE
        else [],
        "created_at": job.created_at,
        "finished_at": job.finished_at,
    }


def _job(campaign: Campaign, job_id: int) -> Job:
    job = Job.objects.filter(pk=job_id, campaign=campaign).select_related("campaign").first()
    if job is None:
        raise ApiError(404, f"No job {job_id} in this campaign.")
    return job


def _started(request: HttpRequest, job: Job) -> Status[dict[str, Any]]:
    job.refresh_from_db()  # without a broker the job ran already, in this process
    return Status(202, job_out(request, job))


@router.post("/{slug}/reports", response={202: JobOut, CLIENT_ERRORS: ErrorOut})
def report_start(
    request: HttpRequest,
    slug: str = CampaignSlug,
    aggregate: Aggregate = Query(  # noqa: B008 (ninja's parameter declaration)
        "majority", description="How an item's labels are combined: majority, ds, mace."
    ),
) -> Status[dict[str, Any]]:
    """Queue a report build; poll ``jobs/{id}``, then read ``reports/latest``."""
    query_check(request, frozenset({"aggregate"}))
    campaign = campaign_of(request, slug)
    job = services.job_start(
        campaign=campaign,
        kind=Job.Kind.REPORT,
        options={"aggregate": aggregate},
        user=user_of(request),
    )
    return _started(request, job)


@router.get("/{slug}/reports/latest", response={200: ReportOut, CLIENT_ERRORS: ErrorOut})
def report_latest(request: HttpRequest, slug: str = CampaignSlug) -> dict[str, Any]:
    """The newest finished report snapshot: its tables as JSON and its figures' URLs."""
    campaign = campaign_of(request, slug)
    snapshot = selectors.report_latest(campaign)
    if snapshot is None:
        raise ApiError(404, "No report yet: POST reports to build one.")
    result = snapshot.result
    figures = {
        name: {kind: _file_url(request, snapshot, files[kind]) for kind in ("png", "svg")}
        | {text: files.get(text, "") for text in ("title", "alt")}
        for name, files in (result.get("figures") or {}).items()
    }
    return {
        "job": snapshot.pk,
        "title": result.get("title", ""),
        "judgments": result.get("judgments", 0),
        "finished_at": snapshot.finished_at,
        "tables": result.get("tables") or {},
        "figures": figures,
        "notes": result.get("notes") or [],
    }


@router.post("/{slug}/exports", response={202: JobOut, CLIENT_ERRORS: ErrorOut})
def export_start(
    request: HttpRequest, data: ExportIn, slug: str = CampaignSlug
) -> Status[dict[str, Any]]:
    """Queue an export of judgments (csv, jsonl, parquet; workers pseudonymised) or of
    dialogues; poll ``jobs/{id}`` for progress and the download URL."""
    campaign = campaign_of(request, slug)
    job = services.job_start(
        campaign=campaign, kind=Job.Kind.EXPORT, options=data.model_dump(), user=user_of(request)
    )
    return _started(request, job)


@router.get("/{slug}/jobs/{job_id}", response={200: JobOut, CLIENT_ERRORS: ErrorOut})
def job_status(
    request: HttpRequest, slug: str = CampaignSlug, job_id: int = JobId
) -> dict[str, Any]:
    return job_out(request, _job(campaign_of(request, slug), job_id))


@router.get(
    "/{slug}/jobs/{job_id}/files/{name}",
    response={CLIENT_ERRORS: ErrorOut},
    url_name="job_file",
    openapi_extra={
        "responses": {
            "200": {
                "description": "The file.",
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
                },
            }
        }
    },
)
def job_file(
    request: HttpRequest, slug: str = CampaignSlug, job_id: int = JobId, name: str = FileName
) -> FileResponse:
    """Download a file of a finished job (only names the job recorded), streamed from the
    shared storage."""
    job = _job(campaign_of(request, slug), job_id)
    if job.status != Job.Status.DONE or name not in job.files:
        raise ApiError(404, "No such file.")
    content = job_file_open(job, name)
    if content is None:
        raise ApiError(404, "The file is gone; run the job again.")
    content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return FileResponse(content, as_attachment=True, filename=name, content_type=content_type)
