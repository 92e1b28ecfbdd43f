"""A researcher launches a campaign through the wizard in a real Chromium, on the local provider.

Registered models answer the uploaded contexts through generation jobs; the test runs Celery
eagerly in the live server's process, so no worker is needed on either database.
"""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from annotation.models import Campaign
from modelhub.services import endpoint_register
from recruitment.models import Publication
from tests.browser.axe import assert_accessible

pytestmark = [pytest.mark.browser, pytest.mark.axe, pytest.mark.django_db(transaction=True)]

CONTEXTS = [
    {"id": "keys", "context": ["I lost my keys today."], "reference": "Oh no! Where were you?"},
    {"id": "tennis", "context": ["Do you like tennis?"], "reference": "I love it, I play weekly."},
    {"id": "cup", "context": ["We won the cup!", "Really?"], "reference": "Yes, last night!"},
]


@pytest.fixture
def celery_eager() -> Iterator[None]:
    """Run the generation jobs in the live server's thread even when a broker is configured."""
    from evalsite.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def contexts_file(tmp_path) -> Path:
    path = tmp_path / "mini_turing.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in CONTEXTS), encoding="utf-8")
    return path


def test_a_researcher_launches_a_campaign_through_the_wizard(
    live_server, browser, artifacts, settings, tmp_path, celery_eager, contexts_file
) -> None:
    settings.DATA_DIR = tmp_path
    User.objects.create_user("ada", password="a-long-test-password", is_staff=True)
    endpoint_register(name="generic-bot", backend="generic_bot")
    endpoint_register(name="gold", backend="gold")
    page = browser.new_page(viewport={"width": 1280, "height": 900})

    page.goto(f"{live_server.url}/dashboard/new/")
    assert "/admin/login/" in page.url
    page.fill("#id_username", "ada")
    page.fill("#id_password", "a-long-test-password")
    page.click("input[type=submit]")
    page.wait_for_url("**/dashboard/new/")
    page.screenshot(path=artifacts / "wizard_1_protocol.png", full_page=True)
    assert_accessible(page, "wizard: protocol")

    # The slug's pattern compiles as Chromium compiles it (the v flag), so it checks input.
    pattern = page.get_attribute("input[name=slug]", "pattern")
    assert page.evaluate("p => { new RegExp(p, 'v'); return true; }", pattern)
    page.fill("input[name=slug]", "Not A Slug")
    assert page.evaluate("document.querySelector('input[name=slug]').validity.patternMismatch")
    page.check("input[name=protocol][value=likert]")
    page.fill("input[name=name]", "Empathy ratings")
    page.fill("input[name=slug]", "empathy-ratings")
    page.click("#create-draft")
    page.wait_for_url("**/new/empathy-ratings/settings/")
    assert page.get_by_text("At least 100 ratings per model (PROTOCOLS.md §2).").is_visible()
    page.fill("input[name=redundancy]", "3")
    page.fill("input[name=reward]", "0.50")
    page.fill("input[name=budget]", "10.00")
    page.screenshot(path=artifacts / "wizard_2_settings.png", full_page=True)
    assert_accessible(page, "wizard: settings")
    page.click("#save-settings")
    page.wait_for_url("**/new/empathy-ratings/items/")

    page.set_input_files("input[name=contexts]", str(contexts_file))
    page.check("input[name=models][value=generic-bot]")
    page.check("input[name=models][value=gold]")
    page.click("#import-items")
    page.wait_for_selector("#finish-items:enabled")  # the jobs have answered every context
    page.screenshot(path=artifacts / "wizard_3_generation.png", full_page=True)
    assert_accessible(page, "wizard: items being generated")
    page.click("#finish-items")
    page.wait_for_selector("text=Added 6 item(s).")
    page.screenshot(path=artifacts / "wizard_3_items.png", full_page=True)
    assert_accessible(page, "wizard: items")

    page.click("#to-review")
    page.wait_for_url("**/new/empathy-ratings/review/")
    local = page.locator("#estimate tr[data-provider=local]")
    # 6 items, 10 per HIT: 1 HIT × 3 workers × 0.50, in the local provider's currency
    assert local.locator(".total").inner_text() == "1.50 USD"
    assert page.locator("#worker-url").inner_text().startswith(f"{live_server.url}/task/")
    page.screenshot(path=artifacts / "wizard_4_review.png", full_page=True)
    assert_accessible(page, "wizard: review")
    with page.context.expect_page() as opened:
        page.click("#preview-link")
    preview = opened.value
    preview.wait_for_load_state()
    assert preview.get_by_text("I lost my keys today.").first.is_visible()
    preview.screenshot(path=artifacts / "wizard_4_worker_preview.png", full_page=True)
    assert_accessible(preview, "worker page preview")
    preview.close()

    page.click("#go-live-button")
    page.wait_for_url("**/dashboard/c/empathy-ratings/")
    assert page.get_by_text("'empathy-ratings' is live").is_visible()
    page.screenshot(path=artifacts / "wizard_5_live.png", full_page=True)
    assert_accessible(page, "campaign page, just live")
    campaign = Campaign.objects.get(slug="empathy-ratings")
    assert campaign.status == Campaign.Status.LIVE and campaign.owner.username == "ada"
    assert campaign.items.count() == 6
    publication = Publication.objects.get(campaign=campaign)
    assert (publication.provider, publication.status) == ("local", Publication.Status.LIVE)
    page.close()
