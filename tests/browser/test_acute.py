"""ACUTE-Eval in a real Chromium: a worker compares the demo's chats whole, by keyboard only,
on a desktop and on a phone (the two conversations stack), and the judgments are stored."""

import pytest
from playwright.sync_api import expect

from annotation.items_acute import acute_items_add, conversations_from_campaign
from annotation.models import Judgment
from annotation.protocols.acute import PUBLISHED
from annotation.protocols.pairwise import outcome
from annotation.services import campaign_create, campaign_set_status
from tests.annotation.protocols.test_acute_demo import demo_chats
from tests.browser.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.axe]

KEYS = ["2", "1", "2", "1"]  # one digit per question, in the page's order


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("label", "viewport"),
    [("desktop", {"width": 1200, "height": 900}), ("phone", {"width": 390, "height": 844})],
)
def test_a_worker_compares_demo_chats_by_keyboard_and_the_answers_are_stored(
    live_server, browser, artifacts, label, viewport
):
    conversations, _ = conversations_from_campaign(campaign=demo_chats())
    campaign = campaign_create(
        slug="acute-browser",
        name="ACUTE-Eval of the demo chats",
        protocol="acute",
        items_per_assignment=2,
        controls={"open_links": True},
    )
    acute_items_add(slug=campaign.slug, conversations=conversations, pairs_per_matchup=4)
    campaign_set_status(campaign=campaign, status="live")
    page = browser.new_page(viewport=viewport)
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=acute-{label}")
    first, second = page.locator("#conversation-1"), page.locator("#conversation-2")
    above, beside = first.bounding_box(), second.bounding_box()
    if label == "phone":  # stacked: the second conversation starts below the first
        assert beside["y"] > above["y"] + above["height"] - 1
    else:  # side by side
        assert beside["y"] == pytest.approx(above["y"]) and beside["x"] > above["x"]
    page.screenshot(path=artifacts / f"acute_{label}.png", full_page=True)
    assert_accessible(page, f"ACUTE-Eval item ({label})")
    shown_first = []
    for position in (1, 2):
        expect(page.get_by_text(f"Item {position} of 2")).to_be_visible()
        judged = page.locator(".acute-conversation").first.locator(".acute-judged").first
        shown_first.append(judged.inner_text().split(":", 1)[1].strip())
        for key in KEYS:
            page.keyboard.press(key)
        page.keyboard.press("Tab")  # from the last choice to the justification
        assert page.evaluate("document.activeElement.name") == "reason"
        page.keyboard.type(f"Speaker 2 kept the conversation going ({position}).")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "submit-button"
        with page.expect_navigation():
            page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    judgments = Judgment.objects.filter(worker__external_id=f"acute-{label}")
    assert judgments.count() == 2 * (len(PUBLISHED) + 1)
    by_item: dict[int, dict[str, Judgment]] = {}
    for judgment in judgments:
        by_item.setdefault(judgment.item_id, {})[judgment.question] = judgment
    for answers in by_item.values():
        chosen = [answers[key].value for key in PUBLISHED]
        assert chosen == [{"1": "first", "2": "second"}[k] for k in KEYS]
        assert answers["reason"].value.startswith("Speaker 2 kept the conversation going")
        # "first" is the conversation shown first: its judged speaker's first turn was on top.
        engaging = answers["engaging"]
        payload = engaging.item.payload
        side_first = outcome("first", engaging.presentation)
        first_bot_turn = next(
            t["text"]
            for t in payload[f"turns_{side_first}"]
            if t["speaker"] == payload[f"speaker_{side_first}"]
        )
        assert first_bot_turn in shown_first
    page.close()
