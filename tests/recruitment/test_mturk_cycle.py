"""The whole MTurk cycle with boto3's real client against the fake MTurk server on loopback."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from annotation.models import Assignment, AuditLog, Judgment, WorkerBlock
from evalsite.errors import NotAllowed
from providers.base import Eligibility, ProviderError
from recruitment.models import Hit, Payment
from recruitment.reconcile import payments_reconcile
from recruitment.services import (
    LaunchOptions,
    bonus_pay,
    campaign_launch,
    campaign_review,
    publication_sync,
    worker_block,
)
from tests.recruitment.conftest import post_form, work_through
from tests.recruitment.fake_mturk import Refused


def _launch(campaign, fake, **eligibility):
    options = LaunchOptions(
        provider="mturk", endpoint_url=fake.url, eligibility=Eligibility(**eligibility)
    )
    publication, preview = campaign_launch(campaign=campaign, options=options, actor="alice")
    return publication, preview


def _mturk_params(fake, hit_id, assignment_id, worker_id):
    return {
        "assignmentId": assignment_id,
        "hitId": hit_id,
        "workerId": worker_id,
        "turkSubmitTo": fake.url,
    }


def test_full_cycle_launch_accept_work_submit_sync_approve_bonus_block(
    client, fake_mturk, paid_campaign
):
    fake = fake_mturk
    publication, preview = _launch(
        paid_campaign, fake, locales=("US", "GB"), min_percent_approved=95
    )
    # 4 items, 2 per assignment, 2 workers each: 2 HITs × 2 assignments at $0.50 + 20% fee.
    assert preview.estimate.total == Decimal("2.40")
    assert publication.reserved == Decimal("2.40")
    assert len(fake.state.hits) == 2 == Hit.objects.filter(publication=publication).count()
    hit_type = next(iter(fake.state.hit_types.values()))
    assert hit_type["Reward"] == "0.50"
    comparators = {
        q["QualificationTypeId"]: q["Comparator"] for q in hit_type["QualificationRequirements"]
    }
    assert comparators["00000000000000000071"] == "In"
    assert comparators["000000000000000000L0"] == "GreaterThanOrEqualTo"
    assert comparators[publication.config["limit_qualification_id"]] == "DoesNotExist"
    hit_id = next(iter(fake.state.hits))
    assert fake.state.hits[hit_id]["ExternalURL"] == f"http://testserver/task/{paid_campaign.slug}/"
    paid_campaign.refresh_from_db()
    assert paid_campaign.status == "live"

    # A worker accepts, works through the real worker page and submits to MTurk.
    aid = fake.accept(hit_id, "AWORKER1")
    done = work_through(client, paid_campaign, _mturk_params(fake, hit_id, aid, "AWORKER1"))
    html = done.content.decode()
    assert f'action="{fake.url}/mturk/externalSubmit"' in html
    status, _ = post_form(html, "mturk-submit")
    assert status == 200 and fake.state.assignments[aid]["AssignmentStatus"] == "Submitted"

    # A second worker does one item, then submits on MTurk's side: sync catches it up.
    aid2 = fake.accept(hit_id, "AWORKER2")
    page = client.get(f"/task/{paid_campaign.slug}/", _mturk_params(fake, hit_id, aid2, "AWORKER2"))
    assert page.status_code == 200
    fake.external_submit({"assignmentId": aid2})
    report = publication_sync(publication=publication, actor="alice")
    assert report.changed == {"abandoned": 1}  # submitted with no answer here: nothing to keep
    assert Assignment.objects.get(provider_assignment_id=aid).status == "submitted"

    # Review approves the worker who passes quality control and rejects the empty one.
    decisions = campaign_review(publication=publication, actor="alice")
    by_id = {d.submission_id: d for d in decisions}
    assert by_id[aid].action == "approve" and by_id[aid].done
    assert by_id[aid2].action == "reject" and "No work" in by_id[aid2].reason
    assert fake.state.assignments[aid]["AssignmentStatus"] == "Approved"
    assert fake.state.assignments[aid2]["AssignmentStatus"] == "Rejected"
    mine = Assignment.objects.get(provider_assignment_id=aid)
    assert mine.status == "approved"
    assert Payment.objects.get(kind="reward").amount == Decimal("0.50")

    # A bonus asked for twice is paid once.
    for _ in range(2):
        bonus_pay(
            campaign=paid_campaign,
            worker=mine.worker,
            amount=Decimal("0.25"),
            reason="Careful work",
            actor="alice",
        )
    assert len(fake.state.bonuses) == 1
    assert (
        fake.state.bonuses[0]["UniqueRequestToken"]
        == Payment.objects.get(kind="bonus").idempotency_key
    )
    assert Payment.objects.filter(kind="bonus", status="paid").count() == 1

    # Block: on MTurk's side, in our list, and at the door.
    worker_block(worker=mine.worker, reason="Copied answers", actor="alice")
    assert (
        "AWORKER1" in fake.state.blocks and WorkerBlock.objects.filter(lifted_at=None).count() == 1
    )
    with pytest.raises(Refused):
        fake.accept(list(fake.state.hits)[1], "AWORKER1")
    again = client.get(
        f"/task/{paid_campaign.slug}/", _mturk_params(fake, hit_id, "3AFORGED", "AWORKER1")
    )
    assert again.status_code == 403

    # Every money and worker action is in the audit log, with actor and amount; the fake saw
    # only valid requests and the worker's judgments are all kept.
    actions = list(AuditLog.objects.values_list("action", "actor", "amount"))
    assert ("publish", "alice", Decimal("2.40")) in actions
    assert ("approve", "alice", Decimal("0.50")) in actions
    assert ("bonus", "alice", Decimal("0.25")) in actions
    assert ("block", "alice", None) in actions
    assert fake.state.invalid == []
    assert Judgment.objects.filter(worker=mine.worker).count() == 6


def test_bonus_retry_after_a_lost_answer_is_not_paid_twice(fake_mturk, paid_campaign, client):
    fake = fake_mturk
    publication, _ = _launch(paid_campaign, fake)
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    post_form(
        work_through(
            client, paid_campaign, _mturk_params(fake, hit_id, aid, "AW1")
        ).content.decode(),
        "mturk-submit",
    )
    campaign_review(publication=publication, actor="bob")
    worker = Assignment.objects.get(provider_assignment_id=aid).worker
    # MTurk got the bonus but our process died before recording it: the ledger says sending.
    payment = bonus_pay(
        campaign=paid_campaign,
        worker=worker,
        amount=Decimal("1.00"),
        reason="Great",
        actor="bob",
        key="bonus-lost-answer",
    )
    Payment.objects.filter(pk=payment.pk).update(status="sending")
    again = bonus_pay(
        campaign=paid_campaign,
        worker=worker,
        amount=Decimal("1.00"),
        reason="Great",
        actor="bob",
        key="bonus-lost-answer",
    )
    assert again.status == "paid" and len(fake.state.bonuses) == 1


@pytest.mark.parametrize("mturk_has_it", [True, False])
def test_the_sweep_resolves_a_bonus_cut_off_mid_send_by_asking_mturk(
    fake_mturk, paid_campaign, client, mturk_has_it
):
    """A crash left the bonus "sending": ListBonusPayments finds it (paid, not sent again), or
    does not (sent again under the same UniqueRequestToken: paid once)."""
    fake = fake_mturk
    publication, _ = _launch(paid_campaign, fake)
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    post_form(
        work_through(
            client, paid_campaign, _mturk_params(fake, hit_id, aid, "AW1")
        ).content.decode(),
        "mturk-submit",
    )
    campaign_review(publication=publication, actor="bob")
    worker = Assignment.objects.get(provider_assignment_id=aid).worker
    payment = bonus_pay(
        campaign=paid_campaign, worker=worker, amount=Decimal("1.00"), reason="Great", actor="bob"
    )
    Payment.objects.filter(pk=payment.pk).update(status="sending")
    if not mturk_has_it:  # the crash came before the request reached MTurk
        fake.state.bonuses.clear()
        fake.state.tokens.discard(payment.idempotency_key)
    later = timezone.now() + timedelta(minutes=6)
    assert payments_reconcile(now=later) == {"paid": 1}
    payment.refresh_from_db()
    assert payment.status == "paid"
    assert len(fake.state.bonuses) == 1
    assert fake.state.bonuses[0]["UniqueRequestToken"] == payment.idempotency_key


def test_budget_refuses_publishing_and_bonuses_beyond_it(fake_mturk, paid_campaign, client):
    fake = fake_mturk
    paid_campaign.budget = Decimal("2.00")
    paid_campaign.save()
    with pytest.raises(Exception, match="budget") as refused:
        _launch(paid_campaign, fake)
    assert "2.40" in str(refused.value) and fake.state.calls == []
    paid_campaign.budget = Decimal("2.60")
    paid_campaign.save()
    publication, _ = _launch(paid_campaign, fake)
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    post_form(
        work_through(
            client, paid_campaign, _mturk_params(fake, hit_id, aid, "AW1")
        ).content.decode(),
        "mturk-submit",
    )
    campaign_review(publication=publication, actor="carol")
    worker = Assignment.objects.get(provider_assignment_id=aid).worker
    with pytest.raises(Exception, match="0.20 of its budget"):
        bonus_pay(
            campaign=paid_campaign,
            worker=worker,
            amount=Decimal("0.50"),
            reason="Thanks",
            actor="carol",
        )
    assert fake.state.bonuses == [] and not Payment.objects.filter(kind="bonus").exists()


def test_spoofed_mturk_arrivals_are_refused(client, fake_mturk, paid_campaign):
    fake = fake_mturk
    _launch(paid_campaign, fake)
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    ok = client.get(f"/task/{paid_campaign.slug}/", _mturk_params(fake, hit_id, aid, "AW1"))
    assert ok.status_code == 200
    # Unknown HIT, another worker on a taken assignment, the assignment on another HIT.
    other_hit = list(fake.state.hits)[1]
    for params, message in (
        (_mturk_params(fake, "3HNOTOURS", "3AX", "AW9"), "not belong"),
        (_mturk_params(fake, hit_id, aid, "MALLORY"), "another worker"),
        (_mturk_params(fake, other_hit, aid, "AW1"), "another HIT"),
    ):
        response = client.get(f"/task/{paid_campaign.slug}/", params)
        assert response.status_code == 403 and message in response.content.decode()
    # A local link is refused once the campaign is published only on MTurk.
    local = client.get(f"/task/{paid_campaign.slug}/", {"workerId": "someone"})
    assert local.status_code == 403
    assert Assignment.objects.count() == 1


def test_provider_errors_come_back_as_clear_messages(fake_mturk, paid_campaign, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(ProviderError, match="AWS credentials"):
        _launch(paid_campaign, fake_mturk)
    assert AuditLog.objects.filter(action="refused").exists()


def test_blocked_worker_is_refused_before_any_assignment(client, db, paid_campaign):
    from tests.factories import WorkerFactory

    worker = WorkerFactory(external_id="blocked-one")
    worker_block(worker=worker, reason="Spam", actor="dan")
    paid_campaign.status = "live"
    paid_campaign.save()
    response = client.get(f"/task/{paid_campaign.slug}/", {"workerId": "blocked-one"})
    assert response.status_code == 403
    with pytest.raises(NotAllowed):
        from providers import Arrival
        from recruitment.services import arrival_verify

        arrival_verify(campaign=paid_campaign, arrival=Arrival("local", "blocked-one"))


def test_a_bonus_the_provider_refuses_is_recorded_failed_and_frees_the_budget(
    client, fake_mturk, paid_campaign
):
    from recruitment.services import assignment_reject, campaign_committed

    fake = fake_mturk
    publication, _ = _launch(paid_campaign, fake)
    hit_id = next(iter(fake.state.hits))
    aid = fake.accept(hit_id, "AW1")
    done = work_through(client, paid_campaign, _mturk_params(fake, hit_id, aid, "AW1"))
    post_form(done.content.decode(), "mturk-submit")
    publication_sync(publication=publication)
    assignment = Assignment.objects.get(provider_assignment_id=aid)
    assignment_reject(publication=publication, assignment=assignment, actor="t", feedback="No.")
    before = campaign_committed(paid_campaign)
    with pytest.raises(ProviderError, match="submitted or approved"):
        bonus_pay(
            campaign=paid_campaign,
            worker=assignment.worker,
            amount=Decimal("0.30"),
            reason="Sorry",
            actor="t",
            assignment=assignment,
        )
    payment = Payment.objects.get(kind="bonus")
    assert payment.status == "failed" and "submitted or approved" in payment.error
    assert campaign_committed(paid_campaign) == before
    assert AuditLog.objects.filter(action="refused", amount=Decimal("0.30")).exists()


@pytest.mark.parametrize(
    "params",
    [
        {"PROLIFIC_PID": "P1"},  # no session or study
        {"PROLIFIC_PID": "P1", "STUDY_ID": "S", "SESSION_ID": "a b"},
        {"assignmentId": "A1", "hitId": "H1", "workerId": "W1"},  # no turkSubmitTo
        {"assignmentId": "A1", "hitId": "<x>", "workerId": "W1", "turkSubmitTo": "x"},
    ],
)
def test_malformed_provider_parameters_are_a_clear_400(client, paid_campaign, params):
    paid_campaign.status = "live"
    paid_campaign.save()
    response = client.get(f"/task/{paid_campaign.slug}/", params)
    assert response.status_code == 400
    assert not Assignment.objects.exists()
