"""Job files in the shared storage: an S3 bucket named by EVALSITE_STORAGE_URL, served here by
moto's S3 server on loopback (the real wire protocol), read back with boto3, not our code."""

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from django.urls import reverse
from moto.server import ThreadedMotoServer

from api.keys import api_key_create
from dashboard import services
from dashboard.files import shared_storage
from dashboard.models import Job
from evalsite.env import read_storage
from tests.api.conftest import ApiClient


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_endpoint, settings, monkeypatch, tmp_path) -> Any:
    """A fresh bucket that storages["shared"] points at, read through EVALSITE_STORAGE_URL as
    the settings read it; this process's DATA_DIR is a folder nothing else uses."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    name = f"evalsite-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv(
        "EVALSITE_STORAGE_URL",
        f"s3://{name}/site-a?endpoint_url={s3_endpoint}&region_name=us-east-1"
        "&addressing_style=path",
    )
    settings.DATA_DIR = tmp_path / "worker"
    settings.STORAGES = {
        **settings.STORAGES,
        "shared": read_storage("EVALSITE_STORAGE_URL", settings.DATA_DIR / "files"),
    }
    s3 = boto3.resource("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket=name)
    return s3.Bucket(name)


def _stored(bucket: Any, job: Job) -> dict[str, bytes]:
    prefix = f"site-a/jobs/{job.campaign.slug}/{job.pk}/"
    return {
        item.key[len(prefix) :]: item.get()["Body"].read()
        for item in bucket.objects.filter(Prefix=prefix)
    }


def _run(campaign, kind: str, **options: Any) -> Job:
    job = services.job_start(campaign=campaign, kind=kind, options=options)
    services.job_run(job.pk)  # queued on commit, which the test's transaction never reaches
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    return job


def test_report_and_export_files_are_objects_served_by_web_processes_without_the_folder(
    bucket, filled, researcher, client, settings, tmp_path
) -> None:
    report = _run(filled, Job.Kind.REPORT)
    export = _run(filled, Job.Kind.EXPORT, what="judgments", format="csv")
    assert not (tmp_path / "worker").exists()  # the worker kept nothing of its own
    settings.DATA_DIR = tmp_path / "web"  # another host: its own, empty data folder
    client.force_login(researcher)
    api = ApiClient(api_key_create(user=researcher, name="tests")[1])
    for job in (report, export):
        stored = _stored(bucket, job)
        assert set(stored) == set(job.files) and all(stored.values())
        first, last = job.files[0], job.files[-1]
        page = client.get(reverse("dashboard:job_file", args=[filled.slug, job.pk, first]))
        assert b"".join(page.streaming_content) == stored[first]
        via_api = api.get(f"/campaigns/{filled.slug}/jobs/{job.pk}/files/{last}")
        assert b"".join(via_api.streaming_content) == stored[last]
    assert stored[export.files[0]].startswith(b"campaign,")  # the judgments' CSV header
    gone = export.files[0]
    bucket.Object(f"site-a/jobs/{filled.slug}/{export.pk}/{gone}").delete()
    page = client.get(reverse("dashboard:job_file", args=[filled.slug, export.pk, gone]))
    assert page.status_code == 404
    via_api = api.get(f"/campaigns/{filled.slug}/jobs/{export.pk}/files/{gone}")
    assert via_api.status_code == 404 and "The file is gone" in via_api.json()["error"]["message"]


def test_a_rerun_replaces_the_jobs_objects_and_a_pruned_snapshot_loses_its_own(
    bucket, campaign
) -> None:
    older, previous = (
        Job.objects.create(
            campaign=campaign, kind=Job.Kind.REPORT, status=Job.Status.DONE, files=["t.csv"]
        )
        for _ in range(2)
    )
    rerun = Job.objects.create(campaign=campaign, kind=Job.Kind.REPORT, status=Job.Status.FAILED)
    for job, name in ((older, "t.csv"), (previous, "t.csv"), (rerun, "from-the-last-run.csv")):
        bucket.put_object(Key=f"site-a/jobs/{campaign.slug}/{job.pk}/{name}", Body=b"x")
    assert services.job_run(rerun.pk)
    rerun.refresh_from_db()
    assert set(_stored(bucket, rerun)) == set(rerun.files)  # the last run's file is gone
    assert not _stored(bucket, older) and not Job.objects.filter(pk=older.pk).exists()
    assert _stored(bucket, previous) == {"t.csv": b"x"}  # the snapshot before stays


def test_the_storage_url_becomes_an_s3_storage_and_unset_a_folder(monkeypatch) -> None:
    monkeypatch.setenv(
        "EVALSITE_STORAGE_URL",
        "s3://evalsite-files/prod/jobs?endpoint_url=http://10.0.0.1:9000&region_name=eu-west-1"
        "&addressing_style=path",
    )
    assert read_storage("EVALSITE_STORAGE_URL", Path("/unused")) == {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": "evalsite-files",
            "location": "prod/jobs",
            "endpoint_url": "http://10.0.0.1:9000",
            "region_name": "eu-west-1",
            "addressing_style": "path",
            "max_memory_size": 16 * 2**20,
        },
    }
    monkeypatch.setenv("EVALSITE_STORAGE_URL", "s3://evalsite-files")
    assert read_storage("EVALSITE_STORAGE_URL", Path("/unused"))["OPTIONS"] == {
        "bucket_name": "evalsite-files",
        "location": "",
        "max_memory_size": 16 * 2**20,
    }
    monkeypatch.delenv("EVALSITE_STORAGE_URL")
    assert read_storage("EVALSITE_STORAGE_URL", Path("/srv/data/files")) == {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": "/srv/data/files", "allow_overwrite": True},
    }


@pytest.mark.parametrize(
    "value",
    [
        "https://evalsite-files/prod",  # not s3://
        "s3:///prod",  # no bucket
        "s3://Evalsite_Files",  # not a bucket name
        "s3://evalsite-files:9000/prod",  # the endpoint goes in endpoint_url
        "s3://AKIA123:wJalrXUt@evalsite-files",  # credentials belong in AWS_*
        "s3://evalsite-files?endpoint=http://10.0.0.1:9000",  # unknown option
        "s3://evalsite-files?region_name=",  # empty option
        "s3://evalsite-files?region_name=a&region_name=b",  # twice
        "s3://evalsite-files?endpoint_url=ftp://10.0.0.1",
        "s3://evalsite-files?endpoint_url=http://10.0.0.1:port",
        "s3://evalsite-files?addressing_style=sideways",
    ],
)
def test_a_malformed_storage_url_stops_the_process_naming_the_variable(monkeypatch, value) -> None:
    monkeypatch.setenv("EVALSITE_STORAGE_URL", value)
    with pytest.raises(SystemExit) as stop:
        read_storage("EVALSITE_STORAGE_URL", Path("/unused"))
    message = str(stop.value)
    assert message.startswith("evalsite: configuration error: EVALSITE_STORAGE_URL")
    assert "expected s3://BUCKET" in message and "\n" not in message
    assert "wJalrXUt" not in message  # a secret put in the URL is not printed


def test_a_snapshot_whose_objects_cannot_be_deleted_stays_for_the_next_prune(
    bucket, campaign, monkeypatch
) -> None:
    older = [
        Job.objects.create(campaign=campaign, kind=Job.Kind.REPORT, status=Job.Status.DONE)
        for _ in range(2)
    ]
    bucket.put_object(Key=f"site-a/jobs/{campaign.slug}/{older[0].pk}/t.csv", Body=b"x")

    def unreachable(name: str) -> None:
        raise ConnectionError("the bucket is unreachable")

    monkeypatch.setattr(shared_storage(), "delete", unreachable)
    newest = _run(campaign, Job.Kind.REPORT)  # done, though its prune failed
    assert set(Job.objects.filter(campaign=campaign)) == {*older, newest}
    assert _stored(bucket, older[0]) == {"t.csv": b"x"}
