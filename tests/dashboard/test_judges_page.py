"""The judges page: start a judge, its progress, and the agreement report with its figure."""

import html

import pytest
from django.urls import reverse

from annotation.models import Campaign, Judgment, Worker
from dashboard import services
from dashboard.models import Job
from modelhub.services import endpoint_register
from tests.judges.conftest import campaign_make, good_policy, likert_items
from tests.judges.fake_judge import FakeJudge

pytestmark = pytest.mark.django_db


@pytest.fixture
def judge(db):
    server = FakeJudge()
    server.policy = good_policy
    endpoint_register(
        name="fake-judge",
        backend="openai_http",
        config={"base_url": server.base_url, "model": "judge-1", "max_retries": 0},
    )
    yield server
    server.close()


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def judged(researcher) -> Campaign:
    campaign = campaign_make("judged-likert", "likert", likert_items())
    Campaign.objects.filter(pk=campaign.pk).update(owner=researcher)
    return campaign


def page_of(ada, campaign) -> str:
    response = ada.get(reverse("dashboard:judges", args=[campaign.slug]))
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_a_judge_runs_from_the_page_and_its_agreement_report_is_shown(
    ada, judged, judge, tmp_path, settings, django_capture_on_commit_callbacks, celery_eager
) -> None:
    settings.DATA_DIR = tmp_path
    assert "No judge has run on this campaign yet." in page_of(ada, judged)
    with django_capture_on_commit_callbacks(execute=True):
        response = ada.post(
            reverse("dashboard:judge_run", args=[judged.slug]),
            {"endpoint": "fake-judge", "mode": "json"},
            follow=True,
        )
    assert any("Judge run #" in str(m) for m in response.context["messages"])
    judges = Judgment.objects.filter(item__campaign=judged, worker__provider=Worker.Provider.MODEL)
    assert judges.exists()
    page = page_of(ada, judged)
    assert "Done" in page and f"{len(likert_items())} / {len(likert_items())}" in page
    with django_capture_on_commit_callbacks(execute=False):
        ada.post(reverse("dashboard:judges_report", args=[judged.slug]))
    job = Job.objects.get(kind=Job.Kind.JUDGES)
    services.job_run(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    page = page_of(ada, judged)
    figure = job.result["figures"]["agreement"]
    assert reverse("dashboard:job_file", args=[judged.slug, job.pk, figure["png"]]) in page
    assert f'alt="{figure["alt"]}"' in page and figure["alt"] != "agreement figure"
    assert 'data-table="agreement"' in page
    image = ada.get(reverse("dashboard:job_file", args=[judged.slug, job.pk, figure["png"]]))
    assert b"".join(image.streaming_content)[:4] == b"\x89PNG"
    campaign_page = ada.get(reverse("dashboard:campaign", args=[judged.slug])).content.decode()
    assert reverse("dashboard:judges", args=[judged.slug]) in campaign_page


def test_a_bad_judge_request_says_why_and_starts_nothing(ada, judged, judge) -> None:
    response = ada.post(
        reverse("dashboard:judge_run", args=[judged.slug]), {"endpoint": "nobody"}, follow=True
    )
    assert any("Choose a registered model" in str(m) for m in response.context["messages"])
    response = ada.post(
        reverse("dashboard:judge_run", args=[judged.slug]),
        {"endpoint": "fake-judge", "mode": "telepathy"},
        follow=True,
    )
    assert any("Unknown judge mode" in str(m) for m in response.context["messages"])
    assert not Judgment.objects.filter(worker__provider=Worker.Provider.MODEL).exists()


def test_another_researcher_cannot_see_or_start_judges(client, judged, other_researcher) -> None:
    client.force_login(other_researcher)
    assert client.get(reverse("dashboard:judges", args=[judged.slug])).status_code == 404
    url = reverse("dashboard:judge_run", args=[judged.slug])
    assert client.post(url, {"endpoint": "fake-judge"}).status_code == 404
