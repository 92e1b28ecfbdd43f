"""A launched campaign's settings history: every change of its settings, thresholds, texts
and budget, by whom and when, old → new, in the audit log and on the campaign page (issue
#35, item 10). A draft's edits are not history: nobody has seen the study yet."""

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import AuditLog, Campaign
from annotation.services import campaign_settings_update
from api.keys import api_key_create
from dashboard.drafts import draft_settings_update
from dashboard.selectors import HISTORY_SHOWN
from tests.factories import CampaignFactory


@pytest.fixture
def live(researcher) -> Campaign:
    return CampaignFactory(owner=researcher, budget="50.00", gold_rate=0.1)


def _history(campaign) -> list[tuple[str, str]]:
    return list(
        AuditLog.objects.filter(campaign=campaign, action=AuditLog.Action.SETTINGS).values_list(
            "actor", "detail"
        )
    )


def test_the_dashboards_budget_control_writes_one_line_and_none_for_the_same_budget(
    client, researcher, live
) -> None:
    client.force_login(researcher)
    url = reverse("dashboard:campaign_budget", args=[live.slug])
    client.post(url, {"budget": "60"})
    assert _history(live) == [("ada", "budget: 50.00 → 60.00")]
    client.post(url, {"budget": "60.00"})
    assert len(_history(live)) == 1


def test_an_api_update_writes_one_line_per_change_naming_the_keys_user(researcher, live) -> None:
    key = api_key_create(user=researcher, name="tests")[1]
    api = Client(headers={"Authorization": f"Bearer {key}"})

    def patch(settings: dict) -> None:
        url = f"/api/v1/campaigns/{live.slug}"
        response = api.patch(url, {"settings": settings}, content_type="application/json")
        assert response.status_code == 200, response.content

    patch({"gold_rate": 0.3, "min_seconds_per_item": 0.0})  # the second as it was
    assert _history(live) == [("ada", "gold_rate: 0.1 → 0.3")]
    patch({"gold_rate": 0.3})
    assert len(_history(live)) == 1


def test_live_threshold_and_text_changes_name_each_changed_key_and_shorten_long_texts(
    live,
) -> None:
    campaign_settings_update(
        campaign=live,
        values={"gold_min_accuracy": 0.8, "max_items_per_worker": None},  # None: as it was
        study={"description": "x" * 500},
        actor="root",
    )
    [(actor, detail)] = _history(live)
    assert actor == "root"
    assert detail.startswith("gold_min_accuracy: 0.7 → 0.8; description:  → xxx")
    assert detail.endswith("x…") and len(detail) < 200


def test_a_drafts_edits_in_the_wizard_are_not_history(researcher) -> None:
    draft = CampaignFactory(owner=researcher, status=Campaign.Status.DRAFT)
    updated = draft_settings_update(
        campaign=draft, parameters=draft.parameters, values={"redundancy": 2, "budget": "9.00"}
    )
    assert (updated.redundancy, updated.budget) == (2, Decimal("9.00"))
    assert _history(draft) == []


def test_the_campaign_page_shows_the_newest_changes_first_and_links_to_all(
    client, researcher, live
) -> None:
    for rate in range(51, 52 + HISTORY_SHOWN):  # 0.1 → 0.051, …, 0.06 → 0.061
        campaign_settings_update(campaign=live, values={"gold_rate": rate / 1000}, actor="ada")
    client.force_login(researcher)
    page = client.get(reverse("dashboard:campaign", args=[live.slug])).content.decode()
    history = page[page.index('id="history"') :]
    assert history.index("0.06 → 0.061") < history.index("0.059 → 0.06<")
    assert "0.1 → 0.051" not in history  # the eleventh newest
    assert f"All {HISTORY_SHOWN + 1} changes" in history
    everything = client.get(reverse("dashboard:campaign", args=[live.slug]) + "?history=all")
    assert "0.1 → 0.051" in everything.content.decode()
