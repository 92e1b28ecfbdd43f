"""API keys in the dashboard: created (shown once), listed by prefix, revoked."""

from django.test import Client

from api.models import ApiKey
from tests.api.conftest import ApiClient


def test_a_researcher_creates_sees_once_and_revokes_a_key(researcher) -> None:
    client = Client()
    client.force_login(researcher)
    assert "no key yet" in client.get("/dashboard/api-keys/").content.decode()
    page = client.post("/dashboard/api-keys/new/", {"name": "notebook"})
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]
    html = page.content.decode()
    key = html.split('<code id="new-key">')[1].split("</code>")[0]
    assert ApiClient(key).get("/campaigns").status_code == 200
    listed = client.get("/dashboard/api-keys/").content.decode()
    prefix = ApiKey.objects.get().prefix
    assert prefix in listed and "notebook" in listed and key not in listed
    client.post("/dashboard/api-keys/revoke/", {"prefix": prefix})
    assert ApiKey.objects.get().revoked_at is not None
    assert ApiClient(key).get("/campaigns").status_code == 401


def test_keys_are_per_researcher_and_staff_only(researcher, other_researcher, key) -> None:
    client = Client()
    client.force_login(other_researcher)
    prefix = ApiKey.objects.get().prefix
    assert prefix not in client.get("/dashboard/api-keys/").content.decode()
    client.post("/dashboard/api-keys/revoke/", {"prefix": prefix})
    assert ApiKey.objects.get().revoked_at is None  # not theirs
    other_researcher.is_staff = False
    other_researcher.save()
    assert client.post("/dashboard/api-keys/new/", {"name": "x"}).status_code == 403
    assert Client().get("/dashboard/api-keys/").status_code == 302  # to the login page
