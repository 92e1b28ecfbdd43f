"""Blocks scoped to a researcher: one researcher's block leaves other researchers' studies
alone, an admin's global block covers every study, and each affected campaign's audit log
says so (issue #35, item 7)."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.allocation import item_next
from annotation.models import AuditLog, Judgment, Lease, Participation, WorkerBlock
from annotation.quality import (
    worker_block_applies,
    worker_soft_blocked,
    workers_standing,
)
from annotation.services import assignment_start, judgment_submit
from dashboard.services import worker_act
from evalsite.errors import NotAllowed
from providers import Arrival
from recruitment.services import arrival_verify, worker_unblock
from tests.factories import AssignmentFactory, CampaignFactory, ItemFactory, WorkerFactory

GOOD = {"empathy": 4, "relevance": 4, "fluency": 5}


@pytest.fixture
def studies(db):
    """Ada's two campaigns and Bob's one, each with items; one worker in all three."""
    ada = User.objects.create_user("ada", is_staff=True)
    bob = User.objects.create_user("bob", is_staff=True)
    campaigns = {
        "ada1": CampaignFactory(owner=ada),
        "ada2": CampaignFactory(owner=ada),
        "bob": CampaignFactory(owner=bob),
    }
    worker = WorkerFactory()
    for campaign in campaigns.values():
        ItemFactory.create_batch(3, campaign=campaign)
        AssignmentFactory(campaign=campaign, worker=worker)
    return campaigns, worker, ada, bob


def _audited(action: str) -> set[str]:
    return set(AuditLog.objects.filter(action=action).values_list("campaign__slug", flat=True))


def _answer(campaign, worker):
    """Start an assignment, lease the next item and answer it 5 s later."""
    assignment = assignment_start(campaign=campaign, worker=worker)
    item = item_next(assignment=assignment)
    lease = Lease.objects.get(item=item, worker=worker)
    now = lease.created_at + timedelta(seconds=5)
    return judgment_submit(assignment=assignment, item_id=item.pk, answers=GOOD, now=now)


def test_a_researchers_block_refuses_the_worker_only_in_their_own_studies(studies):
    campaigns, worker, _ada, _bob = studies
    worker_act(
        campaign=campaigns["ada1"],
        pseudonym=worker.pseudonym,
        action="block",
        actor="ada",
        reason="spam",
    )
    block = WorkerBlock.objects.get(worker=worker)
    assert block.owner.username == "ada"
    with pytest.raises(NotAllowed):
        arrival_verify(campaign=campaigns["ada2"], arrival=Arrival("local", worker.external_id))
    arrival_verify(campaign=campaigns["bob"], arrival=Arrival("local", worker.external_id))
    _answer(campaigns["bob"], worker)  # Bob's study still takes their answers
    with pytest.raises(NotAllowed, match="no more items"):
        _answer(campaigns["ada2"], worker)
    assert set(
        Judgment.objects.filter(worker=worker).values_list("item__campaign__slug", flat=True)
    ) == {campaigns["bob"].slug}


def test_a_researchers_block_is_in_the_audit_log_of_each_of_their_campaigns_only(studies):
    campaigns, worker, _ada, _bob = studies
    worker_act(
        campaign=campaigns["ada1"],
        pseudonym=worker.pseudonym,
        action="block",
        actor="ada",
        reason="spam",
    )
    assert _audited(AuditLog.Action.BLOCK) == {campaigns["ada1"].slug, campaigns["ada2"].slug}
    line = AuditLog.objects.filter(action=AuditLog.Action.BLOCK).first()
    assert line.actor == "ada" and line.detail == "spam (ada's studies)"


def test_an_admins_global_block_covers_and_is_audited_in_every_researchers_campaigns(studies):
    campaigns, worker, _ada, _bob = studies
    call_command("block", worker.pseudonym, "--reason", "fraud", "--by", "ops")
    assert WorkerBlock.objects.get(worker=worker).owner is None
    assert all(worker_block_applies(campaign=c, worker=worker) for c in campaigns.values())
    assert _audited(AuditLog.Action.BLOCK) == {c.slug for c in campaigns.values()}
    call_command("block", worker.pseudonym, "--unblock", "--reason", "appeal", "--by", "ops")
    assert not any(worker_block_applies(campaign=c, worker=worker) for c in campaigns.values())
    assert _audited(AuditLog.Action.UNBLOCK) == {c.slug for c in campaigns.values()}


def test_another_researchers_block_neither_counts_as_already_blocked_nor_is_lifted(studies):
    campaigns, worker, ada, bob = studies
    kwargs = {"pseudonym": worker.pseudonym, "action": "block", "reason": "spam"}
    worker_act(campaign=campaigns["bob"], actor="bob", **kwargs)
    summary = worker_act(campaign=campaigns["ada1"], actor="ada", **kwargs)
    assert "already" not in summary
    assert "already" in worker_act(campaign=campaigns["ada2"], actor="ada", **kwargs)
    assert WorkerBlock.objects.filter(worker=worker, lifted_at=None).count() == 2
    worker_unblock(worker=worker, reason="appeal", actor="ada", owner=ada)
    assert not worker_block_applies(campaign=campaigns["ada1"], worker=worker)
    assert worker_block_applies(campaign=campaigns["bob"], worker=worker)
    assert _audited(AuditLog.Action.UNBLOCK) == {campaigns["ada1"].slug, campaigns["ada2"].slug}
    assert WorkerBlock.objects.get(worker=worker, lifted_at=None).owner == bob


def test_the_block_check_on_every_arrival_and_answer_is_one_query(studies):
    campaigns, worker, ada, _bob = studies
    WorkerBlock.objects.create(worker=worker, owner=ada, reason="spam", actor="ada")
    with CaptureQueriesContext(connection) as queries:
        blocked = worker_block_applies(campaign=campaigns["bob"], worker=worker)
    assert not blocked and len(queries) == 1


def test_an_arrivals_standing_comes_with_the_worker_for_its_own_campaign_only(studies):
    campaigns, worker, ada, _bob = studies
    WorkerBlock.objects.create(worker=worker, owner=ada, reason="spam", actor="ada")
    Participation.objects.create(campaign=campaigns["bob"], worker=worker, soft_blocked=True)
    read = workers_standing(campaign=campaigns["bob"]).get(pk=worker.pk)
    with CaptureQueriesContext(connection) as queries:
        assert not worker_block_applies(campaign=campaigns["bob"], worker=read)
        assert worker_soft_blocked(campaign=campaigns["bob"], worker=read)
    assert len(queries) == 0
    # Asked about another campaign, the read says nothing: the checks ask the database.
    assert worker_block_applies(campaign=campaigns["ada2"], worker=read)
    assert not worker_soft_blocked(campaign=campaigns["ada2"], worker=read)
    arrival, known = arrival_verify(campaign=campaigns["bob"], arrival=Arrival("local", "w-new"))
    assert known is None and arrival.worker_id == "w-new"


def test_an_answer_is_refused_under_either_kind_of_block(studies):
    campaigns, worker, ada, _bob = studies
    _answer(campaigns["bob"], worker)
    WorkerBlock.objects.create(worker=worker, owner=ada, reason="spam", actor="ada")
    with pytest.raises(NotAllowed, match="no more items"):
        _answer(campaigns["ada1"], worker)
    _answer(campaigns["bob"], worker)  # Ada's block is not Bob's
    Participation.objects.create(campaign=campaigns["bob"], worker=worker, soft_blocked=True)
    with pytest.raises(NotAllowed, match="no more items"):
        _answer(campaigns["bob"], worker)
    assert Judgment.objects.filter(worker=worker).values("item").distinct().count() == 2
