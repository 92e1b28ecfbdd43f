"""Every amount the dashboard shows names its currency: the provider's (MTurk: USD), else the
site's EVALSITE_CURRENCY (a local study, a Prolific workspace)."""

import html
import re
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.models import Campaign
from dashboard.money import campaign_currencies, money_text
from recruitment.models import Publication
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def euros(settings):
    settings.EVALSITE_CURRENCY = "EUR"


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


def published(campaign: Campaign, provider: str) -> Campaign:
    Publication.objects.create(campaign=campaign, provider=provider, status="live", config={})
    return campaign


def test_a_campaign_pays_in_its_providers_currency(researcher, euros) -> None:
    local = CampaignFactory(owner=researcher, slug="here")
    mturk = published(CampaignFactory(owner=researcher, slug="turk"), "mturk")
    prolific = published(CampaignFactory(owner=researcher, slug="pro"), "prolific")
    found = campaign_currencies([local, mturk, prolific])
    assert found == {local.pk: "EUR", mturk.pk: "USD", prolific.pk: "EUR"}
    assert money_text(Decimal("2.5"), "EUR") == "2.50 EUR"


def amounts_without_currency(text: str) -> list[str]:
    """Amounts to the cent (12.50) not followed by a currency code."""
    return re.findall(r"\b\d+\.\d\d\b(?! ?[A-Z]{3}\b)(?!\s*/)", text)


def test_the_list_and_campaign_pages_name_the_currency(ada, researcher, euros) -> None:
    campaign = published(
        CampaignFactory(owner=researcher, slug="turk", budget="20.00", status="live"), "mturk"
    )
    listing = html.unescape(ada.get(reverse("dashboard:campaigns")).content.decode())
    assert "0.00 / 20.00 USD" in listing
    page = html.unescape(
        ada.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    )
    assert re.search(r'spent <span data-field="spent">0\.00</span> of 20\.00 USD', page)
    assert "Budget (USD)" in page
    assert re.search(r"at most \d+(\.\d+)? USD", page)  # the bonus file's bound
    progress = ada.get(reverse("dashboard:progress", args=[campaign.slug])).json()
    assert progress["currency"] == "USD"


def test_the_wizard_names_the_currency_of_every_amount(ada, researcher, euros) -> None:
    draft = CampaignFactory(owner=researcher, slug="draft", status="draft", reward="1.00")
    ItemFactory.create_batch(4, campaign=draft)
    page = html.unescape(
        ada.get(reverse("dashboard:wizard_review", args=[draft.slug])).content.decode()
    )
    summary = page[page.index('id="summary"') : page.index('id="plan"')]
    assert 'id="reward">1.00 EUR<' in summary
    assert amounts_without_currency(summary) == []
    mturk_row = re.search(r'<tr data-provider="mturk">(.*?)</tr>', summary, re.S)
    assert mturk_row and " USD" in mturk_row.group(1) and " EUR" not in mturk_row.group(1)
    settings_page = ada.get(reverse("dashboard:wizard_settings", args=[draft.slug]))
    assert "Reward (EUR)" in settings_page.content.decode()


def test_a_budget_change_says_its_currency(ada, researcher, euros) -> None:
    campaign = CampaignFactory(owner=researcher, slug="live", status="live", budget="5.00")
    response = ada.post(
        reverse("dashboard:campaign_budget", args=[campaign.slug]), {"budget": "7.50"}, follow=True
    )
    shown = [str(m) for m in response.context["messages"]]
    assert any("The budget is now 7.50 EUR" in m for m in shown), shown
