"""Payments reconciled (issue #35): a send cut off by a crash or an outage is resolved by
the sweep against the fake Prolific API on loopback — paid, sent again once, or flagged."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.models import Assignment, AuditLog
from providers.prolific import ProlificProvider
from recruitment.models import Payment
from recruitment.reconcile import CHECKS_MAX, payment_resolve, payments_reconcile
from recruitment.services import (
    LaunchOptions,
    assignment_approve,
    bonus_pay,
    campaign_launch,
    campaign_review,
)
from tests.recruitment.conftest import work_through

pytestmark = pytest.mark.postgres


class Crash(Exception):
    """The process dies between the provider's answer and the ledger's commit."""


def _later():
    return timezone.now() + timedelta(minutes=6)


@pytest.fixture
def submitted(client, fake_prolific, paid_campaign):
    """A Prolific study with one submission awaiting review: (publication, assignment)."""
    publication, _ = campaign_launch(
        campaign=paid_campaign, options=LaunchOptions(provider="prolific"), actor="erin"
    )
    study = publication.external_id
    session = fake_prolific.join(study, "P1")
    work_through(
        client, paid_campaign, {"PROLIFIC_PID": "P1", "STUDY_ID": study, "SESSION_ID": session}
    )
    fake_prolific.complete("P1", fake_prolific.state.studies[study]["completion_codes"][0]["code"])
    assignment = Assignment.objects.get(provider_assignment_id=session)
    assignment.status = Assignment.Status.SUBMITTED
    assignment.save(update_fields=["status"])
    return publication, assignment


def _crash_after(monkeypatch, method):
    real = getattr(ProlificProvider, method)

    def accept_then_crash(self, **kwargs):
        real(self, **kwargs)
        raise Crash

    monkeypatch.setattr(ProlificProvider, method, accept_then_crash)


def _approvals(fake, session):
    return fake.state.calls.count(("POST", f"/api/v1/submissions/{session}/transition/"))


def test_crash_after_the_provider_approved_is_marked_paid_without_paying_again(
    monkeypatch, fake_prolific, submitted
):
    publication, assignment = submitted
    _crash_after(monkeypatch, "approve")
    with pytest.raises(Crash):
        assignment_approve(publication=publication, assignment=assignment, actor="erin")
    reward = Payment.objects.get(kind=Payment.Kind.REWARD)
    assert reward.status == Payment.Status.SENDING
    assert payments_reconcile(now=timezone.now()) == {}  # within the grace period: untouched

    assert payments_reconcile(now=_later()) == {"paid": 1}
    reward.refresh_from_db()
    assert reward.status == Payment.Status.PAID
    assert reward.provider_reference == assignment.provider_assignment_id
    assert _approvals(fake_prolific, assignment.provider_assignment_id) == 1
    assert AuditLog.objects.filter(
        action=AuditLog.Action.APPROVE, detail__contains="found paid on the provider"
    ).exists()


def test_crash_before_the_provider_call_is_sent_again_once(monkeypatch, fake_prolific, submitted):
    publication, assignment = submitted

    def crash(self, **kwargs):
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(ProlificProvider, "approve", crash)
        with pytest.raises(Crash):
            assignment_approve(publication=publication, assignment=assignment, actor="erin")

    assert payments_reconcile(now=_later()) == {"paid": 1}
    assert payments_reconcile(now=_later() + timedelta(minutes=10)) == {}
    assert Payment.objects.get(kind=Payment.Kind.REWARD).status == Payment.Status.PAID
    assert _approvals(fake_prolific, assignment.provider_assignment_id) == 1
    assert fake_prolific.state.submissions[assignment.provider_assignment_id]["status"] == (
        "APPROVED"
    )


def test_bonus_cut_off_after_prolific_paid_it_is_flagged_never_paid_twice(
    monkeypatch, fake_prolific, submitted
):
    publication, assignment = submitted
    _crash_after(monkeypatch, "bonus")
    with pytest.raises(Crash):
        bonus_pay(
            campaign=publication.campaign,
            worker=assignment.worker,
            amount="0.40",
            reason="Thanks",
            actor="erin",
        )
    for minutes in (6, 20):  # a later sweep leaves it to the person too
        counts = payments_reconcile(now=timezone.now() + timedelta(minutes=minutes))
        assert counts in ({"needs_attention": 1}, {})
    bonus = Payment.objects.get(kind=Payment.Kind.BONUS)
    assert bonus.status == Payment.Status.NEEDS_ATTENTION
    assert "app.prolific.com" in bonus.error
    assert len(fake_prolific.state.paid) == 1

    payment_resolve(
        campaign=publication.campaign,
        payment_id=bonus.pk,
        paid=True,
        note="Listed as paid in the study's bonuses.",
        actor="erin",
    )
    bonus.refresh_from_db()
    assert bonus.status == Payment.Status.PAID
    assert AuditLog.objects.filter(
        action=AuditLog.Action.BONUS, detail__contains="Listed as paid"
    ).exists()
    assert len(fake_prolific.state.paid) == 1


def test_provider_down_is_flagged_after_the_limit(monkeypatch, settings, submitted):
    publication, assignment = submitted

    def crash(self, **kwargs):
        raise Crash

    with monkeypatch.context() as patch:
        patch.setattr(ProlificProvider, "approve", crash)
        with pytest.raises(Crash):
            assignment_approve(publication=publication, assignment=assignment, actor="erin")
    settings.PROLIFIC_API_URL = "http://127.0.0.1:9"  # nothing listens: Prolific is down
    outcomes = [payments_reconcile(now=_later()) for _ in range(CHECKS_MAX)]
    assert outcomes == [{"unreachable": 1}] * (CHECKS_MAX - 1) + [{"needs_attention": 1}]
    reward = Payment.objects.get(kind=Payment.Kind.REWARD)
    assert reward.status == Payment.Status.NEEDS_ATTENTION
    assert "Could not reach Prolific" in reward.error
    assert AuditLog.objects.filter(
        action=AuditLog.Action.REFUSED, detail__contains="needs attention"
    ).exists()


def test_review_cut_off_after_the_approval_still_pays_the_bonus(
    monkeypatch, fake_prolific, submitted
):
    """The never-paid case: review approved, then died before writing the bonus; approved
    assignments are passed by from then on, so the bonus was owed with no trace of it."""
    publication, assignment = submitted
    _crash_after(monkeypatch, "approve")
    with pytest.raises(Crash):
        campaign_review(publication=publication, actor="erin", bonus=Decimal("0.40"))
    owed = Payment.objects.get(kind=Payment.Kind.BONUS)
    assert owed.status == Payment.Status.PENDING
    monkeypatch.undo()

    assert payments_reconcile(now=_later()) == {"paid": 2}
    owed.refresh_from_db()
    assert owed.status == Payment.Status.PAID
    assert len(fake_prolific.state.paid) == 1
    assert fake_prolific.state.paid[0]["amount"] == 40


def test_dashboard_shows_flagged_payments_and_resolves_them(admin_client, settings, submitted):
    publication, assignment = submitted
    settings.PROLIFIC_API_URL = "http://127.0.0.1:9"  # Prolific is down: the approval fails
    with pytest.raises(Exception, match="Could not reach Prolific"):
        assignment_approve(publication=publication, assignment=assignment, actor="erin")
    reward = Payment.objects.get(kind=Payment.Kind.REWARD)
    Payment.objects.filter(pk=reward.pk).update(status=Payment.Status.SENDING)
    for _ in range(CHECKS_MAX):
        payments_reconcile(now=_later())
    page = admin_client.get(f"/dashboard/c/{publication.campaign.slug}/")
    html = page.content.decode()
    assert "Payments that need attention (1)" in html and reward.idempotency_key in html

    url = f"/dashboard/c/{publication.campaign.slug}/payments/"
    refused = admin_client.post(url, {"payment": reward.pk, "action": "failed", "note": ""})
    assert refused.status_code == 302
    reward.refresh_from_db()
    assert reward.status == Payment.Status.NEEDS_ATTENTION  # no note: nothing changed
    admin_client.post(url, {"payment": reward.pk, "action": "failed", "note": "Not approved."})
    reward.refresh_from_db()
    assert reward.status == Payment.Status.FAILED and reward.error == "Not approved."
    html = admin_client.get(f"/dashboard/c/{publication.campaign.slug}/").content.decode()
    assert "Payments that need attention" not in html
