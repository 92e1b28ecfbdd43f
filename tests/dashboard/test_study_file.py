"""The campaign page exports the campaign's study file (a job), and it reads back."""

import pytest
from django.urls import reverse

from annotation.models import Campaign
from annotation.studyfiles import study_create, study_read
from dashboard import services
from dashboard.models import Job
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_the_study_file_export_downloads_a_file_that_reads_back(
    ada, researcher, tmp_path, settings, django_capture_on_commit_callbacks, fmt
) -> None:
    settings.DATA_DIR = tmp_path
    campaign = CampaignFactory(owner=researcher, slug="ratings", redundancy=4)
    ItemFactory.create_batch(5, campaign=campaign)
    page = ada.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    assert 'id="study-file"' in page
    with django_capture_on_commit_callbacks(execute=False):
        ada.post(
            reverse("dashboard:job_create", args=[campaign.slug]),
            {"kind": "export", "what": "study", "format": fmt},
        )
    job = Job.objects.get(kind=Job.Kind.EXPORT)
    services.job_run(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert job.files == [f"ratings.{fmt}", "ratings.items.jsonl"]
    out = tmp_path / "download"
    out.mkdir()
    for name in job.files:
        response = ada.get(reverse("dashboard:job_file", args=[campaign.slug, job.pk, name]))
        assert "attachment" in response["Content-Disposition"]
        (out / name).write_bytes(b"".join(response.streaming_content))
    study = study_read(out / f"ratings.{fmt}", slug="ratings-again")
    copy = study_create(study=study).campaign
    assert copy.redundancy == 4 and copy.protocol == campaign.protocol
    assert copy.items.count() == 5 and copy.status == Campaign.Status.DRAFT


def test_an_unknown_study_file_format_is_refused_and_starts_nothing(ada, researcher) -> None:
    campaign = CampaignFactory(owner=researcher, slug="ratings")
    response = ada.post(
        reverse("dashboard:job_create", args=[campaign.slug]),
        {"kind": "export", "what": "study", "format": "xlsx"},
        follow=True,
    )
    assert any("Unknown export format" in str(m) for m in response.context["messages"])
    # (With a broker the campaign page it lands on queues its report: that job is not ours.)
    assert not Job.objects.filter(kind=Job.Kind.EXPORT).exists()
