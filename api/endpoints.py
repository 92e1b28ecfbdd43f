"""Models and their generation jobs: list, get, register; start a job, follow it, read it.

Models are site-wide (no campaign owns one): any key may read them, and registering needs a
key, which is a staff account's (``auth.KeyAuth``), as the dashboard and ``register_model``
require. Registering goes through ``endpoint_register`` (the command's service), a job
through ``generation_job_start`` (the wizard's), queued on the ``inference`` queue.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path as FilePath
from typing import Any

from django.db import transaction
from django.http import HttpRequest
from ninja import Path, Query, Router, Status

from api.errors import CLIENT_ERRORS, ApiError, ErrorOut, query_check
from api.schemas import (
    NAME_PATTERN,
    GenerationIn,
    GenerationJobOut,
    GenerationJobPage,
    ModelIn,
    ModelOut,
    ModelPage,
    Page,
    ResponsePage,
)
from corpora.readers import Context, CorpusError, read_contexts
from evalsite.errors import InvalidParameters
from modelhub.backends import Example
from modelhub.models import GenerationJob, ModelEndpoint
from modelhub.selectors import generation_job_responses
from modelhub.services import endpoint_register, generation_job_start

logger = logging.getLogger(__name__)
router = Router(tags=["models"])

Name = Path(
    ...,
    pattern=NAME_PATTERN,
    description="The model's name.",
    example="generic-bot",
)
NewName = Path(
    ...,
    pattern=NAME_PATTERN,
    description="The model's name: a slug of at most 64 characters.",
    example="generic-bot",
)
JobId = Path(..., ge=1, le=2**62, description="The generation job's id.")
_LINE = re.compile(r"contexts\.jsonl, line (\d+)")


def model_out(endpoint: ModelEndpoint) -> dict[str, Any]:
    return {
        "name": endpoint.name,
        "backend": endpoint.backend,
        "config": endpoint.config,
        "decoding": endpoint.decoding,
        "notes": endpoint.notes,
        "created_at": endpoint.created_at,
    }


def job_out(job: GenerationJob) -> dict[str, Any]:
    return {
        "id": job.pk,
        "model": job.endpoint.name,
        "label": job.label,
        "status": job.status,
        "total": job.total,
        "done": job.done,
        "progress": round(job.progress, 3),
        "error": job.error,
        "attempts": job.attempts,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


def _model(name: str) -> ModelEndpoint:
    endpoint = ModelEndpoint.objects.filter(name=name).first()
    if endpoint is None:
        raise ApiError(404, f"No registered model called {name!r}.")
    return endpoint


def _job(endpoint: ModelEndpoint, job_id: int) -> GenerationJob:
    jobs = GenerationJob.objects.filter(pk=job_id, endpoint=endpoint)
    job = jobs.select_related("endpoint").first()
    if job is None:
        raise ApiError(404, f"No generation job {job_id} of {endpoint.name!r}.")
    return job


@router.get("", response={200: ModelPage, CLIENT_ERRORS: ErrorOut})
def model_list(request: HttpRequest, page: Query[Page]) -> dict[str, Any]:
    """The registered models, by name."""
    query_check(request, Page)
    models = ModelEndpoint.objects.order_by("name")
    return {
        "count": models.count(),
        "limit": page.limit,
        "offset": page.offset,
        "results": [model_out(m) for m in models[page.offset : page.offset + page.limit]],
    }


@router.get("/{name}", response={200: ModelOut, CLIENT_ERRORS: ErrorOut})
def model_get(request: HttpRequest, name: str = Name) -> dict[str, Any]:
    return model_out(_model(name))


@router.put("/{name}", response={200: ModelOut, 201: ModelOut, CLIENT_ERRORS: ErrorOut})
def model_register(request: HttpRequest, data: ModelIn, name: str = NewName) -> Status[Any]:
    """Register a model, or replace the registration of that name (``register_model``'s
    service, ``endpoint_register``): the name, the backend, its configuration (the backend
    is built from it) and the decoding parameters are checked, nothing stored otherwise.
    201 when new, 200 when replaced."""
    existed = ModelEndpoint.objects.filter(name=name).exists()
    decoding = {"preset": data.preset, **data.decoding} if data.preset else data.decoding
    try:
        endpoint = endpoint_register(
            name=name,
            backend=data.backend,
            config=data.config,
            decoding=decoding,
            notes=data.notes,
        )
    except ValueError as exc:
        raise InvalidParameters(str(exc)) from None
    return Status(200 if existed else 201, model_out(endpoint))


def _contexts(data: GenerationIn) -> list[Context]:
    """Check the contexts with the wizard's reader (``read_contexts``), as a JSONL file."""
    with tempfile.TemporaryDirectory() as folder:
        path = FilePath(folder) / "contexts.jsonl"
        lines = (json.dumps(c.model_dump(exclude_none=True)) for c in data.contexts)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            return read_contexts(path, max_turns=data.max_turns)
        except CorpusError as exc:
            message = str(exc).replace(str(path), "contexts")
            found = _LINE.search(message)
            field = f"contexts.{int(found.group(1)) - 1}" if found else "contexts"
            message = _LINE.sub(lambda m: f"context {m.group(1)}", message)
            raise InvalidParameters(message, fields={field: "invalid"}) from None


def _start(endpoint: ModelEndpoint, examples: list[Example], label: str) -> GenerationJob:
    """Create the job and queue it once committed. Without a broker the task runs on that
    commit, in this request; a failure it meets is then the job's (``failed``, its error),
    as a worker's would be, not this request's."""
    job = None
    try:
        with transaction.atomic():
            try:
                job = generation_job_start(endpoint=endpoint, examples=examples, label=label)
            except ValueError as exc:
                raise InvalidParameters(f"Model {endpoint.name!r} cannot answer: {exc}") from None
    except Exception:
        if job is None:
            raise
        logger.warning("generation job %s failed inline", job.pk, exc_info=True)
    assert job is not None
    job.refresh_from_db()
    return job


@router.post("/{name}/jobs", response={202: GenerationJobOut, CLIENT_ERRORS: ErrorOut})
def generation_start(
    request: HttpRequest, data: GenerationIn, name: str = Name
) -> Status[dict[str, Any]]:
    """Queue a generation job: the model answers each distinct context once (a response it
    stored already is not generated again), on the ``inference`` queue. Contexts are
    checked as the wizard checks an uploaded contexts file; poll ``jobs/{id}``."""
    endpoint = _model(name)
    contexts = _contexts(data)
    examples = [Example(turns=c.turns, reference=c.reference) for c in contexts]
    job = _start(endpoint, examples, data.label or "api")
    return Status(202, job_out(job))


@router.get("/{name}/jobs", response={200: GenerationJobPage, CLIENT_ERRORS: ErrorOut})
def generation_list(request: HttpRequest, page: Query[Page], name: str = Name) -> dict[str, Any]:
    """The model's generation jobs, newest first."""
    query_check(request, Page)
    endpoint = _model(name)
    jobs = GenerationJob.objects.filter(endpoint=endpoint).select_related("endpoint")
    jobs = jobs.order_by("-created_at", "-pk")
    return {
        "count": jobs.count(),
        "limit": page.limit,
        "offset": page.offset,
        "results": [job_out(j) for j in jobs[page.offset : page.offset + page.limit]],
    }


@router.get("/{name}/jobs/{job_id}", response={200: GenerationJobOut, CLIENT_ERRORS: ErrorOut})
def generation_get(request: HttpRequest, name: str = Name, job_id: int = JobId) -> dict[str, Any]:
    """A generation job's status and progress (``done`` of ``total`` contexts answered)."""
    return job_out(_job(_model(name), job_id))


@router.get(
    "/{name}/jobs/{job_id}/responses", response={200: ResponsePage, CLIENT_ERRORS: ErrorOut}
)
def generation_responses(
    request: HttpRequest, page: Query[Page], name: str = Name, job_id: int = JobId
) -> dict[str, Any]:
    """The job's contexts with the model's stored responses (null until generated)."""
    query_check(request, Page)
    job = _job(_model(name), job_id)
    rows = generation_job_responses(job=job)
    return {
        "count": len(rows),
        "limit": page.limit,
        "offset": page.offset,
        "results": [
            {"turns": list(e.turns), "reference": e.reference, "response": r}
            for e, r in rows[page.offset : page.offset + page.limit]
        ],
    }
