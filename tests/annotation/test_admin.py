"""The admin validates campaign parameters with the protocol."""

from annotation.admin import CampaignForm
from annotation.protocols import registry


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


def test_admin_form_fills_in_published_defaults(db):
    form = campaign_form("{}")
    assert form.is_valid(), form.errors
    assert form.save().parameters == registry.get("likert").default_parameters()


def test_admin_pages_render_for_staff(admin_client, campaign):
    for url in (
        "/admin/annotation/campaign/",
        f"/admin/annotation/campaign/{campaign.pk}/change/",
        "/admin/annotation/judgment/",
        "/admin/annotation/participation/",
        "/admin/annotation/payment/",
        "/admin/annotation/auditlog/",
        "/admin/annotation/publication/",
        "/admin/annotation/hit/",
        "/admin/annotation/workerblock/",
        "/admin/annotation/item/?gold__isempty=0",
        "/admin/modelhub/modelendpoint/",
    ):
        assert admin_client.get(url).status_code == 200


def test_money_and_audit_records_cannot_be_added_in_the_admin(admin_client):
    for model in ("payment", "auditlog", "publication", "hit", "workerblock"):
        assert admin_client.get(f"/admin/annotation/{model}/add/").status_code == 403
