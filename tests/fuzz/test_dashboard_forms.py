"""The researcher's forms (the launch wizard's steps, worker actions, jobs) under generated
and hostile values: never a server error, and a refused input changes nothing."""

from __future__ import annotations

import itertools
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from hypothesis import event, example, given
from hypothesis import strategies as st

from annotation.campaign_settings import SETTINGS
from annotation.models import Campaign, Item
from annotation.protocols import registry
from annotation.simulation import crowd_make, crowd_run
from dashboard import drafts
from dashboard.services import WORKER_ACTIONS
from modelhub.services import endpoint_register
from tests.factories import CampaignFactory, ItemFactory
from tests.fuzz.strategies import (
    bounded,
    form_body,
    hostile_text,
    json_text,
    json_values,
    nested,
    valid_utf8,
)
from tests.fuzz.studies import DRAFT_MODELS

PROTOCOLS = sorted(p.name for p in registry.all())
_drafts = itertools.count()


@pytest.fixture
def ada(client, db, settings, tmp_path):
    """A researcher, logged in, with a live campaign judged by a simulated crowd."""
    settings.DATA_DIR = tmp_path
    user = User.objects.create_user("ada", password="pw-ada-123", is_staff=True)
    client.force_login(user)
    campaign = CampaignFactory(owner=user, items_per_assignment=2, budget="50.00")
    ItemFactory.create_batch(4, campaign=campaign)
    crowd_run(campaign=campaign, workers=crowd_make(good=2, noisy=1, spammer=0), seed=3)
    for name in ("generic-bot", "generic-bot-2"):
        endpoint_register(name=name, backend="generic_bot")
    return client, user, campaign


def _text(value) -> str:
    return value if isinstance(value, str) else json_text(value)


form_values = st.one_of(hostile_text, json_values.map(_text), st.integers().map(str))


FORM = "application/x-www-form-urlencoded"


def _post(client, url: str, data: dict, **headers):
    return client.post(url, form_body(data), content_type=FORM, **headers)


def _check(response) -> None:
    event(f"status {response.status_code}")
    assert response.status_code < 500
    assert b"Traceback" not in response.content


@bounded(60)
@given(
    protocol=st.one_of(st.sampled_from(PROTOCOLS), hostile_text),
    name=form_values,
    slug=st.one_of(st.just("fresh"), form_values),
    parameters=st.one_of(
        st.just(""), json_values.map(json_text), st.sampled_from([nested(5000), "[1e400]"])
    ),
)
@example(protocol="likert", name="x", slug="a\x00b", parameters="")
@example(protocol="likert", name="x", slug="fresh", parameters='{"anchors": {"²": "x"}}')
@example(protocol="pairwise", name="x", slug="fresh", parameters=nested(5000, "{", "}"))
def test_the_wizard_s_first_step_takes_any_form(ada, protocol, name, slug, parameters):
    client, _, _ = ada
    if slug == "fresh":
        slug = f"draft-{next(_drafts)}"
    before = Campaign.objects.count()
    data = {"protocol": protocol, "name": name, "slug": slug, "parameters": parameters}
    response = _post(client, reverse("dashboard:wizard"), data)
    _check(response)
    if response.status_code != 302:
        assert Campaign.objects.count() == before


@bounded(60)
@given(
    protocol=st.sampled_from(PROTOCOLS),
    values=st.fixed_dictionaries(
        {},
        optional={name: st.one_of(form_values, st.integers().map(str)) for name in SETTINGS},
    ),
    parameters=st.one_of(st.just("{}"), json_values.map(json_text), st.just(nested(5000))),
)
def test_the_wizard_s_settings_take_any_values(ada, protocol, values, parameters):
    client, user, _ = ada
    campaign = drafts.draft_create(
        protocol=protocol,
        slug=f"draft-{next(_drafts)}",
        name="d",
        owner=user,
        parameters=DRAFT_MODELS.get(protocol, {}),
    )
    data = {name: getattr(campaign, name) or "" for name in drafts.SETTINGS}
    data = {k: str(v) for k, v in data.items()} | values | {"parameters": parameters}
    before = {f.name: getattr(campaign, f.name) for f in Campaign._meta.fields}
    response = _post(client, reverse("dashboard:wizard_settings", args=[campaign.slug]), data)
    _check(response)
    if response.status_code != 302:
        campaign.refresh_from_db()
        assert {f.name: getattr(campaign, f.name) for f in Campaign._meta.fields} == before


def _lines(values) -> bytes:
    return "\n".join(_text(v) for v in values).encode("utf-8", "surrogatepass")


uploads = st.one_of(
    st.binary(max_size=200),
    st.lists(json_values, max_size=4).map(_lines),
    st.lists(
        st.fixed_dictionaries(
            {"key": json_values, "payload": json_values},
            optional={"gold": json_values, "id": json_values, "context": json_values},
        ),
        max_size=3,
    ).map(_lines),
    st.sampled_from(
        [
            b"\xef\xbb\xbf" + b'{"key": "k", "payload": {}}',
            b"turn_1,id\n\xff\xfe,1\n",
            nested(50_000).encode(),
            b'{"key": "k", "payload": ' + nested(5000).encode() + b"}",
            b'{"id": "c1", "context": ["hi"]}\n' * 2,
        ]
    ),
)


@bounded(60)
@given(
    protocol=st.sampled_from([p for p in PROTOCOLS if p not in ("empathetic_chat",)]),
    files=st.dictionaries(
        st.sampled_from(["contexts", "responses", "items", "gold"]), uploads, min_size=1
    ),
    names=st.sampled_from(["f.jsonl", "f.csv", "f.txt", "f", "../x.jsonl", "\u202ef.jsonl"]),
    models=st.lists(st.one_of(st.just("generic-bot"), hostile_text), max_size=2),
    max_turns=st.one_of(st.just(""), form_values),
)
@example(
    protocol="likert",
    files={"items": b'{"key": ["k"], "payload": []}'},
    names="f.jsonl",
    models=[],
    max_turns="",
)
def test_the_wizard_s_items_step_takes_any_upload(ada, protocol, files, names, models, max_turns):
    client, user, _ = ada
    campaign = drafts.draft_create(
        protocol=protocol,
        slug=f"draft-{next(_drafts)}",
        name="d",
        owner=user,
        parameters=DRAFT_MODELS.get(protocol, {}),
    )
    data: dict = {"models": [valid_utf8(m) for m in models], "max_turns": valid_utf8(max_turns)}
    for field, content in files.items():
        data[field] = SimpleUploadedFile(names, content)
    before = Item.objects.count()
    response = client.post(reverse("dashboard:wizard_items", args=[campaign.slug]), data)
    _check(response)
    if response.status_code != 302:
        assert Item.objects.count() == before


@bounded(80)
@given(
    worker=st.one_of(st.just("own"), form_values),
    action=st.one_of(st.sampled_from(WORKER_ACTIONS), form_values),
    reason=form_values,
    amount=st.one_of(st.sampled_from(["0.50", "1e9", "-1", "NaN", "0.001", "²"]), form_values),
    as_json=st.booleans(),
)
@example(worker="W\x00", action="block", reason="x", amount="", as_json=False)
@example(worker="own", action="bonus", reason="thanks", amount="NaN", as_json=False)
@example(worker="own", action="bonus", reason="thanks", amount="1e999999", as_json=True)
def test_worker_actions_take_any_form(ada, worker, action, reason, amount, as_json):
    client, _, campaign = ada
    if worker == "own":
        worker = campaign.assignments.select_related("worker").first().worker.pseudonym
    data = {"worker": worker, "action": action, "reason": reason, "amount": amount}
    headers = {"HTTP_ACCEPT": "application/json"} if as_json else {}
    response = _post(
        client, reverse("dashboard:worker_action", args=[campaign.slug]), data, **headers
    )
    _check(response)


@bounded(40)
@given(
    kind=st.one_of(st.sampled_from(["report", "export"]), form_values),
    what=st.one_of(st.sampled_from(["judgments", "dialogues"]), form_values),
    fmt=st.one_of(st.sampled_from(["csv", "jsonl", "parquet", "parlai"]), form_values),
    name=hostile_text,
    workers=form_values,
)
def test_jobs_and_pages_take_any_values(ada, kind, what, fmt, name, workers):
    client, _, campaign = ada
    data = {"kind": kind, "what": what, "format": fmt, "include_flagged": "on"}
    _check(_post(client, reverse("dashboard:job_create", args=[campaign.slug]), data))
    page = reverse("dashboard:campaign", args=[campaign.slug])
    _check(client.get(page + "?" + form_body({"workers": workers})))
    file = reverse("dashboard:job_file", args=[campaign.slug, 1, "name"])
    _check(client.get(file.replace("name", quote(name.encode("utf-8", "surrogatepass"), safe=""))))
