"""A worker does A/B comparisons and SSA judgments in a real Chromium."""

from collections import Counter

import pytest

from annotation.models import Judgment
from annotation.protocols.pairwise import outcome
from tests.browser.axe import assert_accessible
from tests.factories import CampaignFactory, ItemFactory, likert_payload

pytestmark = [pytest.mark.browser, pytest.mark.axe]


def _answers_by_item():
    by_item = {}
    for j in Judgment.objects.all():
        by_item.setdefault(j.item_id, {})[j.question] = j.value
    return by_item


def ab_payload(n):
    return {
        "context": [f"I finally adopted a dog {n}!"],
        "model_a": "gen",
        "response_a": f"That's wonderful, what breed is dog {n}?",
        "model_b": "generic",
        "response_b": "ok",
        "example": f"e{n}",
    }


@pytest.mark.django_db(transaction=True)
def test_worker_answers_three_ab_items_and_reaches_the_end(live_server, browser, artifacts):
    campaign = CampaignFactory(protocol="pairwise", parameters={}, items_per_assignment=3)
    for n in range(4):
        ItemFactory(campaign=campaign, payload=ab_payload(n))
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=ab-browser")
    page.screenshot(path=artifacts / "ab_page.png", full_page=True)
    assert_accessible(page, "A/B item")
    for position in (1, 2, 3):
        assert page.get_by_text(f"Item {position} of 3").is_visible()
        first = page.locator("#response-1").inner_text()
        page.get_by_label("The first response").check()
        page.get_by_role("button", name="Submit and continue").click()
        page.wait_for_load_state()
        judgment = Judgment.objects.order_by("-pk").first()
        side = outcome(judgment.value, judgment.presentation)
        assert judgment.item.payload[f"response_{side}"] == first  # the side shown first
    assert page.get_by_role("heading", name="Thank you!").is_visible()
    assert Judgment.objects.count() == 3
    page.close()


@pytest.mark.django_db(transaction=True)
def test_ssa_asks_specific_only_after_sensible_yes(live_server, browser, artifacts):
    campaign = CampaignFactory(protocol="ssa", parameters={}, items_per_assignment=3)
    ItemFactory.create_batch(4, campaign=campaign, payload=likert_payload(1))
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=ssa-browser")
    specific = page.locator("#q-specific")
    sensible = page.locator("#q-sensible")

    # 1: not sensible; "specific" is never shown and stored as "no" by rule.
    assert not specific.is_visible()
    sensible.get_by_label("No").check()
    assert not specific.is_visible()
    page.screenshot(path=artifacts / "ssa_not_sensible.png", full_page=True)
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_load_state()

    # 2: sensible; now "specific" appears and must be answered.
    sensible.get_by_label("Yes").check()
    assert specific.is_visible()
    page.screenshot(path=artifacts / "ssa_sensible.png", full_page=True)
    assert_accessible(page, "SSA item")
    page.get_by_role("button", name="Submit and continue").click()
    assert page.get_by_text("Item 2 of 3").is_visible()  # the browser asks for "specific"
    specific.get_by_label("Yes").check()
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_load_state()

    # 3: sensible, then changed to not sensible: "specific" hides and its answer is dropped.
    sensible.get_by_label("Yes").check()
    specific.get_by_label("Yes").check()
    sensible.get_by_label("No").check()
    assert not specific.is_visible()
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_load_state()

    assert page.get_by_role("heading", name="Thank you!").is_visible()
    stored = Counter(
        (by_item[item]["sensible"], by_item[item]["specific"])
        for by_item in [_answers_by_item()]
        for item in by_item
    )
    assert stored == Counter({("no", "no"): 2, ("yes", "yes"): 1})
    page.close()
