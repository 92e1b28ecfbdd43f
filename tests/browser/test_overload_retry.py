"""A busy server (503 + Retry-After) does not lose a worker's page or answer in Chromium."""

import pytest
from django.db import OperationalError

from annotation.models import Judgment
from tests.browser.axe import assert_accessible
from tests.factories import CampaignFactory, ItemFactory
from workerpages import views

pytestmark = pytest.mark.browser


def busy_once(real):
    """``real``, except that its first call meets an exhausted connection pool."""
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("connection pool 'pool-1' timed out")
        return real(*args, **kwargs)

    return wrapper


@pytest.mark.django_db(transaction=True)
def test_the_busy_page_reloads_and_resends_the_answer_by_itself(
    live_server, browser, artifacts, monkeypatch, settings
):
    settings.RETRY_AFTER_SECONDS = 1
    campaign = CampaignFactory(items_per_assignment=2, redundancy=1)
    ItemFactory.create_batch(2, campaign=campaign)
    monkeypatch.setattr(views, "worker_visit", busy_once(views.worker_visit))
    monkeypatch.setattr(views, "judgment_submit", busy_once(views.judgment_submit))
    page = browser.new_page()
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=busy")
    assert page.get_by_role("heading", name="Just a moment").is_visible()
    page.get_by_text("Item 1 of 2").wait_for(timeout=20_000)  # reloaded by itself

    for legend in ("Empathy/Sympathy", "Relevance", "Fluency"):
        page.get_by_role("group", name=legend).get_by_label("4", exact=True).check()
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Just a moment").is_visible()
    page.screenshot(path=artifacts / "worker_busy.png", full_page=True)
    assert not Judgment.objects.exists()
    page.get_by_text("Item 2 of 2").wait_for(timeout=20_000)  # the answer was sent again
    assert Judgment.objects.count() == 3
    assert set(Judgment.objects.values_list("value", flat=True)) == {4}
    page.close()


@pytest.mark.axe
@pytest.mark.django_db(transaction=True)
def test_the_busy_page_is_accessible(live_server, browser, monkeypatch, settings):
    settings.RETRY_AFTER_SECONDS = 120  # no reload while axe looks at the page
    campaign = CampaignFactory()
    monkeypatch.setattr(views, "worker_visit", busy_once(views.worker_visit))
    page = browser.new_page()
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=busy-axe")
    assert page.get_by_role("heading", name="Just a moment").is_visible()
    assert_accessible(page, "the busy page")
    page.close()
