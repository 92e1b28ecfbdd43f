"""Fixtures for the provider tests: fake MTurk and Prolific servers on loopback."""

import re
from decimal import Decimal
from urllib.parse import urlencode
from urllib.request import Request, urlopen

import pytest

from annotation.models import Campaign
from tests.factories import CampaignFactory, ItemFactory
from tests.recruitment.fake_mturk import FakeMTurk
from tests.recruitment.fake_prolific import FakeProlific

ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}


@pytest.fixture
def fake_mturk(monkeypatch, settings):
    """A fake MTurk endpoint with fake AWS credentials; its host may take externalSubmit."""
    fake = FakeMTurk().start()
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "MTURK_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", fake.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests-only")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    settings.MTURK_SUBMIT_HOSTS = [fake.url, "https://workersandbox.mturk.com"]
    settings.MTURK_ENDPOINT_URL = ""
    settings.EVALSITE_PUBLIC_URL = "http://testserver"
    yield fake
    fake.stop()


@pytest.fixture
def fake_prolific(settings):
    """A fake Prolific API with a test token and workspace."""
    fake = FakeProlific().start()
    settings.PROLIFIC_API_TOKEN = fake.token
    settings.PROLIFIC_API_URL = fake.url
    settings.PROLIFIC_COMPLETE_URL = fake.url + "/submissions/complete"
    settings.PROLIFIC_WORKSPACE_ID = "ws-test"
    settings.PROLIFIC_FEE_RATE = "0.43"
    settings.EVALSITE_PUBLIC_URL = "http://testserver"
    yield fake
    fake.stop()


@pytest.fixture
def paid_campaign(db) -> Campaign:
    """A draft campaign of 4 items, 2 per assignment, 2 workers each, $0.50, budget $10."""
    campaign = CampaignFactory(
        status=Campaign.Status.DRAFT,
        items_per_assignment=2,
        redundancy=2,
        reward=Decimal("0.50"),
        budget=Decimal("10.00"),
    )
    ItemFactory.create_batch(4, campaign=campaign)
    return campaign


def work_through(client, campaign, params: dict[str, str]):
    """Answer items on the real worker pages until the end; return the last response."""
    url = f"/task/{campaign.slug}/?{urlencode(params)}"
    page = client.get(url)
    for _ in range(20):
        assert page.status_code == 200, page.content.decode()[:500]
        html = page.content.decode()
        token = re.search(r'name="token" value="([^"]+)"', html)
        if token is None:
            return page
        item = re.search(r'name="item" value="(\d+)"', html).group(1)
        submit = f"/task/{campaign.slug}/submit/?{urlencode(params)}"
        answer = client.post(submit, {"token": token.group(1), "item": item, **ANSWERS})
        assert answer.status_code == 302, answer.content.decode()[:500]
        page = client.get(answer["Location"])
        if page.status_code == 302:  # Prolific's completion redirect
            return page
    raise AssertionError("the worker never reached the end")


def post_form(html: str, form_id: str) -> tuple[int, str]:
    """Post the page's form ``form_id`` as a browser would, over real HTTP."""
    form = re.search(
        rf'<form method="post" action="([^"]+)" id="{form_id}">(.*?)</form>', html, re.S
    )
    assert form is not None, html
    fields = dict(
        re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(2))
    )
    request = Request(form.group(1), data=urlencode(fields).encode(), method="POST")
    with urlopen(request, timeout=10) as response:  # noqa: S310 (loopback test server)
        return response.status, response.read().decode()
