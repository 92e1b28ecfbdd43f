"""Staff only, and a researcher sees only their own campaigns (superusers see all)."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign
from dashboard.models import Job
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db


def _urls(campaign: Campaign, job_id: int) -> list[tuple[str, str]]:
    slug, item = campaign.slug, campaign.items.first()
    return [
        ("get", reverse("dashboard:campaigns")),
        ("get", reverse("dashboard:campaign", args=[slug])),
        ("get", reverse("dashboard:progress", args=[slug])),
        ("get", reverse("dashboard:spotcheck", args=[slug])),
        ("get", reverse("dashboard:job_status", args=[slug, job_id])),
        ("get", reverse("dashboard:job_file", args=[slug, job_id, "x.csv"])),
        ("post", reverse("dashboard:job_create", args=[slug])),
        ("post", reverse("dashboard:worker_action", args=[slug])),
        ("get", reverse("dashboard:items", args=[slug])),
        ("get", reverse("dashboard:item_preview", args=[slug, item.pk])),
        ("get", reverse("dashboard:consents", args=[slug])),
        ("get", reverse("dashboard:provider", args=[slug])),
        ("get", reverse("dashboard:judges", args=[slug])),
        ("post", reverse("dashboard:judge_run", args=[slug])),
        ("post", reverse("dashboard:judges_report", args=[slug])),
        ("post", reverse("dashboard:provider_publish", args=[slug])),
    ]


def test_anonymous_visitors_are_sent_to_the_login_page(client, filled) -> None:
    job = Job.objects.create(campaign=filled, kind=Job.Kind.REPORT)
    for method, url in _urls(filled, job.pk):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("admin:login")), url


def test_a_non_staff_account_is_refused_every_dashboard_url(client, filled, crowd_worker_user):
    job = Job.objects.create(campaign=filled, kind=Job.Kind.REPORT)
    client.force_login(crowd_worker_user)
    for method, url in _urls(filled, job.pk):
        response = getattr(client, method)(url, {"kind": "report"})
        assert response.status_code == 403, url
    assert Job.objects.count() == 1


def test_a_researcher_is_refused_another_researchers_campaign(client, filled, other_researcher):
    job = Job.objects.create(campaign=filled, kind=Job.Kind.REPORT)
    client.force_login(other_researcher)
    for method, url in _urls(filled, job.pk)[1:]:
        response = getattr(client, method)(url, {"kind": "report"})
        assert response.status_code == 404, url
    assert Job.objects.count() == 1
    listing = client.get(reverse("dashboard:campaigns")).content.decode()
    assert filled.slug not in listing


def test_the_list_shows_a_researcher_their_own_and_a_superuser_everything(
    client, filled, other_researcher, superuser
) -> None:
    theirs = CampaignFactory(owner=other_researcher, slug="bobs-study")
    client.force_login(other_researcher)
    page = client.get(reverse("dashboard:campaigns")).content.decode()
    assert theirs.slug in page and filled.slug not in page
    client.force_login(superuser)
    page = client.get(reverse("dashboard:campaigns")).content.decode()
    assert theirs.slug in page and filled.slug in page


def test_actions_need_the_csrf_token(filled, researcher) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    response = client.post(reverse("dashboard:job_create", args=[filled.slug]), {"kind": "report"})
    assert response.status_code == 403
    response = client.post(
        reverse("dashboard:worker_action", args=[filled.slug]),
        {"worker": "x", "action": "approve"},
    )
    assert response.status_code == 403
    assert not Job.objects.exists()
