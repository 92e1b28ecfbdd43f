"""The job files, in the storage every process shares (``STORAGES["shared"]``).

A job is built by a Celery worker, perhaps on another host than the web process that serves
its downloads: the worker writes into a private temporary folder, then saves each file under
``jobs/<campaign>/<job>/<name>`` in the shared storage (an S3 bucket, or a folder under
``DATA_DIR`` by default), where any web process reads it (docs/deployment.md, "Files and
object storage").
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, storages

from dashboard.models import Job


def shared_storage() -> Storage:
    """The storage of what one process writes for another (``settings.STORAGES``)."""
    return storages["shared"]


def _folder(job: Job) -> str:
    return f"jobs/{job.campaign.slug}/{job.pk}"


def job_files_save(job: Job, folder: Path, names: Iterable[str]) -> None:
    """Save the files ``names`` written in ``folder`` as the job's files."""
    storage = shared_storage()
    for name in names:
        with (folder / name).open("rb") as content:
            storage.save(f"{_folder(job)}/{name}", File(content, name=name))


def job_file_open(job: Job, name: str) -> File | None:
    """Open one of the job's files for reading; None when it is gone."""
    try:
        return shared_storage().open(f"{_folder(job)}/{name}", "rb")
    except FileNotFoundError:
        return None


def job_files_delete(job: Job) -> None:
    """Delete every file stored for the job (a rerun's or a pruned snapshot's), also those
    of a run that failed before it recorded their names."""
    storage = shared_storage()
    folder = _folder(job)
    try:
        names = storage.listdir(folder)[1]
    except FileNotFoundError:  # a folder storage without the job's folder: nothing stored
        return
    for name in names:
        storage.delete(f"{folder}/{name}")
    if isinstance(storage, FileSystemStorage):  # a bucket has no folders to leave behind
        with suppress(OSError):  # a run of the same job writing again keeps its folder
            os.rmdir(storage.path(folder))
