"""Database overload is answered 503 + Retry-After, never 500 (evalsite.overload).

The view-level tests make the database "fail" by patching a service to raise Django's
OperationalError. The PostgreSQL test overloads a real server: gunicorn with a pool of one
connection, held by a submission blocked on a table lock, so the next request cannot get a
connection within the pool's timeout.
"""

from __future__ import annotations

import html
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import psycopg_pool
import pytest
from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.test import Client
from django.urls import reverse

from annotation.models import Judgment
from evalsite.overload import is_overload
from tests.factories import CampaignFactory, ItemFactory

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ANSWERS = {"empathy": "4", "relevance": "3", "fluency": "5"}


def task_url(campaign, worker: str) -> str:
    return reverse("annotation:task", args=[campaign.slug]) + f"?workerId={worker}"


def submit_url(campaign, worker: str) -> str:
    return reverse("annotation:task_submit", args=[campaign.slug]) + f"?workerId={worker}"


def hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert match, f"no {name} in the page"
    return html.unescape(match.group(1))


def resend_form(page: str) -> tuple[str, dict[str, str]]:
    """The action and fields of a 503 page's resend form."""
    form = re.search(
        r'<form method="post" action="([^"]+)" id="resend-form">(.*?)</form>', page, re.S
    )
    assert form, "no resend form in the page"
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(2))
    return html.unescape(form.group(1)), {k: html.unescape(v) for k, v in fields}


def busy(*args, **kwargs):
    raise OperationalError("connection pool 'pool-1' timed out")


def test_an_overloaded_answer_form_gets_a_page_that_sends_the_same_answers_again(
    client, campaign, monkeypatch
):
    page = client.get(task_url(campaign, "w1")).content.decode()
    sent = {"token": hidden(page, "token"), "item": hidden(page, "item"), **ANSWERS}
    with monkeypatch.context() as patch:
        patch.setattr("workerpages.views.judgment_submit", busy)
        response = client.post(submit_url(campaign, "w1"), sent)
    assert response.status_code == 503
    assert response["Retry-After"] == str(settings.RETRY_AFTER_SECONDS)
    assert response["Content-Type"].startswith("text/html")
    assert "frame-ancestors" in response["Content-Security-Policy"]
    assert not Judgment.objects.exists()
    action, fields = resend_form(response.content.decode())
    assert action == submit_url(campaign, "w1") and fields == sent
    again = client.post(action, fields)
    assert again.status_code == 302
    assert client.post(action, fields).status_code == 302  # a second resend stores nothing
    assert Judgment.objects.filter(item_id=sent["item"]).count() == len(ANSWERS)


def test_an_overloaded_json_client_gets_json_with_retry_after(client, campaign, monkeypatch):
    page = client.get(task_url(campaign, "w1")).content.decode()
    body = {"token": hidden(page, "token"), "item": hidden(page, "item"), "answers": ANSWERS}
    monkeypatch.setattr("workerpages.views.judgment_submit", busy)
    response = client.post(submit_url(campaign, "w1"), body, content_type="application/json")
    assert response.status_code == 503
    assert response["Retry-After"] == str(settings.RETRY_AFTER_SECONDS)
    assert response.json() == {
        "ok": False,
        "error": f"The server is busy. Please try again in {settings.RETRY_AFTER_SECONDS} seconds.",
        "retry_after": settings.RETRY_AFTER_SECONDS,
        "overloaded": True,
    }


def test_an_overloaded_task_page_reloads_itself_and_resends_nothing(client, campaign, monkeypatch):
    monkeypatch.setattr("workerpages.views.worker_visit", busy)
    response = client.get(task_url(campaign, "w1"))
    assert response.status_code == 503 and response["Retry-After"]
    page = response.content.decode()
    assert "data-reload" in page and 'http-equiv="refresh"' in page
    assert 'id="resend-form"' not in page


def test_an_overloaded_post_elsewhere_is_not_resent_by_itself(db, client, monkeypatch):
    monkeypatch.setattr("django.contrib.auth.backends.ModelBackend.authenticate", busy)
    response = client.post(reverse("admin:login"), {"username": "a", "password": "b"})
    assert response.status_code == 503 and response["Retry-After"]
    page = response.content.decode()
    assert 'id="resend-form"' not in page and "data-reload" not in page
    assert "may not have been carried out" in page


def failing_session_save(get_response):
    """A middleware whose response step meets the overloaded database (like a session save)."""

    def middleware(request):
        get_response(request)
        raise OperationalError("sorry, too many clients already")

    return middleware


def test_overload_raised_in_another_middleware_is_503_not_500(db, campaign, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.test_overload.failing_session_save"]
    client = Client(raise_request_exception=False)
    response = client.get(task_url(campaign, "w1"))
    assert response.status_code == 503 and response["Retry-After"]


def test_other_errors_stay_500(client, campaign, monkeypatch):
    def bug(*args, **kwargs):
        raise ValueError("a bug, not overload")

    monkeypatch.setattr("workerpages.views.worker_visit", bug)
    response = Client(raise_request_exception=False).get(task_url(campaign, "w1"))
    assert response.status_code == 500 and "Retry-After" not in response


@pytest.mark.parametrize(
    ("cause", "overload"),
    [
        (psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec"), True),
        (psycopg.OperationalError("connection failed: server closed the connection"), True),
        (psycopg.errors.TooManyConnections("sorry, too many clients already"), True),
        (psycopg.errors.DeadlockDetected("deadlock detected"), True),
        (psycopg.errors.AdminShutdown("terminating connection"), True),
        (sqlite3.OperationalError("database is locked"), True),
        (psycopg.errors.ObjectInUse("cannot CREATE INDEX: pending trigger events"), False),
        (sqlite3.OperationalError("no such table: annotation_item"), False),
    ],
)
def test_only_transient_database_errors_count_as_overload(cause, overload):
    try:
        raise OperationalError(str(cause)) from cause
    except OperationalError as exc:
        assert is_overload(exc) is overload
    assert not is_overload(ValueError("a bug"))


# -- a real server whose pool is exhausted (PostgreSQL) ---------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def tiny_pool_server(tmp_path) -> Iterator[str]:
    """gunicorn (deploy/gunicorn.conf.py), one process, a pool of one connection, 0.5 s wait."""
    db = connection.settings_dict
    port = free_port()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "REDIS_", "EVALSITE_"))
    }
    env.update(
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        EVALSITE_DATA_DIR=str(tmp_path),
        EVALSITE_CACHE_PREFIX=os.environ["EVALSITE_CACHE_PREFIX"],  # this run's cache keys
        EVALSITE_BIND=f"127.0.0.1:{port}",
        EVALSITE_DB_POOL_MIN="1",
        EVALSITE_DB_POOL_MAX="1",
        EVALSITE_DB_POOL_TIMEOUT="0.5",
        EVALSITE_RETRY_AFTER="7",
        EVALSITE_TASKS_INLINE="1",  # no broker here: this test is about the database pool
        WEB_CONCURRENCY="1",
    )
    log = (tmp_path / "web.log").open("wb")
    server = subprocess.Popen(
        [str(BIN / "gunicorn"), "-c", "deploy/gunicorn.conf.py", "evalsite.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(base + "/health/", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise AssertionError(
                "the web server did not start: " + (tmp_path / "web.log").read_text()
            )
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def waiting_on_a_lock() -> int:
    """Backends of this database waiting for a lock (fresh statistics every call)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_request_finding_the_pool_exhausted_gets_503_and_its_resend_stores_once(
    tiny_pool_server,
):
    campaign = CampaignFactory(redundancy=2)
    ItemFactory.create_batch(4, campaign=campaign)
    web = httpx.Client(base_url=tiny_pool_server, timeout=30, follow_redirects=False)
    forms = {}
    for worker in ("w1", "w2"):
        page = web.get(task_url(campaign, worker))
        assert page.status_code == 200
        forms[worker] = {"token": hidden(page.text, "token"), "item": hidden(page.text, "item")}
        forms[worker].update(ANSWERS)
    with ThreadPoolExecutor(1) as thread:
        with transaction.atomic():
            # w1's submission takes the pool's only connection and waits on this lock.
            with connection.cursor() as cursor:
                cursor.execute(f'LOCK TABLE "{Judgment._meta.db_table}" IN EXCLUSIVE MODE')
            first = thread.submit(web.post, submit_url(campaign, "w1"), data=forms["w1"])
            while not waiting_on_a_lock():
                assert not first.done(), first.result().text
                time.sleep(0.05)
            busy_page = web.post(submit_url(campaign, "w2"), data=forms["w2"])
        assert first.result().status_code == 302  # the lock is gone: w1's answer is stored
    assert busy_page.status_code == 503 and busy_page.headers["Retry-After"] == "7"
    assert not Judgment.objects.filter(worker__external_id="w2").exists()
    action, fields = resend_form(busy_page.text)
    assert fields == forms["w2"]
    assert web.post(action, data=fields).status_code == 302  # the page's own resend
    assert web.post(action, data=fields).status_code == 302  # and once more: nothing new
    assert web.post(submit_url(campaign, "w1"), data=forms["w1"]).status_code == 302
    for worker in ("w1", "w2"):
        stored = Judgment.objects.filter(worker__external_id=worker)
        assert sorted(stored.values_list("question", flat=True)) == sorted(ANSWERS)
        assert {str(j.item_id) for j in stored} == {forms[worker]["item"]}
