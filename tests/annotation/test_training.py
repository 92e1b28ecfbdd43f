"""Training with feedback (issue #18, item 2): consent → training → items; a failed and a
passed attempt; the polite end after every attempt; the qualification across an owner's
campaigns; bad input; a double send under concurrency on PostgreSQL."""

import io
import json
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.campaign_settings import settings_clean
from annotation.models import (
    Assignment,
    Judgment,
    Lease,
    Qualification,
    TrainingAnswer,
    TrainingAttempt,
    TrainingItem,
)
from annotation.selectors import training_summary
from annotation.services import training_answer, training_items_add
from annotation.study_pages import study_clean
from evalsite.errors import Conflict, InvalidParameters
from providers import Arrival
from recruitment.models import Payment
from tests.chat.helpers import ed_campaign
from tests.concurrency import at_once
from tests.factories import CampaignFactory, ItemFactory

PROLIFIC = {"PROLIFIC_PID": "p1", "STUDY_ID": "s1", "SESSION_ID": "sess1"}


def ssa_payload(reply: str, n: int = 0) -> dict:
    return {"context": [f"Any plans for the weekend {n}?"], "response": reply, "model": "m"}


TRAINING = [
    (
        "t-nonsense",
        ssa_payload("Purple elephants calculate the Tuesday.", 1),
        {"sensible": ["no"]},
        "The reply has nothing to do with the question: it **does not make sense**.",
    ),
    (
        "t-generic",
        ssa_payload("I don't know.", 2),
        {"sensible": ["yes"], "specific": ["no"]},
        "It makes sense, but it could answer almost anything: **not specific**.",
    ),
    (
        "t-specific",
        ssa_payload("I'm going hiking near the lake on Saturday, if it doesn't rain.", 3),
        {"sensible": ["yes"], "specific": ["yes"]},
        "It answers the question with details of its own: sensible and specific.",
    ),
]
RIGHT = [
    {"sensible": "no"},
    {"sensible": "yes", "specific": "no"},
    {"sensible": "yes", "specific": "yes"},
]


def ssa_campaign(owner=None, **fields):
    campaign = CampaignFactory(
        protocol="ssa",
        parameters={},
        owner=owner,
        training_pass_mark=0.66,
        training_attempts=2,
        **fields,
    )
    ItemFactory.create_batch(
        4, campaign=campaign, payload=ssa_payload("Probably just staying in and reading.")
    )
    training_items_add(campaign=campaign, items=TRAINING)
    return campaign


def url(campaign, name="task", **params):
    query = {"workerId": "w1"} | params
    return reverse(f"annotation:{name}", args=[campaign.slug]) + "?" + urlencode(query)


def answer(client, campaign, item, answers, **params):
    return client.post(url(campaign, "task_training", **params), {"item": item.pk, **answers})


def items(campaign):
    return list(TrainingItem.objects.filter(campaign=campaign).order_by("position"))


@pytest.fixture
def owner(db):
    return User.objects.create_user("ada")


def test_training_items_are_validated_like_gold_and_a_repeat_adds_nothing(owner):
    campaign = ssa_campaign(owner)
    assert campaign.training_size == 3 and [t.key for t in items(campaign)] == [
        "t-nonsense", "t-generic", "t-specific"
    ]  # fmt: skip
    assert training_items_add(campaign=campaign, items=TRAINING) == 0
    with pytest.raises(InvalidParameters, match=r"Training item 2 \(bad\).*unknown question"):
        training_items_add(
            campaign=campaign,
            items=[TRAINING[0], ("bad", ssa_payload("x"), {"funny": ["yes"]}, "")],
        )
    with pytest.raises(InvalidParameters, match="Training item 1 .*"):
        training_items_add(
            campaign=campaign, items=[("e", ssa_payload("x"), {"sensible": ["maybe"]}, "")]
        )
    with pytest.raises(Conflict, match="other content"):
        training_items_add(
            campaign=campaign,
            items=[("t-generic", ssa_payload("Other."), {"sensible": ["no"]}, "")],
        )
    with pytest.raises(InvalidParameters, match="explanation"):
        training_items_add(
            campaign=campaign, items=[("n", ssa_payload("x"), {"sensible": ["no"]}, "a\x00")]
        )
    assert TrainingItem.objects.filter(campaign=campaign).count() == 3  # all or nothing
    chat = ed_campaign()
    with pytest.raises(InvalidParameters, match="no training"):
        training_items_add(campaign=chat, items=TRAINING)


def test_a_worker_fails_one_attempt_passes_the_next_then_gets_items(client, owner):
    campaign = ssa_campaign(owner)
    first = client.get(url(campaign))
    assert first.status_code == 302 and "/training/" in first["Location"]
    page = client.get(first["Location"]).content.decode()
    assert "Practice first" in page and "Training item 1 of 3" in page
    assert "Purple elephants" in page and "attempt 1 of 2" in page

    one, two, three = items(campaign)
    wrong = answer(client, campaign, one, {"sensible": "yes", "specific": "yes"})
    html = wrong.content.decode()
    assert wrong.status_code == 200 and "Not what we expected" in html
    assert "<strong>does not make sense</strong>" in html  # the explanation, as Markdown
    assert '<th scope="row">Sensible</th><td>Yes ✗</td><td>No</td>' in html
    answer(client, campaign, two, {"sensible": "yes", "specific": "yes"})  # wrong again
    ended = answer(client, campaign, three, RIGHT[2]).content.decode()
    assert "Attempt 1 done" in ended and "1 of 3 as expected" in ended and "Try again" in ended
    assert Assignment.objects.count() == 0 and Lease.objects.count() == 0

    between = client.get(url(campaign, "task_training")).content.decode()
    assert "Start attempt 2" in between and "Your last attempt: 1 of 3" in between
    again = client.get(url(campaign, "task_training", again="1")).content.decode()
    assert "Training item 1 of 3" in again and "attempt 2 of 2" in again
    for item, right in zip(items(campaign), RIGHT, strict=True):
        last = answer(client, campaign, item, right, again="1")
    html = last.content.decode()
    assert "You passed the training" in html and "3 of 3 as expected" in html
    assert "Start the study" in html
    attempts = TrainingAttempt.objects.order_by("number")
    assert [(a.number, a.correct, a.passed) for a in attempts] == [(1, 1, False), (2, 3, True)]
    assert Qualification.objects.get().name == "ssa"
    task = client.get(url(campaign))
    assert task.status_code == 200 and "Item 1 of" in task.content.decode()
    assert Judgment.objects.count() == 0  # training answers are not judgments


def test_every_attempt_failed_ends_politely_with_the_return_path_and_no_rejection(client, owner):
    campaign = ssa_campaign(owner)
    worker = {"PROLIFIC_PID": "p1", "STUDY_ID": "s1", "SESSION_ID": "sess1"}
    campaign.parameters = {}
    for attempt in (1, 2):
        for item in items(campaign):
            response = client.post(
                reverse("annotation:task_training", args=[campaign.slug])
                + "?"
                + urlencode(worker | ({"again": "1"} if attempt == 2 else {})),
                {"item": item.pk, "sensible": "yes", "specific": "yes"},
            )
    html = response.content.decode()
    assert "return the study on Prolific" in html and "will not be rejected" in html
    assert "Try again" not in html
    page = client.get(reverse("annotation:task", args=[campaign.slug]) + "?" + urlencode(worker))
    assert "/training/" in page["Location"]
    over = client.get(page["Location"]).content.decode()
    assert "The training is over" in over and "return the study on Prolific" in over
    assert Assignment.objects.count() == 0 and Payment.objects.count() == 0
    assert not Qualification.objects.exists()


def test_passing_qualifies_for_the_owner_s_other_campaigns_naming_it(client, owner):
    campaign = ssa_campaign(owner)
    for item, right in zip(items(campaign), RIGHT, strict=True):
        answer(client, campaign, item, right)
    same_owner = ssa_campaign(owner)
    assert client.get(url(same_owner)).status_code == 200  # straight to the items
    other_name = ssa_campaign(owner, training_qualification="ssa-strict")
    assert "/training/" in client.get(url(other_name))["Location"]
    other_owner = ssa_campaign(User.objects.create_user("bob"))
    assert "/training/" in client.get(url(other_owner))["Location"]
    no_owner = ssa_campaign(None)
    assert "/training/" in client.get(url(no_owner))["Location"]


def test_bad_training_input_gets_a_message_and_stores_nothing(client, owner):
    campaign = ssa_campaign(owner)
    one, two, _ = items(campaign)
    base = url(campaign, "task_training")
    cases = [
        ({"item": one.pk}, 400, "Some answers"),  # no answer
        ({"item": one.pk, "sensible": "²"}, 400, ""),
        ({"item": "①", "sensible": "no"}, 400, "not one of the study&#x27;s training items"),
        ({"item": 10**30, "sensible": "no"}, 400, "not one of"),
        ({"item": two.pk, "sensible": "no"}, 409, "not the training item on your screen"),
    ]
    for data, status, text in cases:
        response = client.post(base, data)
        assert response.status_code == status, data
        assert text in response.content.decode()
    body = json.dumps({"item": one.pk, "answers": ["no"]})
    listed = client.post(base, body, content_type="application/json")
    assert listed.status_code == 400
    deep = client.post(base, "[" * 5000 + "]" * 5000, content_type="application/json")
    assert deep.status_code == 400
    assert TrainingAnswer.objects.count() == 0 and TrainingAttempt.objects.count() == 0


def test_a_resent_answer_gets_the_same_feedback_and_counts_once(client, owner):
    campaign = ssa_campaign(owner)
    one = items(campaign)[0]
    first = answer(client, campaign, one, RIGHT[0]).content.decode()
    again = answer(client, campaign, one, RIGHT[0]).content.decode()
    assert "As expected" in first and "As expected" in again
    attempt = TrainingAttempt.objects.get()
    assert (attempt.answered, attempt.correct) == (1, 1)
    assert TrainingAnswer.objects.count() == 1


def test_consent_comes_before_training_and_the_intro_announces_it(client, owner):
    campaign = ssa_campaign(owner, consent_text="I agree to take part.")
    assert "/consent/" in client.get(url(campaign))["Location"]
    assert "/consent/" in client.get(url(campaign, "task_training"))["Location"]
    intro = client.get(url(campaign, "task_consent")).content.decode()
    assert "Practice first" in intro and "3 practice items" in intro
    client.post(url(campaign, "task_consent"), {"choice": "agree"})
    assert "/training/" in client.get(url(campaign))["Location"]


def test_training_settings_and_qualification_names_are_bounded():
    assert settings_clean({"training_pass_mark": 0.75, "training_attempts": 3}) == {
        "training_pass_mark": 0.75,
        "training_attempts": 3,
    }
    for bad in ({"training_pass_mark": 0.4}, {"training_attempts": 1}, {"training_attempts": 11}):
        with pytest.raises(InvalidParameters):
            settings_clean(bad)
    assert study_clean({"training_qualification": " ssa-2026.v1 "}) == {
        "training_qualification": "ssa-2026.v1"
    }
    with pytest.raises(InvalidParameters, match="Letters, digits"):
        study_clean({"training_qualification": "ssa strict"})


def test_add_items_reads_training_lines_all_or_nothing(tmp_path, owner):
    campaign = CampaignFactory(protocol="ssa", parameters={}, owner=owner)
    path = tmp_path / "training.jsonl"
    lines = [{"key": k, "payload": p, "answers": a, "explanation": x} for k, p, a, x in TRAINING]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    out = io.StringIO()
    call_command("add_items", campaign.slug, "--training", str(path), stdout=out)
    assert "Added 3 training item(s)" in out.getvalue()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"key": "x", "payload": ssa_payload("y")}) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match="answers"):
        call_command("add_items", campaign.slug, "--training", str(bad))
    campaign.refresh_from_db()
    assert campaign.training_size == 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_sends_of_one_answer_store_it_once():
    campaign = ssa_campaign(User.objects.create_user("ada"))
    one = items(campaign)[0]
    arrival = Arrival(provider="local", worker_id="w-race")
    outcomes = at_once(
        lambda: training_answer(
            campaign=campaign, arrival=arrival, item_id=one.pk, answers=RIGHT[0]
        ),
        8,
    )
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    attempt = TrainingAttempt.objects.get()
    assert (attempt.number, attempt.answered, attempt.correct) == (1, 1, 1)
    assert TrainingAnswer.objects.count() == 1


def test_the_campaign_page_counts_who_passed_failed_and_each_item_s_answers(client, owner):
    campaign = ssa_campaign(owner)
    for worker in ("good", "bad"):
        for _ in (1, 2):
            for item, right in zip(items(campaign), RIGHT, strict=True):
                wrong = {"sensible": "yes", "specific": "yes"}
                given = right if worker == "good" else wrong
                answer(client, campaign, item, given, workerId=worker, again="1")
            if worker == "good":
                break
    answer(client, campaign, items(campaign)[0], RIGHT[0], workerId="midway")
    summary = training_summary(campaign)
    assert (summary.passed, summary.failed, summary.training) == (1, 1, 1)
    assert [(i.key, i.answered, i.expected) for i in summary.items] == [
        ("t-nonsense", 4, 2),
        ("t-generic", 3, 1),
        ("t-specific", 3, 3),
    ]
    staff = User.objects.create_superuser("lead", password="x-long-password-1")
    campaign.owner = staff
    campaign.save()
    client.force_login(staff)
    page = client.get(reverse("dashboard:campaign", args=[campaign.slug])).content.decode()
    assert 'id="training"' in page and "<strong>1</strong> passed here" in page
    assert '<td class="num">50%</td>' in page  # t-nonsense: 2 of 4
