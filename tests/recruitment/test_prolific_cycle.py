"""The whole Prolific cycle against the fake Prolific API on loopback."""

from decimal import Decimal
from urllib.request import Request, urlopen

import pytest

from annotation.models import Assignment, AuditLog, Item, Judgment
from annotation.quality import worker_soft_block
from annotation.services import items_add
from evalsite.errors import InvalidParameters
from recruitment.models import Payment
from recruitment.services import (
    LaunchOptions,
    bonus_pay,
    campaign_launch,
    campaign_review,
    publication_set_state,
    publication_sync,
    worker_block,
)
from tests.factories import JudgmentFactory, likert_payload
from tests.recruitment.conftest import work_through


def _params(study, pid, session):
    return {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session}


def _complete(url, participant):
    request = Request(url, headers={"Cookie": f"participant={participant}"})
    with urlopen(request, timeout=10) as response:  # noqa: S310 (loopback test server)
        return response.status


def test_full_prolific_cycle(client, fake_prolific, paid_campaign):
    fake = fake_prolific
    publication, preview = campaign_launch(
        campaign=paid_campaign, options=LaunchOptions(provider="prolific"), actor="erin"
    )
    study_id = publication.external_id
    study = fake.state.studies[study_id]
    assert study["status"] == "ACTIVE" and study["total_available_places"] == 4
    assert study["reward"] == 50 and study["prolific_id_option"] == "url_parameters"
    assert study["external_study_url"].startswith(f"http://testserver/task/{paid_campaign.slug}/?")
    assert study["completion_codes"][0]["actions"] == [{"action": "MANUALLY_REVIEW"}]
    assert preview.estimate.total == Decimal("2.88")  # 4 × (0.50 + 0.215 fee, rounded up)

    # P1 works through the real pages and is redirected to Prolific with the study's code.
    s1 = fake.join(study_id, "P1")
    end = work_through(client, paid_campaign, _params(study_id, "P1", s1))
    assert end.status_code == 302
    assert (
        end["Location"]
        == f"{fake.url}/submissions/complete?cc={study['completion_codes'][0]['code']}"
    )
    assert _complete(end["Location"], "P1") == 200
    assert fake.state.submissions[s1]["status"] == "AWAITING REVIEW"

    # P2 replays the study-wide completion code without doing the work.
    s2 = fake.join(study_id, "P2")
    _complete(end["Location"], "P2")
    late = client.get(f"/task/{paid_campaign.slug}/", _params(study_id, "P2", s2))
    assert late.status_code == 403 and "no longer active" in late.content.decode()

    # P3 starts, answers one item, then returns the study on Prolific.
    s3 = fake.join(study_id, "P3")
    page = client.get(f"/task/{paid_campaign.slug}/", _params(study_id, "P3", s3))
    assert page.status_code == 200
    fake.set_status(s3, "RETURNED")
    report = publication_sync(publication=publication, actor="erin")
    assert report.changed == {"returned": 1}
    assert Assignment.objects.get(provider_assignment_id=s3).status == "returned"

    decisions = {d.submission_id: d for d in campaign_review(publication=publication, actor="erin")}
    assert decisions[s1].action == "approve" and decisions[s1].done
    assert decisions[s2].action == "reject" and decisions[s2].category == "NO_DATA"
    assert decisions[s2].done, decisions[s2].error
    assert fake.state.submissions[s1]["status"] == "APPROVED"
    assert fake.state.submissions[s2]["status"] == "REJECTED"

    worker = Assignment.objects.get(provider_assignment_id=s1).worker
    for _ in range(2):
        bonus_pay(
            campaign=paid_campaign,
            worker=worker,
            amount=Decimal("0.30"),
            reason="Thorough",
            actor="erin",
        )
    assert len(fake.state.paid) == 1 and fake.state.paid[0]["amount"] == 30
    assert Payment.objects.filter(kind="bonus").count() == 1

    worker_block(worker=worker, reason="Testing blocks", actor="erin")
    group = publication.config["block_group"]
    assert "P1" in fake.state.groups[group]["members"]

    publication_set_state(publication=publication, action="pause", actor="erin")
    assert study["status"] == "PAUSED"
    publication_set_state(publication=publication, action="stop", actor="erin")
    assert study["status"] == "AWAITING REVIEW"
    assert Judgment.objects.filter(worker=worker).count() == 6
    actions = set(AuditLog.objects.values_list("action", flat=True))
    assert {"publish", "sync", "approve", "reject", "bonus", "block", "pause", "stop"} <= actions


def test_spoofed_prolific_arrivals_are_refused(client, fake_prolific, paid_campaign):
    fake = fake_prolific
    publication, _ = campaign_launch(
        campaign=paid_campaign, options=LaunchOptions(provider="prolific"), actor="erin"
    )
    study_id = publication.external_id
    s1 = fake.join(study_id, "P1")
    url = f"/task/{paid_campaign.slug}/"
    for params, message in (
        (_params(study_id, "P1", "ffffffffffffffffffffffff"), "does not know this session"),
        (_params(study_id, "MALLORY", s1), "another participant"),
        (_params("otherstudy", "P1", s1), "not belong"),
    ):
        response = client.get(url, params)
        assert response.status_code == 403, params
        assert message in response.content.decode()
    assert client.get(url, _params(study_id, "P1", s1)).status_code == 200
    taken = client.get(url, _params(study_id, "MALLORY", s1))
    assert taken.status_code == 403 and "another worker" in taken.content.decode()
    assert Assignment.objects.count() == 1


def test_prolific_bonus_with_unknown_outcome_is_never_repeated(
    client, fake_prolific, paid_campaign
):
    fake = fake_prolific
    publication, _ = campaign_launch(
        campaign=paid_campaign, options=LaunchOptions(provider="prolific"), actor="erin"
    )
    s1 = fake.join(publication.external_id, "P1")
    end = work_through(client, paid_campaign, _params(publication.external_id, "P1", s1))
    _complete(end["Location"], "P1")
    campaign_review(publication=publication, actor="erin")
    worker = Assignment.objects.get(provider_assignment_id=s1).worker
    payment = bonus_pay(
        campaign=paid_campaign,
        worker=worker,
        amount=Decimal("0.10"),
        reason="x",
        actor="erin",
        key="k1",
    )
    Payment.objects.filter(pk=payment.pk).update(status="uncertain")
    again = bonus_pay(
        campaign=paid_campaign,
        worker=worker,
        amount=Decimal("0.10"),
        reason="x",
        actor="erin",
        key="k1",
    )
    assert again.status == "uncertain" and len(fake.state.paid) == 1


def test_prolific_review_rejects_failed_attention_checks_never_missed_subjective_gold(
    client, fake_prolific, paid_campaign
):
    """Prolific's rules: a rejection only for failed explicit attention checks (two here, in
    a study of 5 minutes or more); missed gold answers or agreement never reject."""
    fake = fake_prolific
    publication, _ = campaign_launch(
        campaign=paid_campaign, options=LaunchOptions(provider="prolific"), actor="erin"
    )
    study_id = publication.external_id
    sessions = {pid: fake.join(study_id, pid) for pid in ("P1", "P2")}
    for pid, session in sessions.items():
        end = work_through(client, paid_campaign, _params(study_id, pid, session))
        assert _complete(end["Location"], pid) == 200
    careless = Assignment.objects.get(provider_assignment_id=sessions["P2"])
    Judgment.objects.filter(assignment=careless).update(time_spent_ms=5 * 60_000)
    # P2 missed two explicit attention checks ("choose 1 for fluency"); P1 only disagreed
    # with the subjective gold and was soft-blocked for it.
    items_add(
        campaign=paid_campaign,
        items=[(f"attn-{n}", likert_payload(300 + n), {"fluency": [1]}, True) for n in (1, 2)],
    )
    for item in Item.objects.filter(campaign=paid_campaign, attention=True):
        JudgmentFactory(assignment=careless, item=item, question="fluency", value=5)
    subjective = Assignment.objects.get(provider_assignment_id=sessions["P1"]).worker
    worker_soft_block(campaign=paid_campaign, worker=subjective, reason="gold accuracy 20%")

    with pytest.raises(InvalidParameters, match="only for failed attention checks"):
        campaign_review(publication=publication, actor="erin", reject_for_agreement=True)
    decisions = {d.submission_id: d for d in campaign_review(publication=publication, actor="erin")}
    approved, rejected = decisions[sessions["P1"]], decisions[sessions["P2"]]
    assert (
        approved.action == "approve" and approved.flagged and "gold accuracy 20%" in approved.reason
    )
    assert (rejected.action, rejected.category) == ("reject", "FAILED_CHECK")
    assert "failed 2 attention check(s)" in rejected.reason and rejected.done, rejected.error
    assert fake.state.submissions[sessions["P1"]]["status"] == "APPROVED"
    assert fake.state.submissions[sessions["P2"]]["status"] == "REJECTED"
