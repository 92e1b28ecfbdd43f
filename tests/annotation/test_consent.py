"""Study pages and consent: intro → consent → items, declining, versions, safe Markdown."""

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from annotation.models import Assignment, Consent, Lease, Worker
from annotation.services import campaign_create, campaign_settings_update
from annotation.study_pages import markdown_safe
from chat.models import ChatSeat
from evalsite.errors import InvalidParameters
from providers.local import link_key
from tests.chat.helpers import ed_campaign
from tests.factories import CampaignFactory, ItemFactory

CONSENT = "I understand that **my answers are stored** anonymously."
MTURK = {
    "assignmentId": "ASSIGN1",
    "hitId": "HIT1",
    "workerId": "AWORKER",
    "turkSubmitTo": "https://workersandbox.mturk.com",
}
PROLIFIC = {"PROLIFIC_PID": "p1", "STUDY_ID": "s1", "SESSION_ID": "sess1"}


def url(campaign, name="task", **params):
    return reverse(f"annotation:{name}", args=[campaign.slug]) + "?" + urlencode(params)


def rows():
    return [m.objects.count() for m in (Worker, Assignment, Lease, Consent)]


@pytest.fixture
def study(db):
    """A live Likert campaign with a description, default instructions and consent text."""
    campaign = CampaignFactory(
        description="A study of **chatbot replies**; about 10 minutes; contact a@example.org.",
        consent_text=CONSENT,
        consent_version="1",
    )
    ItemFactory.create_batch(6, campaign=campaign)
    return campaign


def test_worker_sees_intro_then_consent_then_items(client, study):
    first = client.get(url(study, workerId="w1"))
    assert first.status_code == 302
    assert first["Location"].startswith(reverse("annotation:task_consent", args=[study.slug]))
    intro = client.get(first["Location"])
    html = intro.content.decode()
    assert intro.status_code == 200
    assert "<strong>chatbot replies</strong>" in html
    assert "rate the <strong>last response</strong>" in html  # the protocol's wording
    assert "<strong>my answers are stored</strong>" in html
    assert "version 1" in html
    assert rows() == [0, 0, 0, 0]  # nothing stored by looking
    agreed = client.post(first["Location"], {"choice": "agree"})
    assert agreed.status_code == 302
    consent = Consent.objects.get()
    assert (consent.worker.external_id, consent.version) == ("w1", "1")
    assert consent.given_at is not None
    page = client.get(agreed["Location"])
    assert page.status_code == 200
    assert "Item 1 of 5" in page.content.decode()
    assert Lease.objects.count() == 1


def test_agreeing_twice_stores_one_consent(client, study):
    for _ in range(2):
        client.post(url(study, "task_consent", workerId="w1"), {"choice": "agree"})
    assert Consent.objects.count() == 1


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"workerId": "w1"}, "Thank you for your interest"),
        (MTURK, "return this HIT on Mechanical Turk"),
        (PROLIFIC, "return the study on Prolific"),
    ],
)
def test_declining_ends_with_the_providers_return_path_and_stores_nothing(
    client, study, params, says
):
    client.get(url(study, **params))
    client.get(url(study, "task_consent", **params))
    response = client.post(url(study, "task_consent", **params), {"choice": "decline"})
    assert response.status_code == 200
    assert says in response.content.decode()
    assert rows() == [0, 0, 0, 0]
    again = client.get(url(study, **params))  # still asked before any item
    assert again.status_code == 302
    assert rows() == [0, 0, 0, 0]


def test_a_new_consent_version_asks_again(client, study):
    client.post(url(study, "task_consent", workerId="w1"), {"choice": "agree"})
    assert client.get(url(study, workerId="w1")).status_code == 200
    campaign_settings_update(
        campaign=study, values={}, study={"consent_text": CONSENT + " v2", "consent_version": "2"}
    )
    assert client.get(url(study, workerId="w1")).status_code == 302
    client.post(url(study, "task_consent", workerId="w1"), {"choice": "agree"})
    assert sorted(Consent.objects.values_list("version", flat=True)) == ["1", "2"]
    assert client.get(url(study, workerId="w1")).status_code == 200


def test_markdown_is_sanitised_on_the_intro_page(client, study):
    study.instructions = (
        "Rate **kindly**.\n\n<script>alert('x')</script>\n\n"
        '<img src=x onerror="alert(1)"> [click](javascript:alert(1))'
    )
    study.save()
    html = client.get(url(study, "task_consent", workerId="w1")).content.decode()
    assert "<strong>kindly</strong>" in html
    assert "<script>alert" not in html
    assert "onerror" not in html
    assert "javascript:" not in html


def test_own_instructions_replace_the_protocol_s_card_on_the_item_pages(client, study):
    default = client.get(url(study, workerId="w0"))  # consent first
    assert default.status_code == 302
    client.post(url(study, "task_consent", workerId="w0"), {"choice": "agree"})
    page = client.get(url(study, workerId="w0")).content.decode()
    assert "rate the <strong>last" in page and 'id="study-instructions"' not in page
    study.instructions = "Rate **kindly**.\n\n<script>alert('x')</script>"
    study.save()
    page = client.get(url(study, workerId="w0")).content.decode()
    assert 'id="study-instructions"' in page and "<strong>kindly</strong>" in page
    assert "rate the <strong>last" not in page and "<script>alert" not in page


def test_markdown_safe_keeps_links_and_lists():
    html = markdown_safe("- one\n- [site](https://example.org)")
    assert "<li>one</li>" in html
    assert 'href="https://example.org"' in html
    assert markdown_safe("   ") == ""


def test_campaign_without_consent_text_goes_straight_to_items(client, campaign):
    response = client.get(url(campaign, workerId="w1"))
    assert response.status_code == 200
    assert "Item 1 of 5" in response.content.decode()
    assert client.get(url(campaign, "task_consent", workerId="w1")).status_code == 302
    assert Consent.objects.count() == 0


def test_consent_page_needs_the_signed_link(client, study):
    study.open_links = False
    study.save()
    refused = client.post(url(study, "task_consent", workerId="w1"), {"choice": "agree"})
    assert refused.status_code == 403
    assert rows() == [0, 0, 0, 0]
    key = link_key(study.slug, "w1")
    agreed = client.post(url(study, "task_consent", workerId="w1", key=key), {"choice": "agree"})
    assert agreed.status_code == 302
    assert Consent.objects.count() == 1


def test_study_texts_are_set_and_checked_by_the_services(db):
    campaign = campaign_create(
        slug="s1",
        name="S",
        protocol="likert",
        study={"description": "About", "consent_text": "OK?", "consent_version": " 3 "},
    )
    assert (campaign.description, campaign.consent_version) == ("About", "3")
    with pytest.raises(InvalidParameters) as too_long:
        campaign_settings_update(campaign=campaign, values={}, study={"description": "x" * 20_001})
    assert "description" in too_long.value.fields
    campaign_settings_update(campaign=campaign, values={}, study={"consent_version": ""})
    assert campaign.consent_version == "1"
    with pytest.raises(InvalidParameters):
        campaign_settings_update(campaign=campaign, values={}, study={"colour": "red"})


def test_a_chat_study_asks_for_consent_before_any_seat_and_gives_an_overview(client, db):
    campaign = ed_campaign()
    campaign.consent_text = CONSENT
    campaign.save()
    first = client.get(url(campaign, workerId="w1"))
    assert first.status_code == 302
    intro = client.get(first["Location"]).content.decode()
    assert "Wait in the lobby" in intro  # the protocol's overview as default instructions
    assert not ChatSeat.objects.exists()
    agreed = client.post(first["Location"], {"choice": "agree"})
    page = client.get(agreed["Location"]).content.decode()
    assert 'id="chat-overview"' in page
    assert "Chat twice with your partner" in page
    assert ChatSeat.objects.count() == 1


def test_agreeing_where_no_consent_is_asked_stores_nothing(client, campaign):
    response = client.post(url(campaign, "task_consent", workerId="w1"), {"choice": "agree"})
    assert response.status_code == 302
    assert Consent.objects.count() == 0
