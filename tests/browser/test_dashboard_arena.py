"""The arena's leaderboard in a real Chromium: reached from the campaign page, accessible
(axe), free of console errors, and refreshed by itself when a newer report is ready while
the campaign is live."""

import pytest
from django.contrib.auth.models import User

from tests.browser.axe import assert_accessible
from tests.browser.waits import wait_js
from tests.dashboard.test_leaderboard import arena_live, battles, report_build

pytestmark = [pytest.mark.browser, pytest.mark.axe, pytest.mark.django_db(transaction=True)]


def test_the_leaderboard_is_reached_from_the_campaign_and_follows_new_votes(
    live_server, browser, artifacts, settings, tmp_path
) -> None:
    settings.DATA_DIR = tmp_path
    ada = User.objects.create_user("ada", password="a-long-test-password", is_staff=True)
    campaign = arena_live(ada)
    battles(campaign)
    first = report_build(campaign)
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/dashboard/c/{campaign.slug}/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "a-long-test-password")
    page.click("input[type=submit]")
    page.wait_for_url(f"**/dashboard/c/{campaign.slug}/")
    page.click("#leaderboard-link")
    page.wait_for_url("**/leaderboard/")
    assert page.locator("table[data-table=leaderboard] tbody tr").count() == 3
    assert page.locator("img[data-figure=leaderboard]").evaluate("i => i.naturalWidth") > 0
    assert page.locator("#computed").get_attribute("data-snapshot") == str(first.pk)
    assert_accessible(page, "leaderboard")
    page.screenshot(path=artifacts / "dashboard_leaderboard.png", full_page=True)

    # New votes, then a new snapshot: the open page notices within a poll and reloads.
    battles(campaign, [(("bot-y", "bot-x"), ["a"])], first=10)
    newer = report_build(campaign)
    wait_js(
        page,
        f"document.querySelector('#computed').dataset.snapshot === '{newer.pk}'",
        timeout=25_000,
    )
    assert "from 8 votes" in page.locator("#computed-at").inner_text()
    assert errors == []
