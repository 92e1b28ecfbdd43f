"""Assignment status changes: one transition table for every caller."""

import pytest

from annotation.allocation import item_next
from annotation.models import Assignment, Lease
from annotation.services import assignment_set_status, assignment_start
from annotation.services.assignments import TRANSITIONS, _transition
from evalsite.errors import Conflict
from tests.factories import WorkerFactory

S = Assignment.Status


def test_every_status_has_a_row_and_final_statuses_lead_nowhere():
    assert set(TRANSITIONS) == set(S.values)
    assert TRANSITIONS[S.APPROVED] == TRANSITIONS[S.REJECTED] == set()
    assert S.ACCEPTED not in set().union(*TRANSITIONS.values())  # nothing reopens


def test_approved_assignment_is_never_reopened_or_resubmitted(campaign):
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    assert assignment_set_status(assignment=assignment, status=S.SUBMITTED)
    assert assignment.completion_code and assignment.submitted_at
    assert assignment_set_status(assignment=assignment, status=S.APPROVED)
    for status in (S.SUBMITTED, S.REJECTED, S.ACCEPTED, S.APPROVED):
        assert not assignment_set_status(assignment=assignment, status=status)
    assignment.refresh_from_db()
    assert assignment.status == S.APPROVED and assignment.reviewed_at is not None


def test_a_transition_the_table_refuses_raises_for_callers_holding_the_lock(campaign):
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    assignment_set_status(assignment=assignment, status=S.RETURNED)
    assignment.refresh_from_db()
    with pytest.raises(Conflict, match="returned assignment cannot become submitted"):
        _transition(assignment, S.SUBMITTED)


def test_ending_an_assignment_releases_its_leases(campaign):
    assignment = assignment_start(campaign=campaign, worker=WorkerFactory())
    item = item_next(assignment=assignment)
    assert assignment_set_status(assignment=assignment, status=S.ABANDONED)
    assert not Lease.objects.filter(assignment=assignment).exists()
    item.refresh_from_db()
    assert item.claims == 0
