"""A worker rates items in a real Chromium, on a phone-sized and a desktop screen."""

import pytest

from annotation.models import Assignment, Judgment
from tests.factories import CampaignFactory, ItemFactory


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("label", "viewport"), [("phone", (390, 844)), ("desktop", (1280, 900))])
def test_worker_rates_items_and_gets_a_completion_code(
    live_server, browser, artifacts, label, viewport
):
    campaign = CampaignFactory(items_per_assignment=2, redundancy=1)
    ItemFactory.create_batch(3, campaign=campaign)
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=browser-{label}")
    assert page.get_by_text("Item 1 of 2").is_visible()
    page.screenshot(path=artifacts / f"worker_page_{label}.png", full_page=True)

    # Submitting with a question unanswered is stopped by the browser (required radios).
    page.get_by_role("button", name="Submit and continue").click()
    assert page.get_by_text("Item 1 of 2").is_visible()
    assert not Judgment.objects.exists()

    for _ in range(2):
        for legend in ("Empathy/Sympathy", "Relevance", "Fluency"):
            group = page.get_by_role("group", name=legend)
            group.get_by_label("4", exact=True).check()
        page.get_by_role("button", name="Submit and continue").click()
        page.wait_for_load_state()

    assert page.get_by_role("heading", name="Thank you!").is_visible()
    code = Assignment.objects.get().completion_code
    assert page.get_by_text(code).is_visible()
    page.screenshot(path=artifacts / f"worker_done_{label}.png", full_page=True)
    assert Judgment.objects.count() == 6
    page.close()
