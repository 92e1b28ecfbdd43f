"""The core's services for a model rater (an LLM judge): its worker, its assignment and its
judgments, stored once, all or nothing, and seen by no crowd counter."""

from __future__ import annotations

import pytest

from annotation.models import Assignment, CampaignTally, Judgment, Worker
from annotation.services.assignments import (
    assignment_model_rater_get,
    assignment_model_rater_recount,
)
from annotation.services.judgments import ModelAnswer, judgments_store_model
from annotation.services.workers import worker_model_rater_get
from evalsite.errors import InvalidParameters, NotAllowed, NotFound
from tests.concurrency import at_once
from tests.factories import AssignmentFactory, CampaignFactory, ItemFactory

VALUES = {"empathy": 4, "relevance": 3, "fluency": 5}


@pytest.fixture
def rated(db):
    """A campaign with three items, and a model rater with its assignment there."""
    campaign = CampaignFactory()
    items = [ItemFactory(campaign=campaign) for _ in range(3)]
    worker = worker_model_rater_get(name="judge-1@likert-v1:json")
    assignment = assignment_model_rater_get(campaign=campaign, worker=worker, items=len(items))
    return campaign, items, assignment


def _answers(assignment, items, values=VALUES) -> list[ModelAnswer]:
    return [
        ModelAnswer(
            assignment=assignment,
            item=item,
            values=values,
            presentation={"seed": item.key},
            time_spent_ms=120,
        )
        for item in items
    ]


def _rows() -> list[tuple]:
    return list(
        Judgment.objects.order_by("pk").values_list(
            "item__key", "worker__external_id", "question", "value", "presentation"
        )
    )


def test_a_model_rater_and_its_assignment_are_made_once(rated):
    campaign, items, assignment = rated
    again = worker_model_rater_get(name="judge-1@likert-v1:json")
    assert again.pk == assignment.worker_id and again.provider == Worker.Provider.MODEL
    assert assignment_model_rater_get(campaign=campaign, worker=again, items=99) == assignment
    assert assignment.status == Assignment.Status.APPROVED  # never reviewed, never paid
    assert (assignment.items_target, assignment.items_done) == (3, 0)
    assert Assignment.objects.filter(worker=again).count() == 1
    with pytest.raises(InvalidParameters, match="name"):
        worker_model_rater_get(name="")


def test_storing_the_same_answers_twice_keeps_one_set_of_rows(rated):
    _, items, assignment = rated
    judgments_store_model(answers=_answers(assignment, items))
    first = _rows()
    judgments_store_model(answers=_answers(assignment, items))
    judgments_store_model(answers=_answers(assignment, items, {k: 1 for k in VALUES}))
    assert _rows() == first and len(first) == 3 * 3  # the first answer wins
    assignment_model_rater_recount(assignment=assignment)
    assignment.refresh_from_db()
    assert assignment.items_done == 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_stores_of_the_same_answers_keep_one_set_of_rows():
    campaign = CampaignFactory()
    items = [ItemFactory(campaign=campaign) for _ in range(5)]
    worker = worker_model_rater_get(name="judge-2@likert-v1:json")
    assignment = assignment_model_rater_get(campaign=campaign, worker=worker, items=5)
    outcomes = at_once(lambda: judgments_store_model(answers=_answers(assignment, items)), 6)
    assert outcomes == [None] * 6
    assert Judgment.objects.count() == 5 * 3
    assert Judgment.objects.values("item", "question").distinct().count() == 5 * 3


def test_no_crowd_counter_moves(rated):
    campaign, items, assignment = rated
    judgments_store_model(answers=_answers(assignment, items))
    for item in items:
        item.refresh_from_db()
        assert (item.judged, item.claims) == (0, 0)  # allocation never sees a judge
    assert not CampaignTally.objects.filter(campaign=campaign).exists()


def test_a_batch_is_stored_all_or_nothing(rated):
    campaign, items, assignment = rated
    stray = ItemFactory()  # another campaign's item
    with pytest.raises(NotFound, match="not in its assignment's campaign"):
        judgments_store_model(answers=_answers(assignment, [*items, stray]))
    assert not Judgment.objects.exists()


def test_a_crowd_workers_assignment_is_refused(rated):
    campaign, items, _ = rated
    crowd = AssignmentFactory(campaign=campaign)
    with pytest.raises(NotAllowed, match="not a model rater's"):
        judgments_store_model(answers=_answers(crowd, items))
    with pytest.raises(NotAllowed, match="not a model rater"):
        assignment_model_rater_get(campaign=campaign, worker=crowd.worker, items=3)
    with pytest.raises(NotAllowed, match="not a model rater's"):
        assignment_model_rater_recount(assignment=crowd)
    assert not Judgment.objects.exists()
