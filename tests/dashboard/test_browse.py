"""The item browser (search, pages, a worker-page preview) and the consents page: read-only."""

import html

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Assignment, Consent, Judgment, Lease
from annotation.services import worker_forget
from annotation.services.consents import consent_give
from dashboard.items import PAGE_SIZE
from providers import Arrival
from tests.factories import CampaignFactory, ItemFactory, WorkerFactory, likert_payload

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def ratings(researcher):
    campaign = CampaignFactory(owner=researcher, slug="ratings")
    for i in range(PAGE_SIZE + 10):
        payload = likert_payload(i) | {"response": f"reply number {i} about gardening"}
        ItemFactory(campaign=campaign, key=f"item-{i:03d}", payload=payload)
    ItemFactory(campaign=campaign, key="check-1", payload=likert_payload(99), gold={"q": ["5"]})
    return campaign


def keys(page: str) -> list[str]:
    return [part.split('"', 1)[0] for part in page.split('data-item="')[1:]]


def browse(ada, campaign, **query) -> str:
    response = ada.get(reverse("dashboard:items", args=[campaign.slug]), query)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_the_item_browser_lists_items_a_page_at_a_time(ada, ratings) -> None:
    first = browse(ada, ratings)
    assert len(keys(first)) == PAGE_SIZE and keys(first)[0] == "check-1"
    assert "Items 1–50 of 61." in first and "gold check" in first
    second = browse(ada, ratings, page="2")
    assert keys(second) == [f"item-{i:03d}" for i in range(49, PAGE_SIZE + 10)]
    assert keys(browse(ada, ratings, page="x")) == keys(first)  # not a number: page 1
    assert keys(browse(ada, ratings, page="99")) == keys(second)  # past the end: the last
    page = ada.get(reverse("dashboard:campaign", args=[ratings.slug])).content.decode()
    assert reverse("dashboard:items", args=[ratings.slug]) in page


def test_the_item_browser_searches_keys_and_text(ada, ratings) -> None:
    assert keys(browse(ada, ratings, q="ITEM-007")) == ["item-007"]
    found = browse(ada, ratings, q="number 12 about")
    assert keys(found) == ["item-012"] and "1 item(s) match" in found
    assert keys(browse(ada, ratings, q="no such words")) == []
    cut = browse(ada, ratings, q="x" * 500)
    assert "cut to its first 200 characters" in cut


def test_the_preview_shows_one_item_as_its_worker_sees_it_and_stores_nothing(ada, ratings) -> None:
    item = ratings.items.get(key="item-007")
    response = ada.get(reverse("dashboard:item_preview", args=[ratings.slug, item.pk]))
    page = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert "reply number 7 about gardening" in page
    assert 'id="submit-button" disabled' in page and 'name="token" value=""' in page
    assert not (Assignment.objects.exists() or Lease.objects.exists() or Judgment.objects.exists())
    assert (
        ada.post(reverse("dashboard:item_preview", args=[ratings.slug, item.pk])).status_code == 405
    )


def test_the_preview_is_in_the_campaigns_language(ada, researcher) -> None:
    campaign = CampaignFactory(owner=researcher, slug="bewertung", language="de")
    item = ItemFactory(campaign=campaign)
    page = ada.get(reverse("dashboard:item_preview", args=[campaign.slug, item.pk]))
    assert "Absenden und weiter" in page.content.decode()


def test_an_item_of_another_campaign_or_a_chat_protocol_has_no_preview(ada, ratings) -> None:
    other = ItemFactory(campaign=CampaignFactory(slug="elsewhere"))
    url = reverse("dashboard:item_preview", args=[ratings.slug, other.pk])
    assert ada.get(url).status_code == 404
    chats = CampaignFactory(
        owner=ratings.owner,
        slug="chats",
        protocol="ssa_interactive",
        parameters={"models": ["bot"]},
    )
    item = ItemFactory(campaign=chats, payload={"context": ["hi"], "response": "hello"})
    assert ada.get(reverse("dashboard:item_preview", args=[chats.slug, item.pk])).status_code == 404
    assert "made while workers chat" in browse(ada, chats)


def test_the_consents_page_lists_each_workers_consents_and_withdrawal(ada, researcher) -> None:
    campaign = CampaignFactory(
        owner=researcher, slug="consented", consent_text="I agree.", consent_version="1"
    )
    consent_give(campaign=campaign, arrival=Arrival(provider="local", worker_id="w-ann"))
    campaign.consent_version = "2"
    campaign.save(update_fields=["consent_version"])
    consent_give(campaign=campaign, arrival=Arrival(provider="local", worker_id="w-ann"))
    consent_give(campaign=campaign, arrival=Arrival(provider="local", worker_id="w-bo"))
    bo = Consent.objects.get(worker__external_id="w-bo").worker
    worker_forget(worker=bo, actor="w-bo", campaign=campaign)
    stranger = WorkerFactory()  # never here: not listed
    page = html.unescape(
        ada.get(reverse("dashboard:consents", args=[campaign.slug])).content.decode()
    )
    ann = Consent.objects.filter(worker__external_id="w-ann").first().worker
    ann_row = page.split(f'data-worker="{ann.pseudonym}"')[1].split("</tr>")[0]
    assert "<code>1</code>" in ann_row and "<code>2</code>" in ann_row
    assert f"{timezone.localtime():%Y-%m-%d}" in ann_row and "<td>yes</td>" in ann_row
    bo_row = page.split(f'data-worker="{bo.pseudonym}"')[1].split("</tr>")[0]
    assert bo_row.count(f"{timezone.localtime():%Y-%m-%d}") == 2  # consented, then withdrew
    assert stranger.pseudonym not in page
    assert "declines are not listed" in page
    assert (
        reverse("dashboard:consents", args=[campaign.slug])
        in ada.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    )
