"""Services: campaigns, items, assignments and idempotent, validated submissions."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.allocation import item_next
from annotation.models import Assignment, Campaign, Judgment, Lease
from annotation.services import (
    assignment_authorise,
    assignment_complete,
    assignment_from_token,
    assignment_start,
    assignment_token,
    assignments_abandon_stale,
    campaign_create,
    campaign_set_status,
    items_add,
    judgment_submit,
)
from evalsite.errors import Conflict, InvalidAnswer, InvalidParameters, NotAllowed, NotFound
from providers import Arrival
from tests.factories import (
    CampaignFactory,
    ItemFactory,
    JudgmentFactory,
    WorkerFactory,
    likert_payload,
)

ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}


@pytest.fixture
def leased(campaign):
    """An open assignment holding a lease on one item."""
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    return assignment, item_next(assignment=assignment)


def test_submission_stores_one_judgment_per_question(leased):
    assignment, item = leased
    result = judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)
    assert result.created
    stored = {j.question: j.value for j in Judgment.objects.filter(item=item)}
    assert stored == {"empathy": 4, "relevance": 3, "fluency": 5}
    assert not Lease.objects.filter(item=item).exists()


def test_submission_sent_twice_stores_one_judgment_and_succeeds(leased):
    assignment, item = leased
    judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)
    again = judgment_submit(assignment=assignment, item_id=item.pk, answers=dict(ANSWERS))
    assert not again.created
    assert Judgment.objects.filter(item=item).count() == 3


def test_changed_answers_to_an_answered_item_are_refused(leased):
    assignment, item = leased
    judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)
    with pytest.raises(Conflict):
        judgment_submit(assignment=assignment, item_id=item.pk, answers={**ANSWERS, "fluency": "1"})
    assert Judgment.objects.get(item=item, question="fluency").value == 5


def test_database_refuses_a_duplicate_judgment(db):
    judgment = JudgmentFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Judgment.objects.create(
            item=judgment.item,
            worker=judgment.worker,
            assignment=judgment.assignment,
            question=judgment.question,
            value=1,
            time_spent_ms=1,
        )


@pytest.mark.parametrize(
    ("answers", "field", "message"),
    [
        ({"empathy": "4", "relevance": "3"}, "fluency", "choose"),
        ({**ANSWERS, "fluency": "6"}, "fluency", "between 1 and 5"),
        ({**ANSWERS, "fluency": "0"}, "fluency", "between 1 and 5"),
        ({**ANSWERS, "fluency": "3.5"}, "fluency", "whole number"),
        ({**ANSWERS, "fluency": "great"}, "fluency", "whole number"),
        ({**ANSWERS, "fluency": True}, "fluency", "whole number"),
        ({**ANSWERS, "fluency": [3]}, "fluency", "whole number"),
        ({**ANSWERS, "humour": "5"}, "humour", "no such question"),
    ],
)
def test_malformed_answers_are_refused_and_store_nothing(leased, answers, field, message):
    assignment, item = leased
    with pytest.raises(InvalidAnswer) as info:
        judgment_submit(assignment=assignment, item_id=item.pk, answers=answers)
    assert message in info.value.fields[field]
    assert not Judgment.objects.exists()
    assert Lease.objects.filter(item=item).exists()  # the worker can still answer


@pytest.mark.parametrize("item_id", [None, "abc", 10**9, "1; drop table", True, 1.0, -1, "9" * 40])
def test_unknown_item_is_refused(leased, item_id):
    assignment, _ = leased
    with pytest.raises(NotFound):
        judgment_submit(assignment=assignment, item_id=item_id, answers=ANSWERS)
    assert not Judgment.objects.exists()


def test_item_of_another_campaign_is_refused(leased):
    assignment, _ = leased
    other = ItemFactory()  # in a campaign of its own
    with pytest.raises(NotFound):
        judgment_submit(assignment=assignment, item_id=other.pk, answers=ANSWERS)


def test_item_never_leased_to_the_worker_is_refused(campaign):
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    with pytest.raises(NotAllowed, match="not given to you"):
        judgment_submit(assignment=assignment, item_id=campaign.items.first().pk, answers=ANSWERS)


def test_assignment_is_submitted_when_its_items_are_done(db):
    campaign = CampaignFactory(items_per_assignment=2)
    ItemFactory.create_batch(3, campaign=campaign)
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    results = []
    for _ in range(2):
        item = item_next(assignment=assignment)
        results.append(judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS))
    assert [r.assignment_done for r in results] == [False, True]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.submitted_at is not None and len(assignment.completion_code) == 8


def test_paused_campaign_refuses_answers(leased):
    assignment, item = leased
    campaign_set_status(campaign=assignment.campaign, status="paused")
    assignment.refresh_from_db()
    with pytest.raises(NotAllowed):
        judgment_submit(assignment=assignment, item_id=item.pk, answers=ANSWERS)


def test_one_open_assignment_per_worker_and_campaign(campaign):
    worker = WorkerFactory()
    first = assignment_start(campaign=campaign, worker=worker)
    assert assignment_start(campaign=campaign, worker=worker) == first
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(campaign=campaign, worker=worker, items_target=1)


def test_provider_assignment_of_another_worker_is_refused(campaign):
    assignment_start(campaign=campaign, worker=WorkerFactory(), provider_assignment_id="A1")
    with pytest.raises(NotAllowed, match="another worker"):
        assignment_start(campaign=campaign, worker=WorkerFactory(), provider_assignment_id="A1")


def test_token_identifies_its_assignment_and_rejects_forgeries(leased):
    assignment, _ = leased
    assert assignment_from_token(assignment_token(assignment)) == assignment
    with pytest.raises(NotAllowed):
        assignment_from_token(assignment_token(assignment)[:-2] + "xx")


def test_one_authorisation_check_for_pages_and_sockets(leased):
    assignment, _ = leased
    campaign, worker = assignment.campaign, assignment.worker
    token = assignment_token(assignment)
    own = Arrival(provider=worker.provider, worker_id=worker.external_id)
    assert assignment_authorise(campaign=campaign, arrival=own, token=token) == assignment
    someone = Arrival(provider=worker.provider, worker_id=worker.external_id + "x")
    elsewhere = CampaignFactory()
    refused = [
        (campaign, someone, token, "another worker"),
        (elsewhere, own, token, "another worker"),
        (campaign, own, token[:-2] + "xx", "not valid"),
        (campaign, Arrival(provider=worker.provider, worker_id="", preview=True), token, "preview"),
    ]
    for where, arrival, sent, why in refused:
        with pytest.raises(NotAllowed, match=why):
            assignment_authorise(campaign=where, arrival=arrival, token=sent)


def test_stale_open_assignments_are_abandoned_and_release_their_leases(leased):
    assignment, item = leased
    later = timezone.now() + timedelta(hours=3)
    assert assignments_abandon_stale(now=later, idle_seconds=3600) == 1
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ABANDONED
    assert not Lease.objects.filter(item=item).exists()
    assert assignments_abandon_stale(now=later, idle_seconds=3600) == 0


def test_completing_an_empty_assignment_is_refused(campaign):
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    with pytest.raises(Conflict):
        assignment_complete(assignment=assignment)


def test_campaign_create_validates_its_parameters(db):
    with pytest.raises(InvalidParameters) as info:
        campaign_create(slug="x", name="x", protocol="likert", parameters={"highlight_sem": "two"})
    assert "highlight_sem" in info.value.fields
    with pytest.raises(InvalidParameters, match="unknown protocol"):
        campaign_create(slug="y", name="y", protocol="nope")
    with pytest.raises(InvalidParameters, match="slug"):
        campaign_create(slug="Bad Slug", name="z", protocol="likert")
    with pytest.raises(InvalidParameters, match="redundancy"):
        campaign_create(slug="z", name="z", protocol="likert", redundancy=0)
    assert not Campaign.objects.exists()


def test_campaign_create_fills_published_defaults(db):
    campaign = campaign_create(slug="ok", name="OK", protocol="likert")
    assert [a["key"] for a in campaign.parameters["aspects"]] == ["empathy", "relevance", "fluency"]
    assert campaign.parameters["min_ratings_per_model"] == 100
    assert campaign.status == Campaign.Status.DRAFT


def test_items_add_is_all_or_nothing_and_idempotent(db):
    campaign = CampaignFactory(status="draft")
    good = [("a", likert_payload(1)), ("b", likert_payload(2))]
    with pytest.raises(InvalidParameters, match="Item 3"):
        items_add(campaign=campaign, items=[*good, ("c", {"context": []})])
    assert not campaign.items.exists()
    assert items_add(campaign=campaign, items=good) == 2
    assert items_add(campaign=campaign, items=good) == 0
    with pytest.raises(Conflict):
        items_add(campaign=campaign, items=[("a", likert_payload(9))])


def test_campaign_lifecycle_refuses_impossible_moves(db):
    campaign = CampaignFactory(status="draft")
    with pytest.raises(Conflict, match="needs items"):
        campaign_set_status(campaign=campaign, status="live")
    ItemFactory(campaign=campaign)
    campaign_set_status(campaign=campaign, status="live")
    campaign_set_status(campaign=campaign, status="finished")
    with pytest.raises(Conflict):
        campaign_set_status(campaign=campaign, status="live")
    with pytest.raises(InvalidParameters):
        campaign_set_status(campaign=campaign, status="bogus")


def test_a_stale_copy_of_a_finished_campaign_cannot_reopen_it(db):
    campaign = CampaignFactory(status="live")
    stale = Campaign.objects.get(pk=campaign.pk)
    campaign_set_status(campaign=campaign, status="finished")
    with pytest.raises(Conflict, match="finished campaign cannot become paused"):
        campaign_set_status(campaign=stale, status="paused")  # it still says live
    assert stale.status == Campaign.Status.FINISHED
    assert Campaign.objects.get(pk=campaign.pk).status == Campaign.Status.FINISHED
