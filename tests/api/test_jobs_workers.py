"""Reports, exports and worker actions through the API; idempotency keys on spending."""

import time

import pytest

from annotation.models import Assignment, AuditLog, Worker
from api.models import IdempotencyKey
from dashboard import job_builds, services
from dashboard.models import Job
from recruitment.models import Payment
from tests.api.conftest import ApiClient, error_of
from tests.concurrency import at_once


def _finished(job: dict) -> dict:
    """Run a job the broker holds (tests with CELERY_BROKER_URL have no worker running)."""
    if job["status"] == "queued":
        services.job_run(job["id"])
    return job


def test_a_report_job_combines_labels_as_asked(api, filled, monkeypatch) -> None:
    from evalstats.options import report_options

    seen = []
    real = job_builds.campaign_report

    def spy(campaign):
        seen.append(report_options().aggregate)  # what the report is built with
        return real(campaign)

    monkeypatch.setattr(job_builds, "campaign_report", spy)
    for asked, used in (("?aggregate=ds", "ds"), ("?aggregate=mace", "mace"), ("", "majority")):
        job = _finished(api.post(f"/campaigns/{filled.slug}/reports{asked}").json())
        assert Job.objects.get(pk=job["id"]).options == {"aggregate": used}
    assert seen == ["ds", "mace", "majority"]
    refused = api.post(f"/campaigns/{filled.slug}/reports?aggregate=vote")
    assert refused.status_code == 422 and error_of(refused)["field"]
    unknown = api.post(f"/campaigns/{filled.slug}/reports?aggregate=ds&colour=blue")
    assert unknown.status_code == 422 and error_of(unknown)["field"] == "colour"
    with pytest.raises(services.InvalidParameters, match="not 'vote'"):
        services.job_start(campaign=filled, kind=Job.Kind.REPORT, options={"aggregate": "vote"})
    assert not Job.objects.filter(options__aggregate="vote").exists()


def test_a_report_job_then_the_latest_snapshots_tables_and_figure_urls(api, filled) -> None:
    assert error_of(api.get(f"/campaigns/{filled.slug}/reports/latest"))["code"] == "not_found"
    response = api.post(f"/campaigns/{filled.slug}/reports")
    assert response.status_code == 202
    job = _finished(response.json())
    status = api.get(f"/campaigns/{filled.slug}/jobs/{job['id']}").json()
    assert status["status"] == "done" and status["progress"] == 1.0 and status["files"]
    report = api.get(f"/campaigns/{filled.slug}/reports/latest").json()
    assert report["job"] == job["id"] and report["judgments"] > 0 and report["tables"]
    table = next(iter(report["tables"].values()))
    assert table["columns"] and table["rows"]
    url = next(iter(report["figures"].values()))["png"]
    figure = api.client.get(url, headers=api.headers)
    assert figure.status_code == 200 and b"".join(figure.streaming_content)[:4] == b"\x89PNG"


def test_an_export_job_polls_to_a_download_with_pseudonyms_only(api, filled) -> None:
    body = {"what": "judgments", "format": "csv"}
    job = _finished(api.post(f"/campaigns/{filled.slug}/exports", body).json())
    status = api.get(f"/campaigns/{filled.slug}/jobs/{job['id']}").json()
    assert status["kind"] == "export" and status["status"] == "done"
    download = api.client.get(status["files"][0], headers=api.headers)
    text = b"".join(download.streaming_content).decode()
    assert download.status_code == 200 and text.count("\n") > 10
    assert not any(w.external_id in text for w in Worker.objects.all())
    response = api.post(f"/campaigns/{filled.slug}/exports", {"format": "xls"})
    assert response.status_code == 422 and error_of(response)["field"] == "format"
    other = api.get(f"/campaigns/{filled.slug}/jobs/{job['id']}/files/other.csv")
    assert other.status_code == 404 and error_of(other)["code"] == "not_found"


def test_the_worker_table_comes_from_the_snapshot_without_provider_ids(api, filled) -> None:
    empty = api.get(f"/campaigns/{filled.slug}/workers").json()
    assert empty["count"] == 0 and empty["report_job"] is None
    _finished(api.post(f"/campaigns/{filled.slug}/reports").json())
    table = api.get(f"/campaigns/{filled.slug}/workers?limit=2").json()
    assert table["count"] == 4 and len(table["rows"]) == 2
    assert "pseudonym" in table["columns"] and "worker_id" not in table["columns"]
    pseudonyms = set(Worker.objects.values_list("pseudonym", flat=True))
    assert {row[table["columns"].index("pseudonym")] for row in table["rows"]} <= pseudonyms


def _submitted_worker(campaign) -> Worker:
    assignment = Assignment.objects.filter(
        campaign=campaign, status=Assignment.Status.SUBMITTED
    ).first()
    assert assignment is not None
    return assignment.worker


def test_a_bonus_replayed_with_its_idempotency_key_is_paid_once(api, filled) -> None:
    worker = _submitted_worker(filled)
    path = f"/campaigns/{filled.slug}/workers/{worker.pseudonym}/bonus"
    body = {"amount": "0.40", "reason": "Careful work."}
    first = api.post(path, body, **{"Idempotency-Key": "bonus-1"})
    assert first.status_code == 200, first.content
    again = api.post(path, body, **{"Idempotency-Key": "bonus-1"})
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1
    other = api.post(path, body | {"amount": "0.50"}, **{"Idempotency-Key": "bonus-1"})
    assert error_of(other)["code"] == "idempotency_key_reused"
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1


def test_a_refusal_is_remembered_under_its_key_too(api, filled) -> None:
    worker = _submitted_worker(filled)
    path = f"/campaigns/{filled.slug}/workers/{worker.pseudonym}/bonus"
    body = {"amount": "500", "reason": "Too much."}
    first = api.post(path, body, **{"Idempotency-Key": "k-2"})
    assert first.status_code == 400 and "bonus" in error_of(first)["message"].lower()
    assert api.post(path, body, **{"Idempotency-Key": "k-2"}).json() == first.json()
    assert IdempotencyKey.objects.get().status_code == 400
    assert not Payment.objects.exists()


def test_approve_reject_block_and_forget_go_through_the_worker_services(api, filled) -> None:
    workers = list(
        Worker.objects.filter(
            assignments__campaign=filled, assignments__status=Assignment.Status.SUBMITTED
        ).distinct()
    )
    base = f"/campaigns/{filled.slug}/workers"
    approved = api.post(f"{base}/{workers[0].pseudonym}/approve", {}, **{"Idempotency-Key": "a1"})
    assert approved.status_code == 200 and "Approved" in approved.json()["summary"]
    refused = api.post(f"{base}/{workers[1].pseudonym}/reject", {})
    assert "feedback" in error_of(refused)["message"]
    rejected = api.post(f"{base}/{workers[1].pseudonym}/reject", {"reason": "Random answers."})
    assert rejected.status_code == 200
    assert api.post(f"{base}/{workers[2].pseudonym}/block", {"reason": "Spam."}).status_code == 200
    assert api.post(f"{base}/{workers[2].pseudonym}/forget", {}).status_code == 200
    assert error_of(api.post(f"{base}/WNOBODY/approve", {}))["code"] == "not_found"
    assert error_of(api.post(f"{base}/{workers[0].pseudonym}/dance", {}))["field"] == "action"
    actions = set(AuditLog.objects.values_list("action", flat=True))
    assert {AuditLog.Action.APPROVE, AuditLog.Action.REJECT, AuditLog.Action.BLOCK} <= actions
    everyone = api.post(f"{base}/approve", {"workers": None})
    assert everyone.status_code == 200, everyone.content


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_bonuses_with_one_idempotency_key_pay_once(key, filled, monkeypatch) -> None:
    """Eight requests at once with one key: the service runs once (the ledger's own key
    would also stop a second payment; this counts calls, so it tests the API's table)."""
    worker = _submitted_worker(filled)
    calls, real = [], services.worker_act

    def counted(**kwargs):
        calls.append(kwargs["action"])
        time.sleep(0.3)  # the others arrive while the first is still acting
        return real(**kwargs)

    monkeypatch.setattr("api.workers.services.worker_act", counted)
    path = f"/campaigns/{filled.slug}/workers/{worker.pseudonym}/bonus"
    body = {"amount": "0.25", "reason": "Thanks."}

    def send() -> tuple[int, dict, bool]:
        response = ApiClient(key).post(path, body, **{"Idempotency-Key": "same"})
        replayed = response.get("Idempotent-Replayed") == "true"
        return response.status_code, response.json(), replayed

    answers = at_once(send, 8)
    assert calls == ["bonus"]
    assert len(answers) == 8 and len({(a[0], str(a[1])) for a in answers}) == 1, answers
    assert answers[0][0] == 200 and sum(a[2] for a in answers) == 7
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1
    assert IdempotencyKey.objects.count() == 1


def test_jobs_of_another_campaign_are_not_found(api, filled, other_researcher) -> None:
    from tests.factories import CampaignFactory

    theirs = CampaignFactory(owner=other_researcher)
    job = Job.objects.create(campaign=theirs, kind=Job.Kind.REPORT)
    assert api.get(f"/campaigns/{filled.slug}/jobs/{job.pk}").status_code == 404
    assert api.get(f"/campaigns/{theirs.slug}/jobs/{job.pk}").status_code == 404
