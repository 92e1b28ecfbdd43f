"""Every kind of page says ``script-src 'self'`` and runs no inline script (issue #35).

A browser refuses an inline script under that policy, so a page that still had one would
break: each page kind is fetched, its header read and its HTML searched for a ``<script>``
that is neither a static file nor a JSON data block.
"""

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError
from django.test import Client
from django.urls import reverse

from annotation.protocols import registry
from tests.chat.helpers import ed_campaign
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[1]
# A <script> tag without src=, other than a JSON data block (json_script): it would run inline.
INLINE = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.IGNORECASE)


def _script_src(response) -> list[str]:
    policy = response["Content-Security-Policy"]
    return [d.split()[1:] for d in policy.split(";") if d.split()[:1] == ["script-src"]][0]


def _busy(*args, **kwargs):
    raise OperationalError("connection pool 'pool-1' timed out")


@pytest.fixture
def pages(client, campaign, monkeypatch):
    """One response of each page kind: worker pages (a task of each script kind, the chat, a
    refusal, the 503 page), the dashboard, the API's docs, the admin, a 404."""
    emotionlines = CampaignFactory(protocol="emotionlines", parameters={"n_boot": 200})
    line = {"speaker": "A", "text": "hi"}
    ItemFactory(
        campaign=emotionlines,
        payload=registry.get("emotionlines").clean_item({"utterances": [line]}),
    )
    staff = Client()
    staff.force_login(User.objects.create_user("ada", is_staff=True))
    responses = {
        "task": client.get(f"/task/{campaign.slug}/?workerId=w1"),
        "emotionlines task": client.get(f"/task/{emotionlines.slug}/?workerId=w1"),
        "chat": client.get(f"/task/{ed_campaign().slug}/?workerId=w2"),
        "refusal": client.get(f"/task/{campaign.slug}/?workerId=bad id"),
        "dashboard": staff.get(reverse("dashboard:campaigns")),
        "wizard": staff.get(reverse("dashboard:wizard")),
        "api docs": client.get("/api/v1/docs"),
        "admin login": client.get("/admin/login/"),
        "not found": client.get("/no-such-page/"),
    }
    monkeypatch.setattr("workerpages.views.worker_visit", _busy)
    responses["busy"] = client.get(f"/task/{campaign.slug}/?workerId=w3")
    return responses


def test_every_page_kind_allows_scripts_from_this_site_only_and_has_none_inline(pages) -> None:
    assert pages["busy"].status_code == 503
    for kind, response in pages.items():
        assert response.status_code in (200, 400, 403, 404, 503), kind
        assert _script_src(response) == ["'self'"], kind
        assert not INLINE.findall(response.content.decode()), kind
    # The worker pages keep their own frame-ancestors beside it.
    assert "frame-ancestors" in pages["task"]["Content-Security-Policy"]
    assert "js/emotionlines.js" in pages["emotionlines task"].content.decode()


def test_no_template_holds_an_inline_script() -> None:
    folders = [ROOT / "templates", ROOT / "annotation" / "protocols"]
    inline = [
        str(path.relative_to(ROOT))
        for folder in folders
        for path in folder.rglob("*.html")
        if INLINE.search(path.read_text())
    ]
    assert inline == []
