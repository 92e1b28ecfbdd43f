"""A worker labels a whole dialogue in EmotionLines in a real Chromium; too fast is refused."""

import pytest

from annotation.models import Judgment
from annotation.protocols import registry
from tests.factories import CampaignFactory, ItemFactory

EL = registry.get("emotionlines")


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

    # At once: refused with a visible message, and nothing is chosen.
    line1.get_by_label("Anger").click()
    warning = page.get_by_role("alert")
    assert warning.is_visible()
    assert "Too fast" in warning.inner_text() and "line 1" in warning.inner_text()
    assert not line1.get_by_label("Anger").is_checked()
    page.screenshot(path=artifacts / "emotionlines_too_fast.png", full_page=True)

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
