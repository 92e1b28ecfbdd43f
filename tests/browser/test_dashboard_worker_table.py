"""The worker table's action column stays usable on a 1366 px screen and narrower (Chromium;
skipped where Debian's chromium is not installed)."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation.quality import QUALITY_COLUMNS
from dashboard.models import Job
from tests.factories import CampaignFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1366, 1024, 700])
def test_every_worker_s_action_button_is_on_screen_and_clickable(
    live_server,
    browser,
    width,
) -> None:
    user = User.objects.create_superuser("lead", password="a-long-test-password")
    campaign = CampaignFactory(owner=user)
    columns = [*QUALITY_COLUMNS, "texts_written", "texts_pasted"]
    long_reason = "gold accuracy 33% on 3 checks (lower bound 0.05 under 0.70)"
    values = {"pseudonym": "W000000000000", "flags": "gold, fast, paste", "reason": long_reason}
    rows = [[values.get(c, 0.8125) for c in columns] for _ in range(3)]
    Job.objects.create(
        campaign=campaign,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        result={"judgments": 0, "quality": {"columns": columns, "rows": rows}},
    )
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/dashboard/c/{campaign.slug}/")
        button = page.locator("#quality tbody tr").first.locator("td.actions button")
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        on_top = page.evaluate(
            "([x, y]) => document.elementFromPoint(x, y).textContent",
            [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
        )
        assert on_top == "Do"  # nothing scrolls over it
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
