"""The campaign list and page: live numbers, report snapshots, exports, worker actions."""

import csv
import html
import io

import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import (
    Assignment,
    AuditLog,
    Dialogue,
    Judgment,
    Participation,
    Situation,
    Utterance,
    Worker,
)
from annotation.protocols import registry
from annotation.selectors import campaign_progress
from annotation.simulation import crowd_make, crowd_run
from dashboard import services
from dashboard.files import shared_storage
from dashboard.items import campaign_questions
from dashboard.models import Job
from dashboard.selectors import campaign_rows
from recruitment.models import Payment
from tests.factories import CampaignFactory

pytestmark = pytest.mark.django_db
ED_DEFAULTS = registry.get("empathetic_chat").default_parameters()


@pytest.fixture
def ada(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def start_job(ada, filled, django_capture_on_commit_callbacks):
    """POST a job request, then run what it queued as a Celery worker would."""

    def start(data):
        with django_capture_on_commit_callbacks(execute=False):
            response = ada.post(
                reverse("dashboard:job_create", args=[filled.slug]), data, follow=True
            )
        for job in Job.objects.filter(status=Job.Status.QUEUED):
            services.job_run(job.pk)
        return response

    return start


def test_the_list_counts_progress_as_the_allocation_does(ada, filled) -> None:
    row = campaign_rows([filled])[0]
    progress = campaign_progress(filled)  # the crowd side's own, independent count
    assert (row.done, row.needed, row.items) == (progress.done, progress.needed, progress.items)
    assert row.judgments == Judgment.objects.filter(item__campaign=filled).count()
    assert row.per_hour > 0 and row.eta_text != "no recent work"
    page = ada.get(reverse("dashboard:campaigns")).content.decode()
    assert f"{row.done} / {row.needed}" in page


def test_progress_json_is_what_the_page_polls(ada, filled) -> None:
    data = ada.get(reverse("dashboard:progress", args=[filled.slug])).json()
    assert data["done"] == campaign_progress(filled).done
    assert data["percent"] == round(100 * data["done"] / data["needed"])
    assert data["report_judgments"] is None


def test_a_report_job_builds_the_snapshot_the_page_shows(ada, filled, start_job) -> None:
    assert start_job({"kind": "report"}).status_code == 200
    job = Job.objects.get(kind=Job.Kind.REPORT)
    assert job.status == Job.Status.DONE and job.progress == 1.0
    assert job.result["judgments"] == Judgment.objects.filter(item__campaign=filled).count()
    page = ada.get(reverse("dashboard:campaign", args=[filled.slug])).content.decode()
    assert "mean ± SEM" in page or "mean" in page
    for name, figure in job.result["figures"].items():
        url = reverse("dashboard:job_file", args=[filled.slug, job.pk, figure["png"]])
        assert url in page, name
        image = ada.get(url + "?inline=1")
        assert image["Content-Type"] == "image/png"
        assert b"".join(image.streaming_content)[:8] == b"\x89PNG\r\n\x1a\n"
    # the worker-quality table lists every worker with an action form
    for pseudonym in Worker.objects.filter(judgments__item__campaign=filled).values_list(
        "pseudonym", flat=True
    ):
        assert f'data-worker="{pseudonym}"' in page


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_an_export_job_writes_a_downloadable_file(ada, filled, start_job, fmt) -> None:
    start_job({"kind": "export", "format": fmt})
    job = Job.objects.get(kind=Job.Kind.EXPORT)
    assert job.status == Job.Status.DONE, job.error
    status = ada.get(reverse("dashboard:job_status", args=[filled.slug, job.pk])).json()
    assert status["progress"] == 1.0 and len(status["files"]) == 1
    download = ada.get(status["files"][0])
    assert "attachment" in download["Content-Disposition"]
    data = io.BytesIO(b"".join(download.streaming_content))
    frame = {
        "csv": pd.read_csv,
        "jsonl": lambda f: pd.read_json(f, lines=True),
        "parquet": pd.read_parquet,
    }[fmt](data)
    assert len(frame) == Judgment.objects.filter(item__campaign=filled).count()
    assert "rater" in frame.columns and "worker" not in frame.columns
    assert not set(frame["rater"]) & set(Worker.objects.values_list("external_id", flat=True))


@pytest.mark.parametrize(
    "data, message",
    [
        ({"kind": "export", "format": "xlsx"}, "Unknown export format"),
        ({"kind": "export", "format": "parlai"}, "Unknown export format"),
        ({"kind": "export", "what": "votes", "format": "csv"}, "dialogues or the study, not"),
        ({"kind": "export", "what": "dialogues", "format": "csv"}, "has no dialogues"),
        ({"kind": "bake"}, "Unknown job kind"),
    ],
)
def test_a_bad_job_request_says_why_and_starts_nothing(ada, filled, data, message) -> None:
    response = ada.post(reverse("dashboard:job_create", args=[filled.slug]), data)
    assert response.status_code == 302
    assert not Job.objects.exists()
    assert message in ada.get(response["Location"]).content.decode()


def test_only_the_files_a_job_recorded_can_be_downloaded(ada, filled, start_job) -> None:
    start_job({"kind": "report"})
    job = Job.objects.get()
    for name in ["../../settings.py", "nope.csv", "%2e%2e%2fsecret"]:
        url = reverse("dashboard:job_file", args=[filled.slug, job.pk, "x"])[:-1] + name
        assert ada.get(url).status_code == 404


def _submitted_worker(campaign) -> Worker:
    assignment = Assignment.objects.filter(
        campaign=campaign, status=Assignment.Status.SUBMITTED
    ).first()
    assert assignment is not None
    return assignment.worker


def _act(client, campaign, **data):
    return client.post(
        reverse("dashboard:worker_action", args=[campaign.slug]), data, follow=True
    ).content.decode()


def test_approve_acts_on_the_workers_submitted_assignments_and_is_audited(ada, filled) -> None:
    worker = _submitted_worker(filled)
    submitted = Assignment.objects.filter(
        campaign=filled, worker=worker, status=Assignment.Status.SUBMITTED
    ).count()
    page = _act(ada, filled, worker=worker.pseudonym, action="approve")
    assert f"Approved {submitted} assignment(s)" in page
    assert not Assignment.objects.filter(
        campaign=filled, worker=worker, status=Assignment.Status.SUBMITTED
    ).exists()
    audits = AuditLog.objects.filter(worker=worker, action=AuditLog.Action.APPROVE)
    assert audits.count() == submitted and {a.actor for a in audits} == {"ada"}
    # approving again changes nothing and logs nothing more
    _act(ada, filled, worker=worker.pseudonym, action="approve")
    assert AuditLog.objects.filter(worker=worker, action=AuditLog.Action.APPROVE).count() == (
        submitted
    )


def test_soft_block_and_bonus_are_recorded(ada, filled) -> None:
    worker = _submitted_worker(filled)
    _act(ada, filled, worker=worker.pseudonym, action="soft_block", reason="off-topic answers")
    assert Participation.objects.get(campaign=filled, worker=worker).soft_blocked
    soft = AuditLog.objects.get(worker=worker, action=AuditLog.Action.SOFT_BLOCK)
    assert (soft.campaign, soft.actor, soft.detail) == (filled, "ada", "off-topic answers")
    page = _act(
        ada, filled, worker=worker.pseudonym, action="bonus", amount="0.40", reason="thanks"
    )
    assert "Bonus of 0.40" in page
    payment = Payment.objects.get(worker=worker, kind=Payment.Kind.BONUS)
    assert str(payment.amount) == "0.40" and payment.actor == "ada"
    assert AuditLog.objects.filter(worker=worker, action=AuditLog.Action.BONUS).exists()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"action": "reject", "reason": ""}, "needs feedback"),
        ({"action": "bonus", "amount": "lots", "reason": "x"}, "amount like 0.50"),
        ({"action": "bonus", "amount": "-1", "reason": "x"}, "more than 0"),
        ({"action": "bonus", "amount": "NaN", "reason": "x"}, "more than 0"),
        ({"action": "bonus", "amount": "0.5", "reason": ""}, "needs a reason"),
        ({"action": "block", "reason": ""}, "needs a reason"),
        ({"action": "delete"}, "Unknown action"),
        ({"action": "approve", "worker": "W000000000000"}, "No worker"),
    ],
)
def test_bad_worker_actions_say_why_and_change_nothing(ada, filled, data, message) -> None:
    worker = _submitted_worker(filled)
    data = {"worker": worker.pseudonym, **data}
    before = (
        list(Assignment.objects.values_list("pk", "status")),
        Payment.objects.count(),
        AuditLog.objects.count(),
        Participation.objects.filter(soft_blocked=True).count(),
    )
    page = _act(ada, filled, **data)
    assert message in page
    after = (
        list(Assignment.objects.values_list("pk", "status")),
        Payment.objects.count(),
        AuditLog.objects.count(),
        Participation.objects.filter(soft_blocked=True).count(),
    )
    assert after == before


def test_spot_check_shows_the_most_active_workers_answers(ada, filled) -> None:
    page = ada.get(reverse("dashboard:spotcheck", args=[filled.slug])).content.decode()
    busiest = (
        Judgment.objects.filter(item__campaign=filled)
        .values_list("worker__pseudonym", flat=True)
        .order_by("worker__pseudonym")
    )
    assert any(p in page for p in set(busiest))
    empathy = next(q for q in campaign_questions(filled) if q.key == "empathy")
    assert html.escape(empathy.text) in page  # the question as workers read it


def test_spot_check_shows_items_and_answers_in_words_not_python_reprs(ada, filled) -> None:
    page = html.unescape(
        ada.get(reverse("dashboard:spotcheck", args=[filled.slug])).content.decode()
    )
    assert "{'" not in page and "['" not in page and "':" not in page
    payload = filled.items.first().payload
    assert "<dt>response</dt>" in page and "<dt>context</dt>" in page
    assert f"<li>{payload['context'][1]}</li>" in page  # one line per turn
    questions = campaign_questions(filled)
    judged = Judgment.objects.filter(item__campaign=filled).first()
    question = next(q for q in questions if q.key == judged.question)
    label = dict(question.choices)[str(judged.value)]
    assert f"<dt>{question.text}</dt>" in page
    assert f"({label})" in page


def _page_queries(client, campaign) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("dashboard:campaign", args=[campaign.slug]))
    assert response.status_code == 200
    return len(queries)


def test_the_campaign_page_query_count_does_not_grow_with_judgments_or_workers(
    ada, filled, start_job
) -> None:
    start_job({"kind": "report"})
    before = _page_queries(ada, filled)
    judgments = Judgment.objects.filter(item__campaign=filled).count()
    filled.redundancy = 6
    filled.save(update_fields=["redundancy"])
    crowd_run(campaign=filled, workers=crowd_make(good=4, noisy=2, spammer=0), seed=9)
    assert Judgment.objects.filter(item__campaign=filled).count() > judgments
    start_job({"kind": "report"})
    assert _page_queries(ada, filled) == before


def test_the_worker_table_shows_those_failing_review_first_and_is_bounded(ada, filled) -> None:
    columns = ["worker_id", "pseudonym", "items", "passes"]
    rows = [[n, f"W{n:03d}", n, n % 10 != 0] for n in range(1, 121)]
    Job.objects.create(
        campaign=filled,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        result={"judgments": 0, "quality": {"columns": columns, "rows": rows}},
    )
    url = reverse("dashboard:campaign", args=[filled.slug])
    page = ada.get(url).content.decode()
    shown = [line.split('"')[1] for line in page.split("data-worker=")[1:]]
    failing = [f"W{n:03d}" for n in (120, 110, 100, 90, 80, 70, 60, 50, 40, 30, 20, 10)]
    assert shown[:12] == failing  # failing review first, the busiest of them first
    assert len(shown) == 50 and shown[12] == "W119"
    assert "show all" in page
    assert len(ada.get(url + "?workers=all").content.decode().split("data-worker=")) == 121


def _chat(campaign, key: str, author: str) -> None:
    situation = Situation.objects.create(
        campaign=campaign, author=author, emotion="proud", text=f"I ran a marathon ({key})."
    )
    dialogue = Dialogue.objects.create(campaign=campaign, key=key, situation=situation)
    for index, (speaker, text) in enumerate(
        [("speaker", "I finally ran a marathon!"), ("listener", "Wow, how did it feel?")]
    ):
        Utterance.objects.create(dialogue=dialogue, index=index, speaker=speaker, text=text)


def test_dialogues_export_in_parlai_format_split_by_author(ada, filled, start_job) -> None:
    for n in range(10):
        _chat(filled, f"conv-{n}", author=f"author-{n % 5}")
    start_job({"kind": "export", "what": "dialogues", "format": "parlai", "by_author": "on"})
    job = Job.objects.get(kind=Job.Kind.EXPORT)
    assert job.status == Job.Status.DONE, job.error
    assert sorted(job.files) == sorted(
        f"{filled.slug}_dialogues-{split}.txt" for split in ("train", "valid", "test")
    )
    texts = {}
    for name in job.files:
        url = reverse("dashboard:job_file", args=[filled.slug, job.pk, name])
        texts[name] = b"".join(ada.get(url).streaming_content).decode()
    episodes = sum(t.count("episode_done:True") for t in texts.values())
    assert episodes == 10
    assert all("text:" in t for t in texts.values() if t)


def test_the_worker_table_flags_pasted_chat_messages(ada, filled, start_job) -> None:
    writer = Worker.objects.create(provider=Worker.Provider.LOCAL, external_id="chat-writer")
    _chat(filled, "conv-p", author="a")
    dialogue = Dialogue.objects.get(key="conv-p")
    Utterance.objects.create(
        dialogue=dialogue,
        index=2,
        speaker="speaker",
        text="pasted",
        worker=writer,
        signals={"typing_ms": 300, "pastes": 1},
    )
    Utterance.objects.create(
        dialogue=dialogue,
        index=3,
        speaker="speaker",
        text="typed",
        worker=writer,
        signals={"typing_ms": 9000, "pastes": 0},
    )
    start_job({"kind": "report"})
    quality = Job.objects.get(kind=Job.Kind.REPORT).result["quality"]
    at = {name: i for i, name in enumerate(quality["columns"])}
    rows = {row[at["pseudonym"]]: row for row in quality["rows"]}
    row = rows[writer.pseudonym]
    assert (row[at["texts_written"]], row[at["texts_pasted"]]) == (2, 1)
    assert "paste" in row[at["flags"]]
    judges = Worker.objects.filter(judgments__item__campaign=filled).distinct()
    assert all(rows[w.pseudonym][at["texts_written"]] == 0 for w in judges)
    assert "paste" not in " ".join(str(rows[w.pseudonym][at["flags"]]) for w in judges)


def test_a_live_chat_campaign_counts_complete_conversations(researcher) -> None:
    campaign = CampaignFactory(
        owner=researcher,
        protocol="ssa_interactive",
        parameters={"models": ["generic-bot", "retrieval"], "conversations_per_model": 3},
    )
    for n, status in enumerate(["complete", "complete", "partial", "active"]):
        Dialogue.objects.create(campaign=campaign, key=f"c{n}", status=status)
    row = campaign_rows([campaign])[0]
    assert (row.done, row.needed) == (2, 6)
    ed = CampaignFactory(owner=researcher, protocol="empathetic_chat", parameters={})
    Dialogue.objects.create(campaign=ed, key="e1", status="complete")
    row = campaign_rows([ed])[0]
    assert (row.done, row.needed, row.eta_text) == (1, 0, "no target set")


def test_a_job_that_fails_in_the_request_shows_as_failed_not_as_a_server_error(
    ada, filled, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """Without a broker the job runs inside the POST: its failure is the job's, not a 500."""

    def broken(job, folder, progress):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(services, "report_build", broken)
    from evalsite.celery import app

    eager, app.conf.task_always_eager = app.conf.task_always_eager, True  # the embedded default
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = ada.post(
                reverse("dashboard:job_create", args=[filled.slug]),
                {"kind": "report"},
                follow=True,
            )
    finally:
        app.conf.task_always_eager = eager
    assert response.status_code == 200
    job = Job.objects.get(campaign=filled)
    assert job.status == Job.Status.FAILED and "the disk is full" in job.error
    status = ada.get(reverse("dashboard:job_status", args=[filled.slug, job.pk])).json()
    assert status["status"] == "failed"


def test_a_new_report_snapshot_deletes_all_but_the_two_newest_and_their_files(
    ada, filled, start_job
) -> None:
    """The snapshot before the newest stays: a page that loaded it just before the newest
    finished still gets its figures (CI saw a 404 for them when only the newest was kept)."""
    jobs = []
    for _ in range(3):
        start_job({"kind": "report"})
        jobs.append(Job.objects.filter(campaign=filled, kind=Job.Kind.REPORT).latest("pk"))
    first, previous, newest = jobs
    assert newest.status == Job.Status.DONE
    assert set(Job.objects.filter(campaign=filled, kind=Job.Kind.REPORT)) == {previous, newest}
    storage = shared_storage()
    assert not storage.exists(f"jobs/{filled.slug}/{first.pk}")
    for kept in (previous, newest):
        assert storage.listdir(f"jobs/{filled.slug}/{kept.pk}")[1]


def test_the_list_query_count_does_not_grow_with_the_number_of_campaigns(ada, researcher) -> None:
    def list_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert ada.get(reverse("dashboard:campaigns")).status_code == 200
        return len(queries)

    CampaignFactory(
        owner=researcher, protocol="empathetic_chat", status="live", parameters=ED_DEFAULTS
    )
    CampaignFactory(owner=researcher, status="live")
    before = list_queries()
    for _ in range(3):
        CampaignFactory(
            owner=researcher, protocol="empathetic_chat", status="live", parameters=ED_DEFAULTS
        )
        CampaignFactory(owner=researcher, status="live")
    assert list_queries() == before


def test_a_block_is_audited_with_its_campaign_once(ada, filled) -> None:
    worker = _submitted_worker(filled)  # a local worker: no provider to tell
    asked = _act(ada, filled, worker=worker.pseudonym, action="block", reason="copy-paste")
    assert f"Block {worker.pseudonym}?" in asked and not AuditLog.objects.exists()
    page = _act(
        ada, filled, worker=worker.pseudonym, action="block", reason="copy-paste", confirmed="1"
    )
    assert "is blocked" in page
    again = _act(
        ada, filled, worker=worker.pseudonym, action="block", reason="again", confirmed="1"
    )
    assert "already blocked" in again
    block = AuditLog.objects.get(worker=worker, action=AuditLog.Action.BLOCK)
    assert (block.campaign, block.actor, block.detail) == (
        filled,
        "ada",
        "copy-paste (ada's studies)",
    )


def test_a_job_killed_mid_run_is_marked_failed_after_a_while_and_can_still_finish(
    filled,
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    stuck = Job.objects.create(campaign=filled, kind=Job.Kind.REPORT, status=Job.Status.RUNNING)
    fresh = Job.objects.create(campaign=filled, kind=Job.Kind.REPORT, status=Job.Status.QUEUED)
    Job.objects.filter(pk=stuck.pk).update(created_at=timezone.now() - timedelta(minutes=16))
    assert services.jobs_expire() == 1
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == Job.Status.FAILED and "did not finish" in stuck.error
    assert fresh.status == Job.Status.QUEUED
    assert services.job_run(stuck.pk)  # a late redelivery still does the work
    stuck.refresh_from_db()
    assert stuck.status == Job.Status.DONE


def test_a_provider_error_part_way_keeps_what_was_approved_and_says_what_was_not(
    ada, filled, monkeypatch
) -> None:
    from django.db.models import Count

    from evalsite.errors import Conflict

    busiest = (
        Assignment.objects.filter(campaign=filled, status=Assignment.Status.SUBMITTED)
        .values("worker")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .first()
    )
    assert busiest is not None and busiest["n"] >= 2
    worker = Worker.objects.get(pk=busiest["worker"])
    approved = []

    def provider_approve(*, publication, assignment, actor, feedback):
        if approved:
            raise Conflict("the provider is down")
        Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.APPROVED)
        approved.append(assignment.pk)

    monkeypatch.setattr(services, "_publication", lambda campaign, worker: object())
    monkeypatch.setattr(services, "assignment_approve", provider_approve)
    page = _act(ada, filled, worker=worker.pseudonym, action="approve")
    assert f"Approved 1 of {busiest['n']} assignment(s)" in page
    assert "the provider is down" in page
    statuses = list(
        Assignment.objects.filter(campaign=filled, worker=worker).values_list("status", flat=True)
    )
    assert statuses.count(Assignment.Status.APPROVED) == 1
    assert statuses.count(Assignment.Status.SUBMITTED) == busiest["n"] - 1


def test_personal_links_download_as_csv_and_open_the_study(ada, researcher, client) -> None:
    campaign = CampaignFactory(owner=researcher, open_links=False)
    page = ada.get(reverse("dashboard:campaign", args=[campaign.slug]))
    assert b"Personal links" in page.content and b"only with the signed link" in page.content
    url = reverse("dashboard:worker_links", args=[campaign.slug])
    response = ada.post(url, {"workers": "alice bob", "count": "3"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [r["worker_id"] for r in rows[:2]] == ["alice", "bob"] and len(rows) == 5
    assert rows[0]["link"].startswith("http://testserver/task/")
    bad = ada.post(url, {"workers": "", "count": "²"}, follow=True)
    assert b"whole number" in bad.content


def test_the_campaign_page_links_its_webhooks_and_the_api_keys(ada, filled) -> None:
    page = ada.get(reverse("dashboard:campaign", args=[filled.slug])).content.decode()
    assert reverse("webhooks:list", args=[filled.slug]) in page
    assert reverse("apikeys:list") in page


def test_the_report_form_offers_and_passes_the_label_aggregation(ada, filled, start_job) -> None:
    page = ada.get(reverse("dashboard:campaign", args=[filled.slug])).content.decode()
    assert '<select name="aggregate">' in page and 'value="ds">Dawid–Skene (1979)' in page
    start_job({"kind": "report", "aggregate": "ds"})
    # (With a broker the page itself may also queue a report, by majority vote.)
    assert Job.objects.filter(kind=Job.Kind.REPORT, options={"aggregate": "ds"}).count() == 1
    response = start_job({"kind": "report", "aggregate": "vote"})
    assert "Aggregate labels by majority, ds, mace" in response.content.decode()
    assert not Job.objects.filter(options__aggregate="vote").exists()
