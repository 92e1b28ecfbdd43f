"""A worker rates items in a real Chromium, on a phone-sized and a desktop screen."""

import pytest

from annotation.models import Assignment, Judgment
from annotation.protocols import registry
from tests.browser.axe import assert_accessible
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.browser


@pytest.mark.axe
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
    assert_accessible(page, f"Likert item ({label})")

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
    assert_accessible(page, f"done page ({label})")
    assert Judgment.objects.count() == 6
    page.close()


@pytest.mark.django_db(transaction=True)
def test_digit_keys_answer_the_first_open_question_but_not_while_typing(live_server, browser):
    campaign = CampaignFactory(items_per_assignment=1, redundancy=1)
    ItemFactory(campaign=campaign)
    page = browser.new_page()
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=keyboard")
    hint = page.locator("#shortcut-hint")
    assert hint.is_visible() and "1–5" in hint.inner_text()
    groups = [page.get_by_role("group", name=q) for q in ("Empathy/Sympathy", "Relevance")]
    # A digit typed into a text field (a comment box, say) is text, not an answer.
    page.evaluate(
        "document.getElementById('answer-form').insertAdjacentHTML("
        "'afterbegin', '<label>Comment <textarea id=comment></textarea></label>')"
    )
    page.locator("#comment").press_sequentially("3")
    assert page.locator("#comment").input_value() == "3"
    assert page.locator("input[type=radio]:checked").count() == 0

    page.locator("h1").click()  # out of the text field
    page.keyboard.press("4")
    page.keyboard.press("2")
    assert groups[0].get_by_label("4", exact=True).is_checked()
    assert groups[1].get_by_label("2", exact=True).is_checked()
    page.keyboard.press("5")  # the third question
    page.keyboard.press("1")  # all answered: the focused question (the third) changes
    fluency = page.get_by_role("group", name="Fluency")
    assert fluency.get_by_label("1 – not at all").is_checked()
    assert groups[0].get_by_label("4", exact=True).is_checked()
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_load_state()
    stored = dict(Judgment.objects.values_list("question", "value"))
    assert stored == {"empathy": 4, "relevance": 2, "fluency": 1}
    page.close()


@pytest.mark.axe
@pytest.mark.django_db(transaction=True)
def test_emocontext_label_chosen_with_a_digit_key(live_server, browser, artifacts):
    ec = registry.get("emocontext")
    campaign = CampaignFactory(
        protocol="emocontext", parameters=ec.clean_parameters({}), items_per_assignment=1
    )
    ItemFactory(campaign=campaign, payload={"turns": ["You there?", "Yes.", "I failed again."]})
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=ec-keyboard")
    assert_accessible(page, "EmoContext item")
    page.keyboard.press("2")
    assert page.get_by_label("Sad").is_checked()
    page.screenshot(path=artifacts / "emocontext_keyboard.png", full_page=True)
    page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_load_state()
    assert Judgment.objects.get().value == "sad"
    page.close()


@pytest.mark.axe
@pytest.mark.django_db(transaction=True)
def test_message_and_nothing_left_pages_are_accessible(live_server, browser):
    empty = CampaignFactory()
    page = browser.new_page()
    page.goto(f"{live_server.url}/task/no-such-study/?workerId=visitor")
    assert page.get_by_role("heading", name="Sorry").is_visible()
    assert_accessible(page, "message page")
    page.goto(f"{live_server.url}/task/{empty.slug}/?workerId=visitor")
    assert page.get_by_role("heading", name="No more items for you").is_visible()
    assert_accessible(page, "nothing-left page")
    page.close()


@pytest.mark.django_db(transaction=True)
def test_a_phone_is_not_told_to_press_digit_keys(live_server, browser):
    campaign = CampaignFactory(items_per_assignment=1, redundancy=1)
    ItemFactory(campaign=campaign)
    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    page = phone.new_page()
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=phone")
    assert page.get_by_text("Item 1 of 1").is_visible()
    assert page.evaluate("matchMedia('(pointer: fine)').matches") is False
    assert page.locator("#shortcut-hint").is_hidden()
    phone.close()
