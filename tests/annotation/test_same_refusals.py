"""The admin, the dashboard, the API and the services refuse the same bad inputs (issue #30).

Each test takes one bad input through every door that has the operation — the service, the
Django admin's add or change form (as a superuser), the dashboard (its page or its service)
and the API — and asserts that each refuses it and that the database is as it was.
"""

import json
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Campaign, Item
from annotation.services import (
    BudgetBelowCommitted,
    campaign_budget_set,
    campaign_create,
    campaign_settings_update,
    items_add,
)
from api.keys import api_key_create
from dashboard.drafts import ItemsUpload, draft_create, draft_items_import, draft_settings_update
from evalsite.errors import AnnotationError, Conflict, InvalidParameters
from recruitment.models import Payment, Publication
from recruitment.services import campaign_committed
from tests.api.conftest import ApiClient, error_of
from tests.factories import CampaignFactory, WorkerFactory, likert_payload

pytestmark = pytest.mark.django_db

BAD_PAYLOAD = {"context": ["Hello."], "response": "", "model": "model-a"}  # an empty response


@pytest.fixture
def researcher(db) -> User:
    return User.objects.create_user("ada", password="pw-ada-123", is_staff=True)


@pytest.fixture
def ada(client, researcher):
    """The dashboard, logged in as the researcher."""
    client.force_login(researcher)
    return client


@pytest.fixture
def api(researcher) -> ApiClient:
    return ApiClient(api_key_create(user=researcher, name="tests")[1])


def _row(campaign: Campaign) -> dict:
    """The campaign's row as stored, to compare before and after a refusal."""
    return Campaign.objects.filter(pk=campaign.pk).values().get()


def _admin_add(admin_client, **changes):
    """POST the admin's campaign add form (a Likert draft) with ``changes``."""
    data = {
        "slug": "new-study",
        "name": "New study",
        "protocol": "likert",
        "parameters": "{}",
        "reward": "0.10",
        "budget": "10",
        "gold_rate": "0",
        "gold_min_accuracy": "0.7",
        "gold_min_answered": "3",
        "training_pass_mark": "0.8",
        "training_attempts": "2",
        "withdrawal": "keep",
        "language": "en",
        "consent_version": "1",
        "_save": "Save",
    }
    return admin_client.post(reverse("admin:annotation_campaign_add"), {**data, **changes})


def _admin_change(admin_client, campaign: Campaign, **changes):
    """POST the admin's change form of ``campaign`` with its stored values and ``changes``;
    the fields the admin shows read-only for its status are left out, as a browser does."""
    row = _row(campaign)
    data = {
        name: "" if row[name] is None else row[name]
        for name in (
            "name",
            "reward",
            "budget",
            "gold_rate",
            "gold_min_accuracy",
            "gold_min_answered",
            "min_seconds_per_item",
            "max_items_per_worker",
            "training_pass_mark",
            "training_attempts",
            "withdrawal",
            "language",
            "consent_version",
            "description",
            "instructions",
            "consent_text",
            "training_qualification",
        )
    }
    data["owner"] = row["owner_id"] or ""
    if campaign.status == Campaign.Status.DRAFT:
        data |= {k: row[k] for k in ("redundancy", "items_per_assignment", "lease_seconds")}
        data["parameters"] = json.dumps(row["parameters"])
    url = reverse("admin:annotation_campaign_change", args=[campaign.pk])
    return admin_client.post(url, {**data, **changes, "_save": "Save"})


def _refused_on_the_form(response, text: str) -> None:
    """The admin answered its form again (200, not a redirect) with ``text`` as an error."""
    assert response.status_code == 200, response.status_code
    assert response.context["adminform"].form.errors, "no form error"
    assert text in response.content.decode()


def _committed_40(campaign: Campaign) -> None:
    """Commit 40.00 of the campaign's budget: a publication's 30.00 and a 9.00 bonus + 1.00."""
    Publication.objects.create(
        campaign=campaign, provider="local", status="live", reserved=Decimal("30.00")
    )
    Payment.objects.create(
        campaign=campaign,
        provider="local",
        worker=WorkerFactory(),
        kind=Payment.Kind.BONUS,
        amount=Decimal("9.00"),
        fee=Decimal("1.00"),
        status=Payment.Status.PAID,
        idempotency_key="bonus-1",
        actor="tests",
    )
    assert campaign_committed(campaign) == Decimal("40.00")


def test_a_bad_slug_is_refused_everywhere(admin_client, ada, api, researcher) -> None:
    with pytest.raises(InvalidParameters, match="slug"):
        campaign_create(slug="Bad_Slug", name="x", protocol="likert")
    _refused_on_the_form(_admin_add(admin_client, slug="Bad_Slug"), "lowercase letters")
    with pytest.raises(InvalidParameters, match="slug"):
        draft_create(protocol="likert", slug="Bad_Slug", name="x", owner=researcher)
    page = ada.post(
        reverse("dashboard:wizard"), {"protocol": "likert", "slug": "Bad_Slug", "name": "x"}
    )
    assert page.status_code == 400
    response = api.post("/campaigns", {"slug": "Bad_Slug", "name": "x", "protocol": "likert"})
    assert error_of(response)["field"] == "slug"
    assert not Campaign.objects.exists()


def test_redundancy_out_of_bounds_is_refused_everywhere(admin_client, api, researcher) -> None:
    with pytest.raises(InvalidParameters, match="Workers per item"):
        campaign_create(slug="a", name="a", protocol="likert", redundancy=0)
    _refused_on_the_form(_admin_add(admin_client, redundancy="1001"), "Workers per item")
    assert not Campaign.objects.exists()
    draft = CampaignFactory(owner=researcher, slug="draft", status="draft", redundancy=3)
    before = _row(draft)
    with pytest.raises(InvalidParameters, match="Workers per item"):
        campaign_settings_update(campaign=draft, values={"redundancy": 1001})
    _refused_on_the_form(_admin_change(admin_client, draft, redundancy="1001"), "Workers per")
    with pytest.raises(InvalidParameters, match="Workers per item"):
        draft_settings_update(campaign=draft, parameters=draft.parameters, values={"redundancy": 0})
    error = error_of(api.patch("/campaigns/draft", {"settings": {"redundancy": 1001}}))
    assert error["field"] == "redundancy"
    assert _row(draft) == before


def test_a_new_campaign_starts_at_the_protocols_redundancy_whichever_door(
    admin_client, api, researcher
) -> None:
    """SSA asks 5 workers per response; the admin once created its campaigns with 1."""
    assert _admin_add(admin_client, slug="by-admin", protocol="ssa").status_code == 302
    draft_create(protocol="ssa", slug="by-dashboard", name="x", owner=researcher)
    assert api.post("/campaigns", {"slug": "by-api", "protocol": "ssa"}).status_code == 201
    campaign_create(slug="by-service", name="x", protocol="ssa")
    made = dict(Campaign.objects.values_list("slug", "redundancy"))
    assert made == {"by-admin": 5, "by-dashboard": 5, "by-api": 5, "by-service": 5}


def test_an_item_the_protocol_refuses_is_refused_everywhere(admin_client, api, researcher):
    draft = CampaignFactory(owner=researcher, slug="draft", status="draft")
    with pytest.raises(InvalidParameters, match="'response' must be a non-empty string"):
        items_add(campaign=draft, items=[("bad", BAD_PAYLOAD)])
    response = admin_client.post(
        reverse("admin:annotation_item_add"),
        {"campaign": draft.pk, "key": "bad", "payload": json.dumps(BAD_PAYLOAD), "_save": "Save"},
    )
    _refused_on_the_form(response, "non-empty string")
    lines = json.dumps({"key": "bad", "payload": BAD_PAYLOAD}) + "\n"
    upload = ItemsUpload(items=SimpleUploadedFile("items.jsonl", lines.encode()))
    with pytest.raises(AnnotationError, match="non-empty string"):
        draft_items_import(campaign=draft, upload=upload)
    error = error_of(
        api.post("/campaigns/draft/items", {"items": [{"key": "bad", "payload": BAD_PAYLOAD}]})
    )
    assert "non-empty string" in error["message"]
    assert not Item.objects.exists()


def test_the_admin_adds_a_good_item_through_the_item_service(admin_client, researcher) -> None:
    draft = CampaignFactory(owner=researcher, slug="draft", status="draft")
    payload = {**likert_payload(1), "response": "  Padded.  "}
    response = admin_client.post(
        reverse("admin:annotation_item_add"),
        {"campaign": draft.pk, "key": "good", "payload": json.dumps(payload), "_save": "Save"},
    )
    assert response.status_code == 302
    assert Item.objects.get(key="good").payload["response"] == "Padded."  # cleaned by it


def test_a_live_budget_below_what_is_committed_is_refused_everywhere(
    admin_client, ada, api, researcher
) -> None:
    live = CampaignFactory(owner=researcher, slug="live", status="live", budget="50.00")
    _committed_40(live)
    before = _row(live)
    with pytest.raises(BudgetBelowCommitted, match=r"5\.00 .* committed \(40\.00"):
        campaign_budget_set(campaign=live, budget="5.00")
    with pytest.raises(Conflict, match="campaign_budget_set"):
        campaign_settings_update(campaign=live, values={"budget": "5.00"})
    _refused_on_the_form(_admin_change(admin_client, live, budget="5.00"), "committed (40.00")
    page = ada.post(
        reverse("dashboard:campaign_budget", args=["live"]), {"budget": "5"}, follow=True
    )
    assert "cannot go below what is already committed (40.00" in page.content.decode()
    error = error_of(api.patch("/campaigns/live", {"settings": {"budget": "5.00"}}))
    assert error["field"] == "budget" and "40.00" in error["message"]
    assert _row(live) == before


def test_a_live_budget_at_what_is_committed_is_taken_everywhere(admin_client, ada, api, researcher):
    live = CampaignFactory(owner=researcher, slug="live", status="live", budget="50.00")
    _committed_40(live)
    for budget, door in (
        ("45.00", lambda b: campaign_budget_set(campaign=live, budget=b)),
        ("44.00", lambda b: _admin_change(admin_client, live, budget=b)),
        (
            "43.00",
            lambda b: ada.post(reverse("dashboard:campaign_budget", args=["live"]), {"budget": b}),
        ),
        ("40.00", lambda b: api.patch("/campaigns/live", {"settings": {"budget": b}})),
    ):
        door(budget)
        assert Campaign.objects.get(pk=live.pk).budget == Decimal(budget)


def test_a_draft_after_a_launch_that_failed_partway_keeps_its_floor(admin_client, researcher):
    """A launch records its reservation before the campaign goes live, and one that fails
    partway keeps the cost of the HITs it made: a draft may have committed money."""
    draft = CampaignFactory(owner=researcher, slug="draft", status="draft", budget="50.00")
    _committed_40(draft)
    before = _row(draft)
    with pytest.raises(BudgetBelowCommitted):
        campaign_budget_set(campaign=draft, budget="5.00")
    _refused_on_the_form(_admin_change(admin_client, draft, budget="5.00"), "committed (40.00")
    with pytest.raises(BudgetBelowCommitted):  # the wizard's settings step
        draft_settings_update(campaign=draft, parameters={}, values={"budget": "5.00"})
    assert _row(draft) == before
    updated = draft_settings_update(campaign=draft, parameters={}, values={"budget": "45.00"})
    assert updated.budget == Decimal("45.00")


def test_a_name_over_200_characters_is_refused_everywhere(admin_client, api, researcher):
    long = "n" * 201
    with pytest.raises(InvalidParameters, match="name"):
        campaign_create(slug="a", name=long, protocol="likert")
    _refused_on_the_form(_admin_add(admin_client, name=long), "200 characters")
    with pytest.raises(InvalidParameters, match="200 characters"):
        draft_create(protocol="likert", slug="a", name=long, owner=researcher)
    error_of(api.post("/campaigns", {"slug": "a", "name": long, "protocol": "likert"}))
    assert not Campaign.objects.exists()


def test_a_live_gold_rate_out_of_bounds_is_refused_everywhere(admin_client, api, researcher):
    live = CampaignFactory(owner=researcher, slug="live", status="live", gold_rate=0.1)
    before = _row(live)
    with pytest.raises(InvalidParameters, match="gold rate"):
        campaign_settings_update(campaign=live, values={"gold_rate": 0.9})
    _refused_on_the_form(_admin_change(admin_client, live, gold_rate="0.9"), "gold rate")
    assert error_of(api.patch("/campaigns/live", {"settings": {"gold_rate": 0.9}}))["field"] == (
        "gold_rate"
    )
    assert _row(live) == before
