"""Data sets: list, get, import a file, export as a download.

Data sets are site-wide (no campaign owns one): any key may read them, and importing needs
a key, which is a staff account's (``auth.KeyAuth``), as the dashboard and
``import_dataset`` require. Importing goes through ``dataset_import`` (all or nothing, the
reader's message naming the line), exporting through ``dataset_records`` and
``records_export`` (workers by pseudonym, de-identification originals left out).
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from pathlib import Path as FilePath
from typing import Any

from django.db.models import Count
from django.http import FileResponse, HttpRequest
from ninja import File, Form, Path, Query, Router, Status, UploadedFile

from annotation.dataset_reads import dataset_records
from annotation.deidentify import Deidentifier
from annotation.models import Dataset, Dialogue
from annotation.services.datasets import dataset_import, records_export
from api.errors import CLIENT_ERRORS, ApiError, ErrorOut, query_check
from api.schemas import (
    NAME_PATTERN,
    DatasetExportQuery,
    DatasetImported,
    DatasetOut,
    DatasetPage,
    Page,
    one_of,
)
from corpora import READERS, SUFFIXES, DatasetError
from corpora.limits import UPLOADS, upload_check
from evalsite.errors import InvalidParameters

router = Router(tags=["data sets"])

Name = Path(
    ...,
    pattern=NAME_PATTERN,
    description="The data set's name.",
    example="dialogues-1",
)
_FILE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
DataFile = File(..., description="The data set file.")
Format = Form(..., description="Its format.")
NewName = Form(
    "",
    pattern=r"^([-A-Za-z0-9_]{1,64})?$",
    description="The new data set's name (1–64 letters, digits, '-' or '_'); default: the file's.",
)
Source = Form("", max_length=64, description="Sub-source for dialogues whose file names none.")
Reader = one_of(READERS)
Description = Form("", max_length=5000, description="A note kept with the data set.")
Deidentify = Form(
    False, description="Replace emails, URLs, IBANs, dates of birth, phone numbers, @handles first."
)
SpeakersArePersons = Form(False, description="With deidentify: speaker names are persons too.")


def _counts(datasets: list[Dataset]) -> dict[int, dict[str, Counter[str]]]:
    """Dialogues by source and by split, per data set, in one query."""
    counts: dict[int, dict[str, Counter[str]]] = {
        d.pk: {"sources": Counter(), "splits": Counter()} for d in datasets
    }
    rows = (
        Dialogue.objects.filter(dataset__in=datasets)
        .values_list("dataset_id", "source", "split")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for dataset_id, source, split, n in rows:
        counts[dataset_id]["sources"][source] += n
        counts[dataset_id]["splits"][split] += n
    return counts


def _outs(datasets: list[Dataset]) -> list[dict[str, Any]]:
    counts = _counts(datasets)
    return [
        {
            "name": d.name,
            "format": d.source_format,
            "description": d.description,
            "dialogues": sum(counts[d.pk]["sources"].values()),
            "sources": dict(sorted(counts[d.pk]["sources"].items())),
            "splits": dict(sorted(counts[d.pk]["splits"].items())),
            "created_at": d.created_at,
        }
        for d in datasets
    ]


def _dataset(name: str) -> Dataset:
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        raise ApiError(404, f"No data set called {name!r}.")
    return dataset


@router.get("", response={200: DatasetPage, CLIENT_ERRORS: ErrorOut})
def dataset_list(request: HttpRequest, page: Query[Page]) -> dict[str, Any]:
    """The imported data sets, by name, with their dialogues by source and split."""
    query_check(request, Page)
    datasets = Dataset.objects.order_by("name")
    return {
        "count": datasets.count(),
        "limit": page.limit,
        "offset": page.offset,
        "results": _outs(list(datasets[page.offset : page.offset + page.limit])),
    }


@router.get("/{name}", response={200: DatasetOut, CLIENT_ERRORS: ErrorOut})
def dataset_get(request: HttpRequest, name: str = Name) -> dict[str, Any]:
    return _outs([_dataset(name)])[0]


@router.post("", response={201: DatasetImported, CLIENT_ERRORS: ErrorOut})
def dataset_upload(
    request: HttpRequest,
    file: UploadedFile = DataFile,
    format: Reader = Format,  # type: ignore[valid-type]
    name: str = NewName,
    source: str = Source,
    description: str = Description,
    deidentify: bool = Deidentify,
    speakers_are_persons: bool = SpeakersArePersons,
) -> Status[dict[str, Any]]:
    """Import one file as a new data set (``dataset_import``, ``import_dataset``'s service):
    read and checked whole, then stored in one transaction. A malformed file, or one over
    the upload limits (``corpora.limits.UPLOADS``, docs/datasets.md), is a 400 whose message
    names the line or the limit; nothing is stored."""
    if file.size is not None and file.size > UPLOADS.bytes:
        raise InvalidParameters(f"The file is larger than {UPLOADS.bytes // 2**20} MB.")
    filename = _FILE_NAME.sub("_", FilePath(file.name or "upload").name)[-100:] or "upload"
    deidentifier = Deidentifier(speakers_are_persons=speakers_are_persons) if deidentify else None
    with tempfile.TemporaryDirectory() as folder:
        path = FilePath(folder) / filename
        with path.open("wb") as handle:
            for chunk in file.chunks():
                handle.write(chunk)
        try:
            upload_check(path, filename, parquet=format == "parquet")
            result = dataset_import(
                name=name or path.stem,
                fmt=format,
                paths=[path],
                source=source,
                description=description,
                deidentifier=deidentifier,
                limits=UPLOADS,
            )
        except (DatasetError, OSError) as exc:
            message = str(exc).replace(str(path), filename).replace(folder, "")
            raise InvalidParameters(f"Nothing was imported. {message}") from None
    body = {
        "dataset": _outs([result.dataset])[0],
        "utterances": result.utterances,
        "replacements": result.replacements,
    }
    return Status(201, body)


@router.get(
    "/{name}/export",
    response={CLIENT_ERRORS: ErrorOut},
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
def dataset_export(
    request: HttpRequest, query: Query[DatasetExportQuery], name: str = Name
) -> FileResponse:
    """Download the data set in a dialogue format (``records_export``): workers by
    pseudonym, de-identification originals left out. Written within the request."""
    query_check(request, DatasetExportQuery)
    dataset = _dataset(name)
    filename = f"{dataset.name}.{SUFFIXES[query.format]}"
    with tempfile.TemporaryDirectory() as folder:
        path = FilePath(folder) / filename
        records_export(dataset_records(dataset), fmt=query.format, out=path)
        handle = path.open("rb")  # still readable once the folder is removed
    return FileResponse(
        handle, as_attachment=True, filename=filename, content_type="application/octet-stream"
    )
