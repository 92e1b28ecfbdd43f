"""A German study in Chromium (docs/protocols.md, "Languages"): intro and consent, items and
the end page of a Likert study, and a live chat page whose script writes German."""

from __future__ import annotations

import pytest
from django.utils import translation
from django.utils.translation import gettext

from annotation.models import Judgment
from annotation.services import campaign_create, campaign_set_status
from tests.browser.asgi_server import _daphne, asgi_live_server  # noqa: F401 (fixtures)
from tests.browser.axe import assert_accessible
from tests.browser.waits import wait_js
from tests.factories import CampaignFactory, ItemFactory

pytestmark = [pytest.mark.browser, pytest.mark.axe]

TIMEOUT = 10_000  # ms


@pytest.mark.django_db(transaction=True)
def test_a_german_likert_study_from_consent_to_the_end(live_server, browser, artifacts):
    campaign = CampaignFactory(
        language="de",
        description="Eine Studie über Antworten von Chatbots; etwa 5 Minuten.",
        consent_text="Meine Antworten werden **ohne Namen** gespeichert.",
        items_per_assignment=2,
        redundancy=1,
        min_seconds_per_item=1,
    )
    ItemFactory.create_batch(2, campaign=campaign)
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(f"{live_server.url}/task/{campaign.slug}/?workerId=anna")
    assert page.locator("html").get_attribute("lang") == "de"
    assert page.get_by_role("heading", name="Über diese Studie").is_visible()
    assert page.get_by_role("heading", name="Einwilligung").is_visible()
    assert_accessible(page, "German intro and consent")
    page.get_by_role("button", name="Ich willige ein, Studie beginnen").click()
    page.wait_for_load_state()

    for position in (1, 2):
        assert page.get_by_text(f"Aufgabe {position} von 2").is_visible()
        # task.js writes its wait note from the page's German sentences.
        page.locator("#wait-note").get_by_text("Bitte lesen Sie sorgfältig").wait_for()
        assert page.get_by_role("group", name="Empathie/Mitgefühl").is_visible()
        if position == 1:
            page.screenshot(path=artifacts / "german_item.png", full_page=True)
            assert_accessible(page, "German Likert item")
        for aspect in ("Empathie/Mitgefühl", "Relevanz", "Sprachfluss"):
            group = page.get_by_role("group", name=aspect)
            group.get_by_text("5 – sehr").click()
        button = page.get_by_role("button", name="Absenden und weiter")
        wait_js(page, "!document.getElementById('submit-button').disabled")
        button.click()
        page.wait_for_load_state()

    assert page.get_by_role("heading", name="Vielen Dank!").is_visible()
    assert page.get_by_text("Ihr Abschlusscode:").is_visible()
    page.screenshot(path=artifacts / "german_done.png", full_page=True)
    assert_accessible(page, "German end page")
    assert Judgment.objects.filter(item__campaign=campaign).count() == 6


def test_a_german_chat_page_writes_german(asgi_live_server, browser, artifacts):  # noqa: F811
    campaign = campaign_create(
        slug="ed-deutsch",
        name="Gespräche",
        protocol="empathetic_chat",
        parameters={"heartbeat_s": 2},
        controls={"open_links": True},
        study={"language": "de"},
    )
    campaign_set_status(campaign=campaign, status="live")
    page = browser.new_page(viewport={"width": 900, "height": 900})
    page.goto(f"{asgi_live_server}/task/{campaign.slug}/?workerId=jonas")
    page.get_by_role("heading", name="Schritt 1: eine Situation beschreiben").wait_for()
    page.locator("#connection").get_by_text("Verbunden").wait_for(timeout=TIMEOUT)
    help_text = page.locator("#situation-help").inner_text()
    assert help_text.startswith("1 bis 3 Sätze") and "Fügen Sie keinen Text ein." in help_text
    # The feelings offered are shown in German; the value sent stays the stored label.
    first = page.locator("#emotion-choices label.choice").first
    value = first.locator("input").get_attribute("value")
    with translation.override("de"):
        assert first.inner_text().strip() == gettext(value)
    page.locator("#situation-text").fill("Eins. Zwei. Drei. Vier.")
    assert page.locator("#situation-count").inner_text() == "4 Wörter"
    first.locator("input").check()
    page.get_by_role("button", name="Weiter").click()
    reason = "Bitte schreiben Sie 1 bis 3 Sätze (Sie haben 4 geschrieben)."
    page.locator("#situation-error").get_by_text(reason).wait_for(timeout=TIMEOUT)
    assert "Bitte überprüfen Sie Ihre Situation." in page.locator("#chat-error").inner_text()
    page.screenshot(path=artifacts / "german_chat_situation.png", full_page=True)
    assert_accessible(page, "German chat: situation refused")
    page.locator("#situation-text").fill(
        "Ich habe meine Schwester nach zwei Jahren wiedergesehen. Ich habe an der Tür geweint."
    )
    page.get_by_role("button", name="Weiter").click()
    page.get_by_role("heading", name="Warten auf ein Gegenüber …").wait_for(timeout=TIMEOUT)
    assert "Minuten niemand kommt" in page.locator("#wait-limit").inner_text()
    assert_accessible(page, "German chat: lobby")
