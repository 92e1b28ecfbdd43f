"""The launch wizard: protocol → settings → items → review → live on the local provider.

Each step is driven through the test client as a browser would; every refused input must
come back with a message and leave the database as it was.
"""

import html
import json
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.models import AuditLog, Campaign, Item
from annotation.protocols import LiveChat, registry
from annotation.study_pages import STUDY_FIELDS
from dashboard import drafts
from modelhub.models import GenerationJob
from modelhub.services import endpoint_register, generation_job_run
from recruitment.models import Publication
from tests.factories import CampaignFactory, ItemFactory

pytestmark = pytest.mark.django_db

CONTEXTS = "\n".join(
    json.dumps(c)
    for c in (
        {"id": "c1", "context": ["I lost my keys today."], "reference": "Oh no, where?"},
        {"id": "c2", "context": ["Do you like tennis?"], "reference": "I love it!"},
        {"id": "c3", "context": ["We won the cup!", "Really?"], "reference": "Yes, last night."},
    )
)


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Keep the uploads waiting for models out of the real var/ folder."""
    settings.DATA_DIR = tmp_path


@pytest.fixture
def ada(client, researcher) -> Client:
    client.force_login(researcher)
    return client


@pytest.fixture
def bots(db):
    return [
        endpoint_register(name="generic-bot", backend="generic_bot"),
        endpoint_register(name="gold", backend="gold"),
    ]


def upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/octet-stream")


def url(name: str, campaign: Campaign | None = None) -> str:
    return reverse(f"dashboard:{name}", args=[campaign.slug] if campaign else [])


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def settings_data(campaign: Campaign, **changes) -> dict:
    data = {name: getattr(campaign, name) for name in (*drafts.SETTINGS, *STUDY_FIELDS)}
    data["max_items_per_worker"] = data["max_items_per_worker"] or ""
    data["parameters"] = json.dumps(campaign.parameters)
    return data | changes


def snapshot(campaign: Campaign) -> dict:
    campaign.refresh_from_db()
    return {
        f.name: getattr(campaign, f.name) for f in Campaign._meta.fields if f.name != "updated_at"
    }


@pytest.fixture
def draft(ada, researcher) -> Campaign:
    response = ada.post(url("wizard"), {"protocol": "likert", "slug": "ratings", "name": "Ratings"})
    assert response.status_code == 302
    return Campaign.objects.get(slug="ratings")


# --- step 1: protocol --------------------------------------------------------------------


def test_the_start_page_offers_every_registered_protocol(ada) -> None:
    page = ada.get(url("wizard")).content.decode()
    for protocol in registry.all():
        assert f'value="{protocol.name}"' in page


def test_the_dashboard_nav_links_to_the_wizard(ada) -> None:
    page = ada.get(url("campaigns")).content.decode()
    assert f'href="{url("wizard")}"' in page


def test_a_draft_starts_from_the_protocols_published_defaults(ada, researcher) -> None:
    response = ada.post(url("wizard"), {"protocol": "ssa", "slug": "meena-ssa", "name": "SSA"})
    campaign = Campaign.objects.get(slug="meena-ssa")
    assert response.url == url("wizard_settings", campaign)
    ssa = registry.get("ssa")
    assert campaign.status == Campaign.Status.DRAFT
    assert campaign.owner == researcher
    assert campaign.parameters == ssa.clean_parameters({})
    assert campaign.redundancy == ssa.default_redundancy == 5


def test_the_settings_page_explains_each_default(ada, draft) -> None:
    page = html.unescape(ada.get(url("wizard_settings", draft)).content.decode())
    likert = registry.get("likert")
    for name, why in likert.parameter_help.items():
        assert f"<code>{name}</code>" in page
        assert why in page
    assert "PROTOCOLS.md §2" in page
    assert str(Campaign._meta.get_field("redundancy").help_text) in page
    assert '"min_ratings_per_model": 100' in page  # the JSON is pre-filled


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"protocol": "astrology", "slug": "x1"}, "Choose one of the protocols"),
        ({"protocol": "likert", "slug": "Not A Slug"}, "slug must be"),
        ({"protocol": "likert", "slug": ""}, "Slug: This field is required."),
    ],
)
def test_a_bad_start_is_refused_with_a_message_and_creates_nothing(ada, data, message) -> None:
    response = ada.post(url("wizard"), data)
    assert response.status_code == 400
    assert any(message in m for m in messages_of(response))
    assert not Campaign.objects.exists()


def test_a_taken_slug_is_refused_and_the_other_campaign_is_untouched(ada, researcher) -> None:
    other = CampaignFactory(slug="taken", protocol="pairwise")
    before = snapshot(other)
    response = ada.post(url("wizard"), {"protocol": "likert", "slug": "taken"})
    assert response.status_code == 400
    assert any("already exists" in m for m in messages_of(response))
    assert snapshot(other) == before and Campaign.objects.count() == 1


# --- step 2: settings --------------------------------------------------------------------


def test_settings_are_saved_and_lead_to_the_items(ada, draft) -> None:
    parameters = draft.parameters | {"min_ratings_per_model": 40}
    data = settings_data(
        draft, parameters=json.dumps(parameters), redundancy=2, reward="0.80", budget="25.00"
    )
    response = ada.post(url("wizard_settings", draft), data)
    assert response.url == url("wizard_items", draft)
    draft.refresh_from_db()
    assert draft.parameters["min_ratings_per_model"] == 40
    assert (draft.redundancy, draft.reward, draft.budget) == (2, Decimal("0.80"), Decimal("25"))


STUDY_FILE = """
slug: from-file
name: From a file
protocol: likert
settings: {redundancy: 2, reward: 0.75, gold_rate: 0.1}
study: {description: "About **10 minutes**.", consent_text: "I agree."}
items: {items: items.jsonl}
"""


def test_a_draft_starts_from_a_study_file_and_a_bad_one_names_the_key(ada, researcher) -> None:
    response = ada.post(url("wizard"), {"study_file": upload("study.yaml", STUDY_FILE)})
    campaign = Campaign.objects.get(slug="from-file")
    assert response.url == url("wizard_settings", campaign)
    assert any(
        "Upload its items in the Items step" in m for m in messages_of(ada.get(response.url))
    )
    assert (campaign.owner, campaign.status, campaign.redundancy) == (researcher, "draft", 2)
    assert (campaign.reward, campaign.consent_text) == (Decimal("0.75"), "I agree.")
    assert not campaign.items.exists()  # the files it names stay on the researcher's disk
    bad = STUDY_FILE.replace("from-file", "other").replace("redundancy: 2", "redundancy: 0")
    refused = ada.post(url("wizard"), {"study_file": upload("bad.yaml", bad)})
    assert any("settings.redundancy" in m for m in messages_of(ada.get(refused.url)))
    broken = ada.post(url("wizard"), {"study_file": upload("broken.yaml", "slug: [")})
    assert any("broken.yaml" in m for m in messages_of(ada.get(broken.url)))
    assert Campaign.objects.count() == 1


def test_study_pages_and_training_settings_are_set_in_the_wizard(ada, draft) -> None:
    page = ada.get(url("wizard_settings", draft)).content.decode()
    assert 'id="study-texts"' in page and "rate the **last response**" in page  # the default
    data = settings_data(
        draft,
        description="About **10 minutes**; contact a@example.org.",
        consent_text="I agree to take part.",
        consent_version="2026-11",
        training_qualification="ratings-v1",
        training_pass_mark="0.9",
        training_attempts="3",
    )
    assert ada.post(url("wizard_settings", draft), data).url == url("wizard_items", draft)
    draft.refresh_from_db()
    assert (draft.consent_text, draft.consent_version, draft.qualification) == (
        "I agree to take part.",
        "2026-11",
        "ratings-v1",
    )
    assert (draft.training_pass_mark, draft.training_attempts) == (0.9, 3)
    before = snapshot(draft)
    bad = settings_data(draft, training_qualification="two words", description="changed")
    refused = ada.post(url("wizard_settings", draft), bad)
    assert refused.status_code == 400
    assert any("Letters, digits" in m for m in messages_of(refused))
    assert snapshot(draft) == before


def test_a_training_file_is_imported_in_order_and_a_bad_line_is_named(ada, draft) -> None:
    payload = {"context": ["Hi!"], "response": "Hello.", "model": "m1"}
    lines = [
        {"key": f"t{i}", "payload": payload, "answers": {"fluency": [5]}, "explanation": "Fine."}
        for i in range(2)
    ]
    training = "\n".join(json.dumps(line) for line in lines)
    response = ada.post(url("wizard_items", draft), {"training": upload("t.jsonl", training)})
    assert "Added 0 item(s) and 2 training item(s)." in messages_of(ada.get(response.url))
    draft.refresh_from_db()
    assert draft.training_size == 2
    bad = json.dumps({"key": "t9", "payload": payload, "answers": {"fluency": [9]}})
    refused = ada.post(url("wizard_items", draft), {"training": upload("bad.jsonl", bad)})
    assert refused.status_code == 400
    assert any("bad.jsonl: Training item 1 (t9)" in m for m in messages_of(refused))
    draft.refresh_from_db()
    assert draft.training_size == 2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"parameters": '{"scale": '}, "Parameters: Not valid JSON"),
        ({"parameters": "[1, 2]"}, "must be a JSON object"),
        ({"parameters": '{"horoscope": 1}'}, "Unknown parameter(s)"),
        ({"parameters": '{"min_ratings_per_model": -3}'}, "min_ratings_per_model"),
        ({"parameters": '{"highlight_sem": NaN}'}, "NaN is not a number JSON allows"),
        ({"parameters": '{"highlight_sem": 1e999}'}, "1e999 is too large a number"),
        ({"reward": "-1.00"}, "Reward (USD): Ensure this value is greater than or equal to 0"),
        ({"reward": "0.001"}, "Reward (USD): Ensure that there are no more than 2 decimal places."),
        ({"budget": "abc"}, "Budget (USD): Enter a number."),
        ({"redundancy": "0"}, "Redundancy"),
        ({"gold_rate": "0.9"}, "Gold rate"),
    ],
)
def test_bad_settings_are_refused_with_a_message_and_change_nothing(
    ada, draft, changes, message
) -> None:
    before = snapshot(draft)
    response = ada.post(url("wizard_settings", draft), settings_data(draft, **changes))
    assert response.status_code == 400
    assert any(message in m for m in messages_of(response)), messages_of(response)
    assert snapshot(draft) == before


# --- step 3: items -----------------------------------------------------------------------


def test_contexts_answered_by_registered_models_become_items_after_their_jobs(
    ada, draft, bots, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        response = ada.post(
            url("wizard_items", draft),
            {"contexts": upload("mtb.jsonl", CONTEXTS), "models": ["generic-bot", "gold"]},
        )
    assert response.status_code == 302
    jobs = GenerationJob.objects.order_by("pk")
    assert [j.endpoint.name for j in jobs] == ["generic-bot", "gold"]
    assert not draft.items.exists()  # nothing until the models have answered
    status = ada.get(url("wizard_status", draft)).json()
    assert status["pending"] and not status["done"] and status["progress"] == 0
    page = ada.get(url("wizard_items", draft)).content.decode()
    assert "The models are answering 3 context(s)" in page

    # Finishing early is refused and adds nothing.
    early = ada.post(url("wizard_pending", draft), {"action": "finish"}, follow=True)
    assert any("still answering" in m for m in messages_of(early))
    assert not draft.items.exists()

    for job in jobs:  # what the Celery worker on the inference queue does
        generation_job_run(job_id=job.pk)
    assert ada.get(url("wizard_status", draft)).json()["done"] is True
    done = ada.post(url("wizard_pending", draft), {"action": "finish"}, follow=True)
    assert "Added 6 item(s)." in messages_of(done)
    assert (
        sorted(draft.items.values_list("payload__model", flat=True))
        == ["generic-bot"] * 3 + ["gold"] * 3
    )
    assert drafts.draft_pending(draft) is None


def test_stored_responses_make_items_at_once_without_a_job(
    ada, draft, bots, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        ada.post(
            url("wizard_items", draft),
            {"contexts": upload("a.jsonl", CONTEXTS), "models": ["gold"]},
        )
    generation_job_run(job_id=GenerationJob.objects.get().pk)
    ada.post(url("wizard_pending", draft), {"action": "cancel"})
    assert not draft.items.exists()

    response = ada.post(
        url("wizard_items", draft), {"contexts": upload("a.jsonl", CONTEXTS), "models": ["gold"]}
    )
    assert GenerationJob.objects.count() == 1
    assert draft.items.count() == 3
    assert "Added 3 item(s)." in messages_of(ada.get(response.url))


def test_a_failed_generation_is_reported_and_adds_nothing(
    ada, draft, bots, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        ada.post(
            url("wizard_items", draft),
            {"contexts": upload("a.txt", "Hello there"), "models": ["gold"]},
        )
    job = GenerationJob.objects.get()
    GenerationJob.objects.filter(pk=job.pk).update(
        status="failed", error="ValueError: no reference"
    )
    response = ada.post(url("wizard_pending", draft), {"action": "finish"}, follow=True)
    assert any(
        "Generation by gold failed (ValueError: no reference)" in m for m in messages_of(response)
    )
    assert not draft.items.exists()
    assert ada.get(url("wizard_status", draft)).json()["failed"]


def test_a_responses_file_answers_the_contexts(ada, draft) -> None:
    responses = "\n".join(
        json.dumps({"id": c, "model": "human", "response": f"Reply to {c}."})
        for c in ("c1", "c2", "c3")
    )
    ada.post(
        url("wizard_items", draft),
        {"contexts": upload("mtb.jsonl", CONTEXTS), "responses": upload("r.jsonl", responses)},
    )
    assert draft.items.count() == 3
    assert set(draft.items.values_list("payload__model", flat=True)) == {"human"}


def test_an_items_file_and_gold_checks_are_imported(ada, draft) -> None:
    payload = {"context": ["Hi!"], "response": "Hello.", "model": "m1"}
    items = "\n".join(
        json.dumps({"key": f"k{i}", "payload": payload | {"response": f"R{i}"}}) for i in range(4)
    )
    attention = payload | {"response": "Please rate fluency 1 for this reply."}
    gold = "\n".join(
        [
            json.dumps({"key": "g1", "payload": payload, "gold": {"fluency": [4, 5]}}),
            json.dumps(
                {"key": "a1", "payload": attention, "gold": {"fluency": [1]}, "check": "attention"}
            ),
        ]
    )
    response = ada.post(
        url("wizard_items", draft),
        {"items": upload("items.jsonl", items), "gold": upload("gold.jsonl", gold)},
    )
    assert "Added 6 item(s)." in messages_of(ada.get(response.url))
    assert draft.items.filter(gold__isnull=True).count() == 4
    assert draft.items.get(key="g1").gold == {"fluency": [4, 5]}
    assert (draft.items.get(key="g1").attention, draft.items.get(key="a1").attention) == (
        False,
        True,
    )
    bad = json.dumps({"key": "b", "payload": payload, "gold": {"fluency": [4]}, "check": "x"})
    refused = ada.post(url("wizard_items", draft), {"gold": upload("bad.jsonl", bad)})
    assert refused.status_code == 400 and not draft.items.filter(key="b").exists()
    assert (
        "bad.jsonl, gold item 1: &quot;check&quot; is &quot;gold&quot; or"
        in refused.content.decode()
    )


BAD_LINE = CONTEXTS + '\n{"id": "c4", "context": ["ok"]\n'


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"contexts": ("mtb.jsonl", BAD_LINE), "models": ["gold"]},
            "mtb.jsonl, line 4: not valid JSON",
        ),
        (
            {
                "contexts": ("mtb.jsonl", CONTEXTS + '\n{"context": ["a", "b", "c", "d"]}'),
                "models": ["gold"],
            },
            "line 4: 4 turns; at most 3",
        ),
        ({"contexts": ("mtb.doc", CONTEXTS), "models": ["gold"]}, "use a .jsonl, .csv or .txt"),
        ({"contexts": ("mtb.jsonl", CONTEXTS)}, "Pick at least one model"),
        ({"models": ["gold"]}, "Choose a contexts file"),
        ({"contexts": ("mtb.jsonl", CONTEXTS), "models": ["nonesuch"]}, "Select a valid choice"),
        (
            {"items": ("items.jsonl", '{"key": "k1", "payload": {"context": []}}')},
            "items.jsonl, item 1 (k1): 'context'",
        ),
        (
            {"items": ("items.jsonl", '{"key": "k1"}')},
            "items.jsonl, line 1: needs 'key', 'payload'",
        ),
        (
            {
                "gold": (
                    "gold.jsonl",
                    json.dumps(
                        {
                            "key": "g",
                            "payload": {"context": ["a"], "response": "b", "model": "m"},
                            "gold": {"fluency": [9]},
                        }
                    ),
                )
            },
            "gold.jsonl, gold item 1 (g)",
        ),
        (
            {
                "contexts": ("c.jsonl", CONTEXTS),
                "responses": ("r.jsonl", '{"id": "c1", "model": "m", "response": "x"}'),
            },
            "miss 2 context(s)",
        ),
    ],
)
def test_a_bad_upload_is_refused_naming_the_problem_and_adds_nothing(
    ada, draft, bots, data, message
) -> None:
    files = {k: upload(*v) if isinstance(v, tuple) else v for k, v in data.items()}
    response = ada.post(url("wizard_items", draft), files)
    assert response.status_code == 400
    assert any(message in m for m in messages_of(response)), messages_of(response)
    assert not Item.objects.exists() and not GenerationJob.objects.exists()


def test_a_chat_protocol_has_no_items_step_and_goes_live_without_items(ada) -> None:
    chat = [p for p in registry.all() if isinstance(p, LiveChat)]
    if not chat:
        pytest.skip("no live chat protocol registered")
    ada.post(url("wizard"), {"protocol": chat[0].name, "slug": "chat"})
    campaign = Campaign.objects.get(slug="chat")
    page = ada.get(url("wizard_items", campaign)).content.decode()
    assert "nothing to import" in page
    refused = ada.post(
        url("wizard_items", campaign), {"items": upload("i.jsonl", '{"key": "a", "payload": {}}')}
    )
    assert any("makes its items while workers chat" in m for m in messages_of(refused))
    response = ada.post(url("wizard_launch", campaign))
    assert response.url == url("campaign", campaign)
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.LIVE


# --- step 4: review and go live ----------------------------------------------------------


@pytest.fixture
def ready(draft) -> Campaign:
    ItemFactory.create_batch(6, campaign=draft)
    Campaign.objects.filter(pk=draft.pk).update(
        reward=Decimal("1.00"), budget=Decimal("20.00"), items_per_assignment=3, redundancy=2
    )
    draft.refresh_from_db()
    return draft


def test_the_review_shows_the_cost_estimate_and_a_preview_link(ada, ready) -> None:
    response = ada.get(url("wizard_review", ready))
    page = response.content.decode()
    local = next(e for e in response.context["estimates"] if e.provider == "local")
    assert local.preview.plan.places == 4 and local.preview.total == Decimal("4.00")
    assert local.fits
    assert 'class="num total">4.00 USD<' in page
    assert "ASSIGNMENT_ID_NOT_AVAILABLE" in page
    preview = ada.get(response.context["preview_url"])
    assert preview.status_code == 200 and b"preview" in preview.content.lower()
    assert ready.items.first().payload["response"] in html.unescape(preview.content.decode())


def test_the_worker_link_names_the_server_the_researcher_reached(ada, ready, settings) -> None:
    settings.ALLOWED_HOSTS = ["evalsite.example.org"]
    settings.EVALSITE_PUBLIC_URL = "http://localhost:8000"  # the unconfigured default
    page = ada.get(url("wizard_review", ready), HTTP_HOST="evalsite.example.org", secure=True)
    text = html.unescape(page.content.decode())
    assert f"https://evalsite.example.org/task/{ready.slug}/?workerId=…&key=…" in text
    assert "localhost:8000" not in text


def test_go_live_publishes_on_the_local_provider_and_lands_on_the_campaign_page(ada, ready) -> None:
    response = ada.post(url("wizard_launch", ready))
    assert response.url == url("campaign", ready)
    ready.refresh_from_db()
    assert ready.status == Campaign.Status.LIVE
    publication = Publication.objects.get(campaign=ready)
    assert (publication.provider, publication.status) == ("local", Publication.Status.LIVE)
    assert AuditLog.objects.filter(
        campaign=ready, action=AuditLog.Action.PUBLISH, actor="ada"
    ).exists()
    # The wizard no longer edits it.
    assert ada.get(url("wizard_settings", ready)).url == url("campaign", ready)
    again = ada.post(url("wizard_launch", ready), follow=True)
    assert any("only changes drafts" in m for m in messages_of(again))
    assert Publication.objects.count() == 1


def test_a_budget_below_the_estimate_refuses_go_live_and_changes_nothing(ada, ready) -> None:
    Campaign.objects.filter(pk=ready.pk).update(budget=Decimal("3.99"))
    before = snapshot(ready)
    page = ada.get(url("wizard_review", ready)).content.decode()
    assert "over the budget 3.99 USD" in page
    response = ada.post(url("wizard_launch", ready), follow=True)
    assert any("Raise the budget first" in m for m in messages_of(response))
    assert snapshot(ready) == before and ready.status == Campaign.Status.DRAFT
    assert not Publication.objects.exists()


def test_going_live_without_items_is_refused(ada, draft) -> None:
    response = ada.post(url("wizard_launch", draft), follow=True)
    assert any("Import the items first" in m for m in messages_of(response))
    draft.refresh_from_db()
    assert draft.status == Campaign.Status.DRAFT


# --- access and CSRF ---------------------------------------------------------------------


def every_url(campaign: Campaign) -> list[tuple[str, str]]:
    gets = ["wizard_settings", "wizard_items", "wizard_status", "wizard_review"]
    posts = ["wizard_settings", "wizard_items", "wizard_pending", "wizard_launch"]
    return (
        [("get", url("wizard"))]
        + [("get", url(n, campaign)) for n in gets]
        + [("post", url(n, campaign)) for n in posts]
    )


def test_csrf_is_enforced_on_every_wizard_action(researcher, ready) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    before = snapshot(ready)
    posts = [
        (url("wizard"), {"protocol": "likert", "slug": "csrf"}),
        (url("wizard_settings", ready), settings_data(ready, redundancy=9)),
        (url("wizard_items", ready), {"items": upload("i.jsonl", "{}")}),
        (url("wizard_pending", ready), {"action": "cancel"}),
        (url("wizard_launch", ready), {}),
    ]
    for path, data in posts:
        assert client.post(path, data).status_code == 403, path
    assert snapshot(ready) == before and Campaign.objects.count() == 1
    assert not Publication.objects.exists()


def test_a_non_staff_user_is_refused_every_wizard_url(crowd_worker_user, draft) -> None:
    client = Client()
    client.force_login(crowd_worker_user)
    for method, path in every_url(draft):
        assert getattr(client, method)(path).status_code == 403, path


def test_an_anonymous_visitor_is_sent_to_the_login_page(draft) -> None:
    response = Client().get(url("wizard"))
    assert response.status_code == 302 and "/admin/login/" in response.url


def test_another_researcher_cannot_see_or_change_a_draft(other_researcher, ready) -> None:
    client = Client()
    client.force_login(other_researcher)
    before = snapshot(ready)
    for method, path in every_url(ready)[1:]:
        assert getattr(client, method)(path).status_code == 404, path
    assert snapshot(ready) == before and not Publication.objects.exists()
    assert url("wizard_settings", ready) not in client.get(url("wizard")).content.decode()


def test_a_superuser_may_continue_anyones_draft(superuser, draft) -> None:
    client = Client()
    client.force_login(superuser)
    page = client.get(url("wizard")).content.decode()
    assert url("wizard_settings", draft) in page
    assert client.get(url("wizard_review", draft)).status_code == 200


ODD_VALUES = [None, True, -1, 0, 1e9, "", "x" * 300, [], [1, "a"], {}, {"a": None}]


@pytest.mark.parametrize("protocol", [p.name for p in registry.all()])
def test_odd_parameter_values_never_break_the_settings_step(ada, protocol) -> None:
    """Any JSON value in any parameter is saved or refused with a message, never a 500."""
    card = drafts.protocol_card(protocol)
    start = {"protocol": protocol, "slug": "odd"}
    if card.incomplete:  # e.g. interactive SSA needs its models named first
        refused = ada.post(url("wizard"), start)
        assert refused.status_code == 400 and not Campaign.objects.exists()
        assert card.incomplete in " ".join(messages_of(refused))
        if "models" not in card.incomplete:
            pytest.skip(f"the test does not know how to complete {protocol}'s defaults")
        for name in ("generic-bot", "generic-bot-2"):  # an arena draws two
            endpoint_register(name=name, backend="generic_bot")
        start["parameters"] = json.dumps({"models": ["generic-bot", "generic-bot-2"]})
    ada.post(url("wizard"), start)
    campaign = Campaign.objects.get(slug="odd")
    for name in registry.get(protocol).default_parameters():
        for value in ODD_VALUES:
            before = snapshot(campaign)
            data = settings_data(campaign, parameters=json.dumps({name: value}))
            response = ada.post(url("wizard_settings", campaign), data)
            assert response.status_code in (302, 400), (name, value)
            if response.status_code == 400:
                assert snapshot(campaign) == before
                assert messages_of(response)


def test_a_file_that_is_not_utf8_is_refused_with_a_message(ada, draft) -> None:
    response = ada.post(url("wizard_items", draft), {"items": upload("items.jsonl", "")})
    binary = SimpleUploadedFile("items.jsonl", b"\xff\xfe\x00bad")
    response = ada.post(url("wizard_items", draft), {"items": binary})
    assert response.status_code == 400
    assert any("items.jsonl: not UTF-8 text" in m for m in messages_of(response))
    assert not draft.items.exists()
