"""A worker labels a whole dialogue in EmotionLines in a real Chromium; too fast is refused."""

import pytest
from playwright.sync_api import expect

from annotation.models import Judgment
from annotation.protocols import registry
from tests.browser.axe import assert_accessible
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.browser

EL = registry.get("emotionlines")


@pytest.mark.axe
@pytest.mark.django_db(transaction=True)
def test_worker_labels_every_line_and_an_answer_under_three_seconds_is_refused(
    live_server, browser, artifacts
):
    campaign = CampaignFactory(
        protocol="emotionlines",
        parameters=EL.clean_parameters({}),
        redundancy=5,
        items_per_assignment=1,
    )
    payload = {
        "utterances": [
            {"speaker": "Mona", "text": "You ate my cake?!"},
            {"speaker": "Raj", "text": "It was delicious, thanks."},
        ],
        "source": "demo",
    }
    item = ItemFactory(campaign=campaign, payload=EL.clean_item(payload))
    page = browser.new_page(viewport={"width": 900, "height": 900})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=el-browser")
    line1, line2 = page.locator("#q-u0"), page.locator("#q-u1")
    submit = page.get_by_role("button", name="Submit and continue")
    assert page.get_by_text("Label each line").is_visible()
    assert submit.is_disabled()
    assert line2.get_by_label("Joy").is_disabled()  # the second line waits for the first
    assert_accessible(page, "EmotionLines item")  # the dimmed lines keep their contrast

    # At once: refused with a visible message, and nothing is chosen.
    line1.get_by_label("Anger").click()
    warning = page.get_by_role("alert")
    assert warning.is_visible()
    assert "Too fast" in warning.inner_text() and "line 1" in warning.inner_text()
    assert not line1.get_by_label("Anger").is_checked()
    page.screenshot(path=artifacts / "emotionlines_too_fast.png", full_page=True)
    assert_accessible(page, "EmotionLines, too fast")

    # After 3 s the answer counts and the next line opens.
    page.wait_for_timeout(3100)
    line1.get_by_label("Anger").click()
    assert line1.get_by_label("Anger").is_checked()
    assert not warning.is_visible()
    assert line2.get_by_label("Joy").is_enabled()
    page.wait_for_timeout(3100)
    line2.get_by_label("Joy").click()
    assert submit.is_enabled()
    page.screenshot(path=artifacts / "emotionlines_labeled.png", full_page=True)
    submit.click()
    page.wait_for_load_state()
    assert page.get_by_role("heading", name="Thank you!").is_visible()
    stored = {j.question: j.value for j in Judgment.objects.filter(item=item)}
    assert stored == {"u0": "anger", "u1": "joy"}
    page.close()


@pytest.mark.django_db(transaction=True)
def test_on_a_phone_too_fast_shows_beside_the_line_and_digit_keys_label_it(
    live_server, browser, artifacts
):
    campaign = CampaignFactory(
        protocol="emotionlines", parameters=EL.clean_parameters({}), items_per_assignment=1
    )
    lines = [{"speaker": "Mona", "text": f"Line number {n}, said at some length."} for n in (1, 2)]
    ItemFactory(campaign=campaign, payload=EL.clean_item({"utterances": lines, "source": "demo"}))
    page = browser.new_page(viewport={"width": 390, "height": 640})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=el-phone")
    labels = EL.clean_parameters({})["labels"]
    assert "1–" in page.locator("#shortcut-hint").inner_text()
    page.wait_for_timeout(3100)
    page.keyboard.press("2")  # the second label, for line 1, after 3 s: accepted
    assert page.locator("#q-u0").get_by_label(labels[1].capitalize()).is_checked()
    # At once on line 2, far below the top of the list on a phone: refused, said in view.
    page.keyboard.press("1")
    warning = page.get_by_role("alert")
    expect(warning).to_be_in_viewport()
    assert "Too fast" in warning.inner_text() and "line 2" in warning.inner_text()
    assert page.locator("#q-u1 input:checked").count() == 0
    page.screenshot(path=artifacts / "emotionlines_too_fast_phone.png")
    page.wait_for_timeout(3100)
    page.keyboard.press("1")
    assert page.locator("#q-u1").get_by_label(labels[0].capitalize()).is_checked()
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_load_state()
    stored = {j.question: j.value for j in Judgment.objects.all()}
    assert stored == {"u0": labels[1], "u1": labels[0]}
    page.close()
