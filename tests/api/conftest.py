"""A researcher with an API key, and a client that sends it."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotation.models import Campaign
from annotation.simulation import crowd_make, crowd_run
from api.keys import api_key_create
from tests.factories import CampaignFactory, ItemFactory


class ApiClient:
    """Django's test client with a key in the Authorization header and JSON bodies."""

    def __init__(self, key: str | None) -> None:
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def _send(self, method: str, path: str, data: Any = None, **headers: str) -> Any:
        send = getattr(self.client, method)
        kwargs: dict[str, Any] = {"headers": {**self.headers, **headers}}
        if data is not None:
            kwargs |= {"data": data, "content_type": "application/json"}
        return send("/api/v1" + path, **kwargs)

    def get(self, path: str, **headers: str) -> Any:
        return self._send("get", path, **headers)

    def post(self, path: str, data: Any = None, **headers: str) -> Any:
        return self._send("post", path, {} if data is None else data, **headers)

    def patch(self, path: str, data: Any, **headers: str) -> Any:
        return self._send("patch", path, data, **headers)


@pytest.fixture
def researcher(db) -> User:
    return User.objects.create_user("ada", password="pw-ada-123", is_staff=True)


@pytest.fixture
def other_researcher(db) -> User:
    return User.objects.create_user("bob", password="pw-bob-123", is_staff=True)


@pytest.fixture
def key(researcher) -> str:
    return api_key_create(user=researcher, name="tests")[1]


@pytest.fixture
def api(key) -> ApiClient:
    return ApiClient(key)


@pytest.fixture
def filled(researcher) -> Campaign:
    """Ada's live Likert campaign: 6 items, 3 workers each, judged by a simulated crowd."""
    campaign = CampaignFactory(owner=researcher, items_per_assignment=2, budget="50.00")
    ItemFactory.create_batch(6, campaign=campaign)
    crowd_run(campaign=campaign, workers=crowd_make(good=3, noisy=1, spammer=0), seed=3)
    return campaign


def error_of(response: Any) -> dict[str, Any]:
    """The error body of a 4xx, checked for its shape."""
    assert 400 <= response.status_code < 500, response.content
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "field"}, body
    assert body["error"]["message"]
    return body["error"]
