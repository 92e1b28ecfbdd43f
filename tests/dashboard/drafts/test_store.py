"""The wizard's drafts live in ``dashboard.Draft`` rows: no files, no lost writes, expiry."""

import json
import threading
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import close_old_connections, connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign
from dashboard.drafts import (
    DRAFT_KEPT_FOR,
    ItemsUpload,
    draft_create,
    draft_go_live,
    draft_items_finish,
    draft_items_import,
    draft_pending,
    draft_state,
    drafts_expire,
)
from dashboard.drafts.store import draft_state_update
from dashboard.models import Draft
from dashboard.tasks import jobs_expire
from evalsite.celery import app
from evalsite.errors import Conflict
from modelhub.models import GenerationJob
from modelhub.services import endpoint_register, generation_job_run
from tests.factories import CampaignFactory

CONTEXTS = "\n".join(
    json.dumps({"id": f"c{n}", "context": [f"Turn {n}?"], "reference": "ok"}) for n in range(1, 4)
)


def upload(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode(), content_type="application/octet-stream")


@pytest.fixture
def bots(db):
    return [
        endpoint_register(name="generic-bot", backend="generic_bot"),
        endpoint_register(name="gold", backend="gold"),
    ]


@pytest.fixture
def eager():
    """Let the models answer at once, in this process, even with a broker configured."""
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


@pytest.mark.django_db
def test_a_waiting_upload_survives_across_requests_without_a_data_dir(
    settings, tmp_path, researcher, bots, django_capture_on_commit_callbacks
) -> None:
    settings.DATA_DIR = tmp_path / "nowhere"
    first, second = Client(), Client()  # two browsers' requests, served by any process
    first.force_login(researcher)
    first.post(reverse("dashboard:wizard"), {"protocol": "likert", "slug": "ratings"})
    draft = Campaign.objects.get(slug="ratings")
    with django_capture_on_commit_callbacks(execute=False):
        response = first.post(
            reverse("dashboard:wizard_items", args=[draft.slug]),
            {"contexts": upload("mtb.jsonl", CONTEXTS), "models": ["generic-bot", "gold"]},
        )
    assert response.status_code == 302
    row = Draft.objects.get(campaign=draft)
    assert row.owner == researcher and row.state["pending"]["contexts"] == 3

    for job in GenerationJob.objects.all():  # what the inference worker does
        generation_job_run(job_id=job.pk)
    second.force_login(researcher)
    status = second.get(reverse("dashboard:wizard_status", args=[draft.slug])).json()
    assert status["pending"] and status["done"]
    done = second.post(
        reverse("dashboard:wizard_pending", args=[draft.slug]), {"action": "finish"}, follow=True
    )
    assert "Added 6 item(s)." in [str(m) for m in done.context["messages"]]
    assert draft.items.count() == 6
    assert draft_pending(draft) is None and Draft.objects.get(campaign=draft).upload == ""
    assert not settings.DATA_DIR.exists()  # nothing was written under DATA_DIR


@pytest.mark.django_db
def test_going_live_removes_the_wizards_draft_row(researcher) -> None:
    draft = draft_create(protocol="likert", slug="ratings", name="", owner=researcher)
    draft_items_import(
        campaign=draft,
        upload=ItemsUpload(
            items=upload("i.jsonl", json.dumps({"key": "a", "payload": _likert_payload()}))
        ),
    )
    assert Draft.objects.filter(campaign=draft).exists()
    draft_go_live(campaign=draft, actor="ada")
    assert draft.status == Campaign.Status.LIVE
    assert not Draft.objects.filter(campaign=draft).exists()


def _likert_payload() -> dict:
    return {"context": ["Hi"], "response": "Hello!", "model": "m"}


@pytest.mark.django_db
def test_drafts_untouched_for_the_keeping_time_or_no_longer_drafts_expire(researcher) -> None:
    fresh, stale, launched = (
        CampaignFactory(slug=slug, status=Campaign.Status.DRAFT, owner=researcher)
        for slug in ("fresh", "stale", "launched")
    )
    for campaign in (fresh, stale, launched):
        draft_state_update(campaign=campaign, changes={"note": campaign.slug})
    now = timezone.now()
    Draft.objects.filter(campaign=stale).update(
        updated_at=now - DRAFT_KEPT_FOR - timedelta(minutes=1)
    )
    Campaign.objects.filter(pk=launched.pk).update(status=Campaign.Status.LIVE)

    assert drafts_expire(now=now) == 2
    assert list(Draft.objects.values_list("campaign__slug", flat=True)) == ["fresh"]
    assert Campaign.objects.count() == 3  # the campaigns themselves stay
    assert draft_state(stale) == {} and draft_state(fresh) == {"note": "fresh"}
    assert drafts_expire(now=now) == 0
    assert jobs_expire() == {"jobs_failed": 0, "drafts_expired": 0}  # the housekeeping task


@pytest.mark.django_db
def test_a_state_update_merges_and_none_removes_a_key() -> None:
    campaign = CampaignFactory(status=Campaign.Status.DRAFT)
    draft_state_update(campaign=campaign, changes={"a": 1, "b": 2})
    assert draft_state_update(campaign=campaign, changes={"a": None, "c": 3}) == {"b": 2, "c": 3}


def _together(n: int, work) -> list[BaseException | object]:
    """Run ``work(i)`` in ``n`` threads released at once; return each result or exception."""
    barrier = threading.Barrier(n)
    results: list[BaseException | object] = [None] * n

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:  # reported by the caller
            results[i] = exc
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_updates_of_one_draft_lose_no_field_on_postgresql() -> None:
    campaign = CampaignFactory(status=Campaign.Status.DRAFT)
    rounds = 5

    def work(i: int) -> None:
        for r in range(rounds):
            draft_state_update(campaign=campaign, changes={f"t{i}-{r}": r})

    results = _together(8, work)
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert draft_state(campaign) == {f"t{i}-{r}": r for i in range(8) for r in range(rounds)}
    assert Draft.objects.filter(campaign=campaign).count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_finishes_add_the_items_once_on_postgresql(researcher, bots, eager) -> None:
    draft = draft_create(protocol="likert", slug="ratings", name="", owner=researcher)
    outcome = draft_items_import(
        campaign=draft,
        upload=ItemsUpload(contexts=upload("c.jsonl", CONTEXTS), models=["generic-bot", "gold"]),
    )
    assert outcome.jobs and draft_pending(draft).done

    results = _together(4, lambda i: draft_items_finish(campaign=draft))
    added = [r.added for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, Conflict)]
    assert added == [6] and len(refused) == 3, results
    assert draft.items.count() == 6 and draft_pending(draft) is None
