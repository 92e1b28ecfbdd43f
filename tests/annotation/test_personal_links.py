"""A personal-link study (``open_links=False``, the local provider's default) from the first
link to the end page: every link the platform renders carries the signed key, and the
refusal of a link without it is in the campaign's language."""

from __future__ import annotations

import ast
import re
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.conf import settings
from django.urls import reverse

from providers.local import link_key
from tests.factories import CampaignFactory, ItemFactory

LIKERT = {"empathy": "4", "relevance": "5", "fluency": "3"}


def personal(campaign, worker="w1", **extra) -> str:
    query = {"workerId": worker, "key": link_key(campaign.slug, worker)} | extra
    return reverse("annotation:task", args=[campaign.slug]) + "?" + urlencode(query)


def finish(client, campaign) -> str:
    """Answer every item of one assignment by the personal link; return the end page."""
    page = client.get(personal(campaign)).content.decode()
    while 'name="token"' in page:
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)
        item = re.search(r'name="item" value="(\d+)"', page).group(1)
        action = unescape(re.search(r'action="([^"]+)"', page).group(1))
        assert "key=" in action
        answered = client.post(action, {"token": token, "item": item, **LIKERT})
        assert answered.status_code == 302, answered.content[:300]
        page = client.get(answered["Location"]).content.decode()
    return page


def links(page: str) -> dict[str, str]:
    """Return the page's links by their id."""
    anchors = re.findall(r'<a [^>]*?href="([^"]+)"[^>]*?id="([\w-]+)"', page)
    return {name: unescape(href) for href, name in anchors}


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "de"])
def test_every_link_of_a_personal_link_end_page_opens_the_study(client, language):
    campaign = CampaignFactory(open_links=False, language=language, items_per_assignment=2)
    ItemFactory.create_batch(5, campaign=campaign)
    end = finish(client, campaign)
    found = links(end)
    assert {"continue-link", "withdraw-link"} <= set(found), found
    for name in ("continue-link", "withdraw-link"):
        query = parse_qs(urlsplit(found[name]).query)
        assert query["key"] == [link_key(campaign.slug, "w1")], name
        assert client.get(found[name]).status_code == 200, name
    more = client.get(found["continue-link"]).content.decode()
    assert 'name="token"' in more  # a second assignment: the three items left


@pytest.mark.django_db
def test_a_link_without_its_key_is_refused_in_the_campaign_s_language(client):
    campaign = CampaignFactory(open_links=False, language="de")
    ItemFactory.create_batch(2, campaign=campaign)
    url = reverse("annotation:task", args=[campaign.slug]) + "?workerId=w1"
    refused = client.get(url)
    assert refused.status_code == 403
    assert "Dieser Link öffnet die Studie nicht" in refused.content.decode()
    forged = client.get(personal(campaign).replace("key=", "key=x"))
    assert "Dieser Link öffnet die Studie nicht" in forged.content.decode()
    bad = client.get(reverse("annotation:task", args=[campaign.slug]) + "?workerId=a%20b")
    assert bad.status_code == 400
    assert "Teilnehmer-ID" in bad.content.decode() and "ungültig" in bad.content.decode()


# The code whose refusals a participant reads on a page: a provider's arrival checks, the
# worker's services (a whole module where None). Errors only a tampered client can cause, such
# as malformed chat frames, stay English (docs/protocols.md, "Languages"); a provider's
# configuration errors are the researcher's.
PARTICIPANT_CODE = {
    "providers/base.py": {"clean_id"},
    "providers/local.py": {"parse_arrival", "identity_check"},
    "providers/prolific.py": {"parse_arrival", "identity_check"},
    "providers/mturk.py": {"parse_arrival", "identity_check"},
    "annotation/services/visits.py": None,
    "annotation/services/consents.py": None,
    "annotation/services/assignments.py": None,
    "annotation/services/judgments.py": None,
}
REFUSALS = {"NotAllowed", "Conflict", "InvalidAnswer", "InvalidParameters", "NotFound", "TooMany"}


def _raw_refusals(tree: ast.AST) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", "") in REFUSALS
        and node.args
        and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
    ]


@pytest.mark.parametrize("module", sorted(PARTICIPANT_CODE))
def test_every_refusal_a_participant_reads_is_marked_for_translation(module):
    tree = ast.parse((Path(settings.BASE_DIR) / module).read_text())
    names = PARTICIPANT_CODE[module]
    parts = (
        [tree]
        if names is None
        else [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name in names
        ]
    )
    assert parts, module
    raw = [line for part in parts for line in _raw_refusals(part)]
    assert raw == [], f"{module}: untranslated refusals at lines {raw}"


def test_the_check_finds_an_untranslated_refusal():
    tree = ast.parse('def f():\n    raise NotAllowed("No.")\n')
    assert _raw_refusals(tree) == [2]
