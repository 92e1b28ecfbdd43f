"""One schema of campaign settings: every writer enforces it, and the database agrees."""

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from annotation.admin.campaigns import CampaignForm
from annotation.campaign_settings import BONUS, CONTROLS, SETTINGS, settings_clean, value_clean
from annotation.models import Campaign
from annotation.services import campaign_create, campaign_settings_update
from annotation.study_pages import STUDY_FIELDS
from dashboard.wizard import SettingsForm
from evalsite.errors import Conflict, InvalidParameters
from recruitment.services import bonus_pay
from tests.factories import CampaignFactory, WorkerFactory


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_the_database_accepts_every_value_the_schema_accepts(db, name):
    bound = SETTINGS[name]
    for value in (bound.low, bound.high):
        with transaction.atomic():
            campaign = CampaignFactory(**{name: value})
        campaign.refresh_from_db()
        assert getattr(campaign, name) == value


@pytest.mark.parametrize(
    "name", [n for n, b in SETTINGS.items() if b.kind != "money" and b.low > 0]
)
def test_the_database_refuses_what_lies_below_the_schema_where_it_has_a_constraint(db, name):
    bound = SETTINGS[name]
    below = bound.low - 1 if bound.kind == "whole" else -0.5
    with pytest.raises(InvalidParameters):
        value_clean(bound, below)
    with pytest.raises(IntegrityError), transaction.atomic():
        CampaignFactory(**{name: below})


def test_the_wizard_form_and_the_admin_form_take_their_bounds_from_the_schema(db):
    fields = SettingsForm(currency="USD").fields
    assert set(STUDY_FIELDS) <= fields.keys()  # the study texts: checked by study_clean
    for name in fields.keys() - {"parameters", *STUDY_FIELDS}:
        bound = SETTINGS[name]
        if bound.kind == "flag":
            assert fields[name].required is False  # an unticked box is False
            continue
        assert (fields[name].min_value, fields[name].max_value) == (bound.low, bound.high)
        assert fields[name].required is not bound.optional
    form = CampaignForm(
        data={
            "slug": "s",
            "name": "n",
            "protocol": "likert",
            "parameters": "{}",
            "redundancy": 1001,
            "items_per_assignment": 1,
            "lease_seconds": 5,
            "reward": "0",
            "budget": "0",
            "gold_rate": "0",
            "gold_min_accuracy": "0.7",
            "gold_min_answered": "3",
            "min_seconds_per_item": "0",
        }
    )
    assert not form.is_valid()
    assert {"redundancy", "lease_seconds"} <= set(form.errors)


def test_create_and_update_refuse_out_of_range_settings_naming_each(db):
    with pytest.raises(InvalidParameters, match="Workers per item"):
        campaign_create(slug="a", name="a", protocol="likert", redundancy=0)
    with pytest.raises(InvalidParameters, match="The lease"):
        campaign_create(slug="a", name="a", protocol="likert", lease_seconds=8 * 24 * 3600)
    campaign = campaign_create(slug="a", name="a", protocol="likert")
    with pytest.raises(InvalidParameters) as refused:
        campaign_settings_update(campaign=campaign, values={"budget": "1.005", "gold_rate": 2})
    assert set(refused.value.fields) == {"budget", "gold_rate"}
    assert Campaign.objects.get(pk=campaign.pk).budget == Decimal("0.00")


def test_a_live_campaign_changes_only_quality_control(db):
    campaign = CampaignFactory(status="live")
    with pytest.raises(InvalidParameters, match="Unknown setting"):
        campaign_settings_update(campaign=campaign, values={"redundancy": 5})
    with pytest.raises(Conflict):
        campaign_settings_update(campaign=campaign, values={}, parameters={})
    campaign_settings_update(campaign=campaign, values={"gold_rate": 0.2})
    assert Campaign.objects.get(pk=campaign.pk).gold_rate == 0.2
    assert set(CONTROLS) < set(SETTINGS)


def test_a_bonus_over_the_cap_is_refused_by_the_payment_service_itself(db):
    campaign = CampaignFactory(budget=Decimal("1000"))
    with pytest.raises(InvalidParameters, match="A bonus must be an amount like 0.50"):
        bonus_pay(
            campaign=campaign, worker=WorkerFactory(), amount="150", reason="great", actor="t"
        )
    assert value_clean(BONUS, "0.5") == Decimal("0.50")
    assert settings_clean({"max_items_per_worker": None}) == {"max_items_per_worker": None}
