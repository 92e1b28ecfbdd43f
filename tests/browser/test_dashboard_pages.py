"""The campaign's own pages a researcher expects, in a real Chromium: items (search and a
worker-page preview), consents, the provider page, LLM judges and the webhook test event;
each reachable from the campaign page, accessible (axe) and free of console errors."""

import pytest
from django.contrib.auth.models import User

from annotation.services.consents import consent_give
from providers import Arrival
from recruitment.models import Publication
from recruitment.services import LaunchOptions, campaign_launch
from tests.browser.axe import assert_accessible
from tests.factories import CampaignFactory, ItemFactory, likert_payload

pytestmark = [pytest.mark.browser, pytest.mark.axe, pytest.mark.django_db(transaction=True)]


def test_a_researcher_browses_items_consents_provider_judges_and_webhooks(
    live_server, browser, artifacts
) -> None:
    ada = User.objects.create_user("ada", password="a-long-test-password", is_staff=True)
    campaign = CampaignFactory(
        owner=ada, slug="pages", reward="0.50", budget="40.00", consent_text="I agree."
    )
    for i in range(12):
        payload = likert_payload(i) | {"response": f"reply {i} about the garden"}
        ItemFactory(campaign=campaign, key=f"item-{i:02d}", payload=payload)
    consent_give(campaign=campaign, arrival=Arrival(provider="local", worker_id="w1"))
    campaign_launch(campaign=campaign, options=LaunchOptions(provider="local"), actor="ada")
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/dashboard/c/pages/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "a-long-test-password")
    page.click("input[type=submit]")
    page.wait_for_url("**/dashboard/c/pages/")

    page.click("#items-link")
    page.fill("#q", "reply 7 about")
    page.click("#item-search button")
    assert page.locator("#items tbody tr").count() == 1
    assert_accessible(page, "items")
    with page.context.expect_page() as opened:
        page.click("#items a[target=_blank]")
    preview = opened.value
    preview.wait_for_load_state()
    assert "reply 7 about the garden" in preview.content()
    assert preview.locator("#submit-button").is_disabled()
    preview.close()

    page.goto(f"{live_server.url}/dashboard/c/pages/")
    page.click("#consents-link")
    assert page.locator("#consents tbody tr").count() == 1
    assert_accessible(page, "consents")

    page.goto(f"{live_server.url}/dashboard/c/pages/")
    page.click("#provider-link")
    assert_accessible(page, "provider")
    page.click("button[data-action=pause]")
    page.wait_for_load_state()
    assert Publication.objects.get(campaign=campaign).status == Publication.Status.PAUSED
    page.screenshot(path=artifacts / "dashboard_provider.png", full_page=True)

    page.goto(f"{live_server.url}/dashboard/c/pages/")
    page.click("#judges-link")
    assert page.get_by_text("No judge has run on this campaign yet.").is_visible()
    assert_accessible(page, "judges")

    page.goto(f"{live_server.url}/dashboard/c/pages/webhooks/")
    assert_accessible(page, "webhooks")
    assert errors == []
