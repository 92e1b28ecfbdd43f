"""Erasure reaches every copy of a forgotten worker's data (reports and exports built before,
ACUTE-Eval items made of their chats, webhook payloads, logs), and a researcher's forget
reaches only their own studies (``worker_forget``'s scope; the admin's ``forget`` command
reaches all, with an audit entry in each)."""

import logging
import logging.config
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import models
from django.db.models.functions import Cast
from django.test import Client

from annotation.items_acute import acute_items_add, conversations_from_campaign
from annotation.models import AuditLog, Campaign, Dialogue, Item, Utterance, Worker
from annotation.services import WITHDRAWN
from api.keys import api_key_create
from dashboard.erasure import ERASED
from dashboard.models import Job
from dashboard.services import job_run, job_start
from evalsite.observability import ID_REDACTED
from tests.annotation.test_withdrawal import _judge
from tests.factories import CampaignFactory, ItemFactory, WorkerFactory
from webhooks import events
from webhooks.models import WebhookDelivery, WebhookEndpoint

SECRET_ID = "EXT-COPIES-9042"
PHRASE = "my grandmother's blue bicycle qvzx"


def _chat(campaign: Campaign, key: str, model: str, worker: Worker | None, text: str) -> None:
    """A complete four-turn chat with ``model``; ``worker`` writes the human turns."""
    dialogue = Dialogue.objects.create(
        campaign=campaign, key=key, status=Dialogue.Status.COMPLETE, metadata={"model": model}
    )
    for index in range(4):
        human = index % 2 == 0
        Utterance.objects.create(
            dialogue=dialogue,
            index=index,
            speaker="user" if human else "bot",
            worker=worker if human else None,
            text=f"{text} {index}" if human else f"reply {index}",
        )


def _traces(needles: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every (model, column) whose text, cast to text in the database, holds a needle."""
    found = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if not isinstance(field, models.CharField | models.TextField | models.JSONField):
                continue
            rows = model._default_manager.annotate(_text=Cast(field.attname, models.TextField()))
            for needle in needles:
                if rows.filter(_text__icontains=needle).exists():
                    found.append((model.__name__, field.attname))
    return found


def _files_holding(folder: Path, needles: tuple[str, ...]) -> list[str]:
    return [
        str(path)
        for path in folder.rglob("*")
        if path.is_file() and any(n.encode() in path.read_bytes() for n in needles)
    ]


@pytest.fixture
def shared(settings, tmp_path) -> Path:
    """The shared storage in a folder of this test."""
    folder = tmp_path / "files"
    settings.STORAGES = {
        **settings.STORAGES,
        "shared": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(folder)},
        },
    }
    return folder


def test_forget_erases_exports_reports_acute_items_webhook_payloads_and_log_lines(
    db, shared, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.INFO)
    likert = CampaignFactory(withdrawal=Campaign.Withdrawal.DROP)
    ItemFactory.create_batch(4, campaign=likert)
    chats = CampaignFactory(protocol="ssa_interactive")
    # The worker arrives by their link (the id in the URL a request log names)...
    assert Client().get(f"/task/{likert.slug}/?workerId={SECRET_ID}").status_code == 200
    worker = Worker.objects.get(external_id=SECRET_ID)
    endpoint = WebhookEndpoint.objects.create(
        campaign=likert, url="https://hooks.example/x", secret="s", events=["assignment.submitted"]
    )
    assignment, _ = _judge(likert, worker, n=2)
    events.assignment_submitted(assignment=assignment)
    # ...chats with two models, and their chats become ACUTE-Eval items elsewhere.
    _chat(chats, "c1", "m1", worker, PHRASE)
    _chat(chats, "c2", "m2", WorkerFactory(), "someone else")
    conversations, _ = conversations_from_campaign(campaign=chats)
    acute_items_add(slug="acute-copies", conversations=conversations, pairs_per_matchup=1)
    acute = Campaign.objects.get(slug="acute-copies")
    assert PHRASE in str(Item.objects.get(campaign=acute).payload)
    jobs = [
        job_start(campaign=likert, kind=Job.Kind.REPORT),
        job_start(campaign=likert, kind=Job.Kind.EXPORT, options={"format": "csv"}),
        job_start(
            campaign=chats, kind=Job.Kind.EXPORT, options={"what": "dialogues", "format": "jsonl"}
        ),
        job_start(
            campaign=acute, kind=Job.Kind.EXPORT, options={"what": "study", "format": "yaml"}
        ),
    ]
    for job in jobs:
        assert job_run(job.pk), Job.objects.get(pk=job.pk).error
    needles = (SECRET_ID, PHRASE)
    assert _files_holding(shared, needles), "the setup wrote the phrase into no file"
    assert WebhookDelivery.objects.filter(payload__data__worker=worker.pseudonym).exists()

    with django_capture_on_commit_callbacks(execute=True):  # the files go once it commits
        call_command("forget", worker.pseudonym, "--by", "admin", stdout=StringIO())

    assert _traces(needles) == []
    assert _files_holding(shared, needles) == []
    # Nothing the worker's requests, the jobs or the forget logged names them.
    assert not any(n in caplog.text for n in needles)
    assert all(
        (job.status, job.error, job.files) == (Job.Status.FAILED, ERASED, [])
        for job in Job.objects.filter(pk__in=[j.pk for j in jobs])
    )
    payload = endpoint.deliveries.get().payload["data"]
    assert payload["worker"] == WITHDRAWN and worker.pseudonym not in str(payload)
    # The ACUTE item stays (judgments on it stay valid); only the worker's words left it.
    turns = Item.objects.get(campaign=acute).payload
    assert WITHDRAWN in str(turns) and "reply 1" in str(turns)


def test_log_lines_name_no_worker_id(settings, capsys):
    logging.config.dictConfig(settings.LOGGING)
    logging.getLogger("uvicorn.access").warning(
        '%s - "%s %s HTTP/%s" %d', "10.0.0.1", "GET", f"/task/s/?workerId={SECRET_ID}&k=1", 1, 200
    )
    logging.getLogger("django.server").warning(f"GET /task/s/?PROLIFIC_PID={SECRET_ID} 200")
    err = capsys.readouterr().err
    assert SECRET_ID not in err and err.count(f"={ID_REDACTED}") == 2


@pytest.fixture
def two_researchers(db):
    """Ada's and Bob's Likert studies (drop policy), one worker in both, who chatted in
    Ada's."""
    ada = User.objects.create_user("ada", is_staff=True)
    bob = User.objects.create_user("bob", is_staff=True)
    worker = WorkerFactory(external_id=SECRET_ID)
    studies = {}
    for owner in (ada, bob):
        campaign = CampaignFactory(owner=owner, withdrawal=Campaign.Withdrawal.DROP)
        ItemFactory.create_batch(3, campaign=campaign)
        _judge(campaign, worker, n=2)
        studies[owner.username] = campaign
    _chat(studies["ada"], "c1", "m1", worker, PHRASE)
    return ada, bob, worker, studies


def _soft_blocked(campaign: Campaign, worker: Worker) -> bool:
    return campaign.participations.filter(worker=worker, soft_blocked=True).exists()


def test_a_researchers_forget_leaves_another_researchers_studies_alone(two_researchers):
    ada, bob, worker, studies = two_researchers
    key = api_key_create(user=bob, name="t")[1]
    response = Client().post(
        f"/api/v1/campaigns/{studies['bob'].slug}/workers/{worker.pseudonym}/forget",
        data={},
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 200, response.content

    worker.refresh_from_db()
    assert worker.external_id == SECRET_ID  # Ada's study still knows them by it
    assert Utterance.objects.filter(worker=worker, text__startswith=PHRASE).count() == 2
    assert not _soft_blocked(studies["ada"], worker)
    assert _soft_blocked(studies["bob"], worker)
    audited = AuditLog.objects.filter(action=AuditLog.Action.FORGET)
    assert list(audited.values_list("campaign__slug", flat=True)) == [studies["bob"].slug]


def test_an_admins_forget_reaches_both_researchers_studies_with_an_audit_entry_in_each(
    two_researchers,
):
    _, _, worker, studies = two_researchers
    call_command("forget", worker.pseudonym, "--by", "admin", stdout=StringIO())

    worker.refresh_from_db()
    assert worker.external_id != SECRET_ID
    assert not Utterance.objects.filter(text__startswith=PHRASE).exists()
    assert all(_soft_blocked(campaign, worker) for campaign in studies.values())
    audited = AuditLog.objects.filter(action=AuditLog.Action.FORGET, actor="admin")
    assert set(audited.values_list("campaign__slug", flat=True)) == {
        c.slug for c in studies.values()
    }
