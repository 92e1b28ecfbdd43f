"""The admin adds and changes rows only through their services; the rest is view-only."""

import json
from decimal import Decimal

from django.urls import reverse

from annotation.admin.campaigns import CampaignForm
from annotation.allocation import item_next
from annotation.models import Campaign, Dataset, Lease, Participation
from annotation.protocols import registry
from annotation.services import assignment_start, campaign_set_status
from recruitment.models import Publication
from tests.factories import CampaignFactory, ItemFactory, WorkerFactory


def campaign_form(parameters: str, **controls: str) -> CampaignForm:
    """Return the admin's campaign form filled in with ``parameters`` (JSON text)."""
    fields = {
        "slug": "s",
        "name": "n",
        "protocol": "likert",
        "status": "draft",
        "redundancy": 1,
        "items_per_assignment": 1,
        "lease_seconds": 60,
        "reward": "0",
        "budget": "0",
        "gold_rate": "0",
        "gold_min_accuracy": "0.7",
        "gold_min_answered": "3",
        "min_seconds_per_item": "0",
        "withdrawal": "keep",
        "language": "en",
        "training_pass_mark": "0.8",
        "training_attempts": "2",
        **controls,
    }
    return CampaignForm(data={**fields, "parameters": parameters})


def test_admin_form_refuses_invalid_parameters(db):
    form = campaign_form('{"highlight_sem": -1}')
    assert not form.is_valid()
    assert "highlight_sem" in " ".join(form.errors["parameters"])


def test_admin_form_refuses_quality_controls_out_of_range(db):
    form = campaign_form("{}", gold_rate="0.9", max_items_per_worker="0")
    assert not form.is_valid()
    assert "gold_rate" in str(form.errors) or "campaign_gold_rate_range" in str(form.errors)


def test_admin_adds_a_campaign_through_the_service_with_the_published_defaults(admin_client):
    post = {
        key: value
        for key, value in campaign_form("{}", min_seconds_per_item="").data.items()
        if key not in ("status", "redundancy", "items_per_assignment")
    }
    response = admin_client.post("/admin/annotation/campaign/add/", {**post, "slug": "emo"})
    assert response.status_code == 302
    campaign = Campaign.objects.get(slug="emo")
    assert campaign.parameters == registry.get("likert").default_parameters()
    likert = registry.get("likert")
    assert (campaign.status, campaign.redundancy, campaign.items_per_assignment) == (
        "draft",
        likert.default_redundancy,
        likert.default_items_per_assignment,
    )


def test_admin_pages_render_for_staff(admin_client, campaign):
    for url in (
        "/admin/annotation/campaign/",
        f"/admin/annotation/campaign/{campaign.pk}/change/",
        "/admin/annotation/judgment/",
        "/admin/annotation/participation/",
        "/admin/recruitment/payment/",
        "/admin/annotation/auditlog/",
        "/admin/recruitment/publication/",
        "/admin/recruitment/hit/",
        "/admin/annotation/workerblock/",
        "/admin/annotation/item/?gold__isempty=0",
        "/admin/modelhub/modelendpoint/",
    ):
        assert admin_client.get(url).status_code == 200


def test_money_and_audit_records_cannot_be_added_in_the_admin(admin_client):
    for model in ("recruitment/payment", "annotation/auditlog", "recruitment/publication"):
        assert admin_client.get(f"/admin/{model}/add/").status_code == 403
    for model in ("recruitment/hit", "annotation/workerblock"):
        assert admin_client.get(f"/admin/{model}/add/").status_code == 403


def test_rows_without_an_admin_service_are_view_only(admin_client, campaign):
    """Workers arrive through their provider, soft blocks through quality control, data sets
    and dialogues through their import: the admin neither adds nor edits them."""
    worker = WorkerFactory()
    participation = Participation.objects.create(campaign=campaign, worker=worker)
    dataset = Dataset.objects.create(name="ds", source_format="jsonl")
    rows = [("worker", worker), ("participation", participation), ("dataset", dataset)]
    for model in ("worker", "participation", "dataset", "situation", "dialogue"):
        assert admin_client.get(f"/admin/annotation/{model}/add/").status_code == 403
    for model, row in rows:
        url = f"/admin/annotation/{model}/{row.pk}/change/"
        assert admin_client.get(url).status_code == 200
        assert admin_client.post(url, {"soft_blocked": "on", "name": "x"}).status_code == 403
    participation.refresh_from_db()
    dataset.refresh_from_db()
    assert not participation.soft_blocked and dataset.name == "ds"


def test_an_item_is_view_only_once_added(admin_client, campaign):
    item = ItemFactory(campaign=campaign)
    url = f"/admin/annotation/item/{item.pk}/change/"
    assert admin_client.get(url).status_code == 200
    post = {"campaign": campaign.pk, "key": item.key, "payload": '{"response": "x"}'}
    assert admin_client.post(url, post).status_code == 403
    item.refresh_from_db()
    assert item.payload["response"] != "x"


def test_a_refusal_only_the_locked_service_sees_is_a_message_not_a_500(
    admin_client, campaign, monkeypatch
):
    """Between the form's check and the save, a bonus may commit more of the budget: the
    ledger's check under the campaign's lock refuses, and the admin's transaction rolls back
    everything the save had changed."""
    Publication.objects.create(campaign=campaign, provider="local", reserved=Decimal("30.00"))
    monkeypatch.setattr("annotation.admin.campaigns.campaign_budget_check", lambda **kwargs: None)
    url = f"/admin/annotation/campaign/{campaign.pk}/change/"
    post = _change_form_post(campaign, budget="5.00", name="Renamed")
    for live in ("parameters", "slug", "protocol", "status", "redundancy"):
        post.pop(live)  # read-only while live
    response = admin_client.post(url, post, follow=True)
    assert response.status_code == 200
    assert "cannot go below what is already committed (30.00" in response.content.decode()
    campaign.refresh_from_db()
    assert (campaign.budget, campaign.name) == (Decimal("0.00"), f"Campaign {campaign.slug}")


def _change_form_post(campaign, **changes):
    """Return the admin change form's POST data for ``campaign`` with ``changes`` applied."""
    data = {
        "slug": campaign.slug,
        "name": campaign.name,
        "protocol": campaign.protocol,
        "parameters": json.dumps(campaign.parameters),
        "status": campaign.status,
        "redundancy": campaign.redundancy,
        "items_per_assignment": campaign.items_per_assignment,
        "lease_seconds": campaign.lease_seconds,
        "reward": "0",
        "budget": "0",
        "gold_rate": "0",
        "gold_min_accuracy": "0.7",
        "gold_min_answered": "3",
        "min_seconds_per_item": "0",
        "training_pass_mark": "0.8",
        "training_attempts": "2",
        "withdrawal": "keep",
        "language": "en",
        "_save": "Save",
    }
    return {**data, **changes}


def test_admin_cannot_reopen_a_finished_campaign_or_switch_its_protocol(admin_client, campaign):
    campaign_set_status(campaign=campaign, status="finished")
    slug = campaign.slug
    url = f"/admin/annotation/campaign/{campaign.pk}/change/"
    post = _change_form_post(
        campaign, status="live", protocol="pairwise", parameters="{}", slug="other", name="Renamed"
    )
    assert admin_client.post(url, post).status_code == 302
    campaign.refresh_from_db()
    assert (campaign.status, campaign.protocol, campaign.slug) == (
        "finished",
        "likert",
        slug,
    )
    assert campaign.parameters == registry.get("likert").default_parameters()
    assert campaign.name == "Renamed"  # what may change still does


def test_admin_sets_the_withdrawal_policy_and_training_within_bounds(admin_client, campaign):
    url = f"/admin/annotation/campaign/{campaign.pk}/change/"
    refused = admin_client.post(url, _change_form_post(campaign, training_attempts="1"))
    assert refused.status_code == 200 and "Training attempts" in refused.content.decode()
    post = _change_form_post(campaign, withdrawal="drop", training_pass_mark="0.9")
    assert admin_client.post(url, post).status_code == 302
    campaign.refresh_from_db()
    assert (campaign.withdrawal, campaign.training_pass_mark) == ("drop", 0.9)


def test_admin_status_actions_go_through_the_lifecycle(admin_client, campaign):
    campaign_set_status(campaign=campaign, status="finished")
    response = admin_client.post(
        "/admin/annotation/campaign/",
        {"action": "go_live", "_selected_action": [campaign.pk]},
        follow=True,
    )
    assert "finished campaign cannot become live" in response.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == "finished"
    draft = CampaignFactory(status="draft")
    ItemFactory(campaign=draft)
    admin_client.post(
        "/admin/annotation/campaign/", {"action": "go_live", "_selected_action": [draft.pk]}
    )
    draft.refresh_from_db()
    assert draft.status == "live"


def test_judgments_assignments_and_leases_are_view_only_in_the_admin(admin_client, campaign):
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    item_next(assignment=assignment)
    for model, pk in (("assignment", assignment.pk), ("lease", Lease.objects.get().pk)):
        assert admin_client.get(f"/admin/annotation/{model}/{pk}/change/").status_code == 200
        post = admin_client.post(f"/admin/annotation/{model}/{pk}/change/", {"status": "approved"})
        assert post.status_code == 403
        assert admin_client.get(f"/admin/annotation/{model}/{pk}/delete/").status_code == 403
    assignment.refresh_from_db()
    assert assignment.status == "accepted"


def test_campaigns_and_items_are_never_deleted_in_the_admin(admin_client, campaign):
    item = campaign.items.first()
    for url in (
        reverse("admin:annotation_campaign_delete", args=[campaign.pk]),
        reverse("admin:annotation_item_delete", args=[item.pk]),
    ):
        assert admin_client.post(url, {"post": "yes"}).status_code == 403
    assert Campaign.objects.filter(pk=campaign.pk).exists() and campaign.items.count() > 0
