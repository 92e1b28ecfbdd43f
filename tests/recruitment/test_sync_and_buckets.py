"""Reconciliation (expired, approved elsewhere), the beat task, pay buckets and top-ups."""

import time
from decimal import Decimal

import pytest

from annotation.models import Assignment, Judgment
from evalsite.errors import InvalidParameters
from recruitment.launch import bucket_pay, dialogue_length
from recruitment.models import Payment
from recruitment.services import (
    EMOTIONLINES_BUCKETS,
    LaunchOptions,
    campaign_launch,
    campaign_review,
    pay_buckets_parse,
    publication_sync,
)
from recruitment.tasks import providers_sync
from tests.recruitment.conftest import ANSWERS, post_form, work_through


def _mturk(campaign, fake, **kw):
    options = LaunchOptions(provider="mturk", endpoint_url=fake.url, **kw)
    return campaign_launch(campaign=campaign, options=options, actor="t")[0]


def _one_answer(client, campaign, params):
    page = client.get(f"/task/{campaign.slug}/", params).content.decode()
    token = page.split('name="token" value="')[1].split('"')[0]
    item = page.split('name="item" value="')[1].split('"')[0]
    query = "&".join(f"{k}={v}" for k, v in params.items())
    client.post(f"/task/{campaign.slug}/submit/?{query}", {"token": token, "item": item, **ANSWERS})


def test_sync_abandons_open_work_of_an_expired_hit_and_keeps_the_answers(
    client, fake_mturk, paid_campaign
):
    fake = fake_mturk
    publication = _mturk(paid_campaign, fake)
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    params = {"assignmentId": aid, "hitId": hit_id, "workerId": "AW1", "turkSubmitTo": fake.url}
    _one_answer(client, paid_campaign, params)
    assert publication_sync(publication=publication).changed == {}
    fake.state.hits[hit_id]["Expiration"] = time.time() - 1
    fake.state.assignments[aid]["AssignmentStatus"] = "Returned"  # MTurk forgets it
    report = publication_sync(publication=publication)
    assert report.changed == {"abandoned": 1}
    assert Assignment.objects.get(provider_assignment_id=aid).status == "abandoned"
    assert Judgment.objects.filter(assignment__provider_assignment_id=aid).count() == 3
    assert publication_sync(publication=publication).changed == {}  # idempotent


def test_auto_approval_on_mturk_is_synced_and_written_to_the_ledger(
    client, fake_mturk, paid_campaign
):
    fake = fake_mturk
    publication = _mturk(paid_campaign, fake)
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    params = {"assignmentId": aid, "hitId": hit_id, "workerId": "AW1", "turkSubmitTo": fake.url}
    post_form(work_through(client, paid_campaign, params).content.decode(), "mturk-submit")
    fake.state.assignments[aid]["AssignmentStatus"] = "Approved"  # auto-approval delay passed
    assert providers_sync.apply().get() == {f"{paid_campaign.slug}@mturk": "1 approved"}
    payment = Payment.objects.get()
    assert (payment.kind, payment.amount, payment.status) == ("reward", Decimal("0.50"), "paid")
    assert campaign_review(publication=publication, actor="t") == []


def test_sync_keeps_capped_workers_out_through_the_limit_qualification(
    client, fake_mturk, paid_campaign
):
    fake = fake_mturk
    paid_campaign.max_items_per_worker = 2
    paid_campaign.save()
    publication = _mturk(paid_campaign, fake)
    hit_id, other = list(fake.state.hits)
    aid = fake.accept(hit_id, "AW1")
    params = {"assignmentId": aid, "hitId": hit_id, "workerId": "AW1", "turkSubmitTo": fake.url}
    post_form(work_through(client, paid_campaign, params).content.decode(), "mturk-submit")
    assert publication_sync(publication=publication).marked_ineligible == 1
    qual = publication.config["limit_qualification_id"]
    assert (qual, "AW1") in fake.state.worker_quals
    with pytest.raises(Exception, match="qualification"):
        fake.accept(other, "AW1")
    assert publication_sync(publication=publication).marked_ineligible == 0


def test_pay_buckets_parse_and_price_items():
    assert pay_buckets_parse("EmotionLines") == EMOTIONLINES_BUCKETS
    assert pay_buckets_parse("10-14:0.15, 5-9:0.1") == (
        (5, 9, Decimal("0.10")),
        (10, 14, Decimal("0.15")),
    )
    with pytest.raises(InvalidParameters, match="overlap"):
        pay_buckets_parse("5-10:0.1,10-14:0.2")
    assert [bucket_pay(n, EMOTIONLINES_BUCKETS) for n in (4, 5, 12, 19, 24, 25)] == [
        None,
        Decimal("0.10"),
        Decimal("0.15"),
        Decimal("0.20"),
        Decimal("0.25"),
        None,
    ]
    assert dialogue_length({"utterances": [1, 2, 3]}) == 3
    assert dialogue_length({"context": ["a", "b"], "response": "c"}) == 3


def test_review_pays_the_bucket_top_up_once(client, fake_mturk, paid_campaign):
    fake = fake_mturk
    for n, item in enumerate(paid_campaign.items.all()):
        item.payload = {**item.payload, "context": ["u"] * (5 + 5 * n)}
        item.save()
    publication = _mturk(paid_campaign, fake, pay_buckets=EMOTIONLINES_BUCKETS)
    assert fake.state.hit_types[publication.config["hit_type_id"]]["Reward"] == "0.20"
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    params = {"assignmentId": aid, "hitId": hit_id, "workerId": "AW1", "turkSubmitTo": fake.url}
    post_form(work_through(client, paid_campaign, params).content.decode(), "mturk-submit")
    campaign_review(publication=publication, actor="t")
    campaign_review(publication=publication, actor="t")
    topup = Payment.objects.get(kind="topup")
    judged = (
        Assignment.objects.get(provider_assignment_id=aid)
        .judgments.values_list("item__payload", flat=True)
        .distinct()
    )
    owed = sum(bucket_pay(dialogue_length(p), EMOTIONLINES_BUCKETS) for p in judged)
    assert topup.amount == owed - Decimal("0.20")
    assert [b["BonusAmount"] for b in fake.state.bonuses] == [f"{topup.amount:.2f}"]
