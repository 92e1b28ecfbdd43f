"""API keys: hashed, shown once, revoked by command; what a key sees."""

import hashlib

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign
from api.models import ApiKey
from tests.api.conftest import ApiClient, error_of
from tests.factories import CampaignFactory


def test_a_key_is_stored_hashed_and_shown_only_by_its_prefix(researcher, key) -> None:
    row = ApiKey.objects.get()
    assert row.digest == hashlib.sha256(key.encode()).hexdigest()
    assert key.startswith(row.prefix) and len(key) > len(row.prefix) + 30
    assert key not in {row.prefix, row.digest, row.name}


def test_the_command_creates_lists_and_revokes_keys(researcher, capsys) -> None:
    call_command("api_key", "create", "--user", "ada", "--name", "notebook")
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert ApiClient(key).get("/campaigns").status_code == 200
    call_command("api_key", "list", "--user", "ada")
    listed = capsys.readouterr().out
    prefix = ApiKey.objects.get().prefix
    assert prefix in listed and "notebook" in listed and key not in listed
    call_command("api_key", "revoke", "--user", "ada", "--prefix", prefix)
    assert "Revoked" in capsys.readouterr().out
    assert error_of(ApiClient(key).get("/campaigns"))["code"] == "unauthenticated"


def test_the_command_refuses_unknown_users_and_non_staff(db, django_user_model) -> None:
    with pytest.raises(CommandError, match="No user"):
        call_command("api_key", "create", "--user", "nobody")
    django_user_model.objects.create_user("walt", password="pw-walt-123")
    with pytest.raises(CommandError, match="not an active staff account"):
        call_command("api_key", "create", "--user", "walt")
    assert not ApiKey.objects.exists()


def test_missing_wrong_and_malformed_keys_get_401_with_the_error_body(api, researcher) -> None:
    for client in (ApiClient(None), ApiClient("evs_wrong"), ApiClient("nonsense")):
        response = client.get("/campaigns")
        assert response.status_code == 401
        assert error_of(response)["code"] == "unauthenticated"
        assert response["WWW-Authenticate"] == "Bearer"


def test_a_key_whose_user_lost_staff_status_gets_403(api, researcher) -> None:
    researcher.is_staff = False
    researcher.save()
    response = api.get("/campaigns")
    assert response.status_code == 403 and error_of(response)["code"] == "forbidden"


def test_a_key_sees_only_its_users_campaigns_as_the_dashboard_does(
    api, researcher, other_researcher
) -> None:
    mine = CampaignFactory(owner=researcher)
    theirs = CampaignFactory(owner=other_researcher)
    listed = api.get("/campaigns").json()
    assert [c["slug"] for c in listed["results"]] == [mine.slug]
    response = api.get(f"/campaigns/{theirs.slug}")
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert api.post(f"/campaigns/{theirs.slug}/status", {"status": "paused"}).status_code == 404
    assert Campaign.objects.get(pk=theirs.pk).status == Campaign.Status.LIVE


def test_a_superusers_key_sees_every_campaign(db, django_user_model, researcher) -> None:
    from api.keys import api_key_create

    root = django_user_model.objects.create_superuser("root", password="pw-root-123")
    CampaignFactory(owner=researcher)
    assert ApiClient(api_key_create(user=root)[1]).get("/campaigns").json()["count"] == 1
