"""Input no field accepts is refused at the edge with 400, and nothing is stored."""

from annotation.models import AuditLog, Judgment, Worker
from tests.factories import CampaignFactory, ItemFactory


def test_a_nul_in_a_worker_link_is_refused_before_any_worker_is_made(client, db):
    campaign = CampaignFactory()
    ItemFactory(campaign=campaign)
    response = client.get(f"/task/{campaign.slug}/", {"workerId": "w\x001"})
    assert response.status_code == 400
    assert "NUL character" in response.content.decode()
    assert not Worker.objects.exists()


def test_a_nul_in_a_form_field_gets_400_as_text_or_json(admin_client, db):
    campaign = CampaignFactory()
    url = f"/dashboard/c/{campaign.slug}/workers/"
    page = admin_client.post(url, {"worker": "W\x00", "action": "block", "reason": "x"})
    assert page.status_code == 400
    as_json = admin_client.post(
        url, {"worker": "W", "action": "block", "reason": "x\x00"}, HTTP_ACCEPT="application/json"
    )
    assert as_json.status_code == 400 and "NUL" in as_json.json()["error"]
    assert not AuditLog.objects.exists() and not Judgment.objects.exists()


def test_a_nul_in_an_api_parameter_gets_the_apis_error_body(client, db):
    response = client.get("/api/v1/campaigns", {"status": "live\x00"})
    assert response.status_code == 400
    error = response.json()["error"]  # the API's one error body (docs/api.md), not plain text
    assert "NUL" in error["message"] and error["code"]
