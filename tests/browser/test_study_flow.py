"""A worker's whole way through a study in Chromium: intro → consent → training (a failed
and a passed attempt, with feedback) → items → end; and a worker who declines (issue #18)."""

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Consent, Judgment, TrainingAttempt, Worker
from tests.annotation.test_training import RIGHT, ssa_campaign
from tests.browser.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.axe]

CONSENT = "I agree that my answers are stored **without my name**."


def _answer(page, answers: dict[str, str]) -> None:
    for question in ("sensible", "specific"):
        if question in answers:
            page.locator(f"input[name={question}][value={answers[question]}]").check()
    page.get_by_role("button", name="Check my answer").click()
    page.wait_for_load_state()


@pytest.mark.django_db(transaction=True)
def test_a_worker_consents_trains_twice_then_judges_items(live_server, browser, artifacts):
    campaign = ssa_campaign(
        None,
        consent_text=CONSENT,
        description="How sensible are chatbot replies? About 5 minutes.",
        items_per_assignment=2,
        redundancy=1,
    )
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=trainee")
    expect(page.get_by_role("heading", name="Practice first")).to_be_visible()
    expect(page.get_by_text("without my name")).to_be_visible()
    assert_accessible(page, "intro and consent with training")
    page.get_by_role("button", name="I agree, start the study").click()
    page.wait_for_load_state()

    expect(page.get_by_text("Training item 1 of 3 · attempt 1 of 2")).to_be_visible()
    page.screenshot(path=artifacts / "training_item.png", full_page=True)
    assert_accessible(page, "training item")
    _answer(page, {"sensible": "yes", "specific": "yes"})  # wrong: it is nonsense
    expect(page.get_by_role("heading", name="Not what we expected")).to_be_visible()
    assert page.locator("#training-explanation strong").inner_text() == "does not make sense"
    page.screenshot(path=artifacts / "training_feedback.png", full_page=True)
    assert_accessible(page, "training feedback")
    page.get_by_role("link", name="Next practice item").click()
    _answer(page, {"sensible": "yes", "specific": "yes"})  # wrong: generic
    page.get_by_role("link", name="Next practice item").click()
    _answer(page, RIGHT[2])
    expect(page.get_by_role("heading", name="Attempt 1 done")).to_be_visible()
    page.get_by_role("link", name="Try again").click()
    expect(page.get_by_text("Your last attempt: 1 of 3 as expected")).to_be_visible()
    page.get_by_role("link", name="Start attempt 2").click()

    for n, right in enumerate(RIGHT, start=1):
        expect(page.get_by_text(f"Training item {n} of 3 · attempt 2 of 2")).to_be_visible()
        _answer(page, right)
        expect(page.get_by_role("heading", name="As expected")).to_be_visible()
        if n < 3:
            page.get_by_role("link", name="Next practice item").click()
    expect(page.get_by_role("heading", name="You passed the training")).to_be_visible()
    page.get_by_role("link", name="Start the study").click()

    for n in (1, 2):
        expect(page.get_by_text(f"Item {n} of 2")).to_be_visible()
        page.locator("input[name=sensible][value=yes]").check()
        page.locator("input[name=specific][value=no]").check()
        page.get_by_role("button", name="Submit and continue").click()
        page.wait_for_load_state()
    expect(page.get_by_role("heading", name="Thank you!")).to_be_visible()
    assert Judgment.objects.filter(item__campaign=campaign).count() == 4  # 2 items × 2
    assert [a.passed for a in TrainingAttempt.objects.order_by("number")] == [False, True]
    page.close()


@pytest.mark.django_db(transaction=True)
def test_a_worker_who_declines_is_told_what_to_do_and_nothing_is_stored(live_server, browser):
    campaign = ssa_campaign(None, consent_text=CONSENT)
    workers = Worker.objects.count()
    page = browser.new_page()
    page.goto(f"{live_server.url}/task/{campaign.slug}/?PROLIFIC_PID=p9&STUDY_ID=s&SESSION_ID=x")
    page.get_by_role("button", name="I do not agree").click()
    page.wait_for_load_state()
    expect(page.get_by_role("heading", name="You are not taking part")).to_be_visible()
    expect(page.get_by_text("return the study on Prolific")).to_be_visible()
    assert_accessible(page, "declined")
    assert Worker.objects.count() == workers and not Consent.objects.exists()
    assert not Assignment.objects.exists() and not TrainingAttempt.objects.exists()
    page.close()
