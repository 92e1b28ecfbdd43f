"""Redis is optional to a request (issue #35): when it is down, the cache is served from each
process's memory and a job a request accepted is kept in PostgreSQL until the broker is back.

The fault test runs the production web server (compose's command and environment, as
tests/test_deploy.py does) and a Celery worker against a private redis-server (broker, result
backend, cache and channel layer), puts open-link workers and a researcher to work, kills
Redis (SIGKILL) for ``EVALSITE_OUTAGE_S`` seconds (15 by default, to fit CI's time; the issue
measured 160 s and asks for 60), restarts it on the same port with its append-only file as
compose's Redis has, and checks that no request was answered 500 and that every job the
researcher started ran.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from annotation.models import Campaign
from annotation.services import campaign_create, campaign_set_status, items_add
from dashboard.models import Job
from dashboard.services import jobs_dispatch
from evalsite import cache as evalsite_cache
from evalsite.cache import OutageTolerantRedisCache
from evalsite.celery import app
from evalsite.outbox import SWEEP_AFTER
from tests.factories import CampaignFactory
from tests.test_deploy import (
    Browser,
    Processes,
    compose,
    free_port,
    get_json,
    hidden,
    interpolate,
    wait_until,
)

OUTAGE_S = float(os.environ.get("EVALSITE_OUTAGE_S", "15"))


class PrivateRedis:
    """A redis-server of the test's own on a free port, with an append-only file (as
    compose's Redis), so that a restart keeps what was queued before the kill."""

    def __init__(self, folder: Path) -> None:
        executable = shutil.which("redis-server")
        if executable is None:
            pytest.skip("needs redis-server")
        self.command = [executable, "--bind", "127.0.0.1", "--save", ""]
        self.command += ["--appendonly", "yes", "--dir", str(folder)]
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [*self.command, "--port", str(self.port)], stdout=subprocess.DEVNULL
        )
        wait_until(self._answers, 10, "redis-server")

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)

    def _answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=0.2).ping())
        except redis.RedisError:
            return False


@pytest.fixture
def private_redis(tmp_path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    if server.process is not None and server.process.poll() is None:
        server.kill()


def outage_cache(server: PrivateRedis) -> OutageTolerantRedisCache:
    options = {"socket_connect_timeout": 0.25, "socket_timeout": 0.5}
    return OutageTolerantRedisCache(server.url + "/0", {"OPTIONS": options, "KEY_PREFIX": "t"})


# -- the cache -----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_cache_counts_in_process_memory_while_redis_is_down_and_logs_the_outage_once(
    private_redis, caplog, monkeypatch
):
    monkeypatch.setattr(evalsite_cache, "BREAKER_SECONDS", 0.5)
    cache = outage_cache(private_redis)
    cache.set("plan", "in redis", 60)
    private_redis.kill()
    caplog.set_level(logging.WARNING, logger="evalsite.cache")
    started = time.monotonic()
    assert cache.get("plan") is None  # what Redis held misses
    assert cache.add("hits", 0, 60) and [cache.incr("hits") for _ in range(3)] == [1, 2, 3]
    for _ in range(200):  # a burst of requests: the breaker keeps them off the dead server
        cache.get("other")
    assert time.monotonic() - started < 1.0
    assert caplog.text.count("unavailable") == 1
    private_redis.start()
    time.sleep(0.6)  # the breaker lets the next call try Redis
    assert cache.get("plan") == "in redis"  # Redis again, with what its file kept
    assert "answers again" in caplog.text


@pytest.mark.slow
def test_the_cache_keeps_a_bounded_number_of_keys_while_redis_is_down(private_redis, monkeypatch):
    monkeypatch.setattr(evalsite_cache, "FALLBACK_KEYS", 100)
    cache = outage_cache(private_redis)
    private_redis.kill()
    for n in range(1000):
        cache.set(f"key-{n}", n, 60)
    assert 0 < len(cache.fallback._cache) <= 100  # type: ignore[attr-defined]
    assert cache.get("key-999") == 999  # the newest is kept


# -- the job outbox ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_sweep_sends_a_job_the_broker_did_not_take_and_leaves_young_ones_to_their_request():
    campaign = CampaignFactory()
    old = Job.objects.create(campaign=campaign, kind=Job.Kind.REPORT, options={})
    young = Job.objects.create(campaign=campaign, kind=Job.Kind.REPORT, options={})
    sent = Job.objects.create(campaign=campaign, kind=Job.Kind.REPORT, options={})
    Job.objects.filter(pk__in=[old.pk, sent.pk]).update(
        created_at=timezone.now() - SWEEP_AFTER - timedelta(seconds=1)
    )
    Job.objects.filter(pk=sent.pk).update(dispatched_at=timezone.now())
    if not app.conf.task_always_eager:
        app.control.purge()
    assert jobs_dispatch() == 1
    assert Job.objects.get(pk=old.pk).dispatched_at is not None
    assert Job.objects.get(pk=young.pk).dispatched_at is None
    if not app.conf.task_always_eager:
        app.control.purge()  # no worker here runs what the sweep sent


def test_beat_runs_both_job_sweeps_every_minute():
    schedule = {entry["task"]: entry["schedule"] for entry in app.conf.beat_schedule.values()}
    assert schedule["dashboard.tasks.jobs_dispatch"] <= 60
    assert schedule["modelhub.tasks.jobs_dispatch"] <= 60


# -- the fault test ------------------------------------------------------------------------


class Load:
    """Threads that keep making requests until stopped; every status is counted, and every
    503 must carry Retry-After."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.statuses: Counter[int] = Counter()
        self.bad: list[str] = []  # 500s and 503s without Retry-After, with their page
        self.jobs_accepted = 0
        self._lock = threading.Lock()

    def note(self, status: int, what: str, page: str) -> None:
        with self._lock:
            self.statuses[status] += 1
            if status >= 500 and status != 503:
                self.bad.append(f"{status} {what}: {page[:300]}")

    def thread(self, target: Callable[..., None], *args: object) -> threading.Thread:
        """A thread running ``target``; an error that ends it (a request timed out) fails
        the test instead of stopping its load unseen."""

        def run() -> None:
            try:
                target(*args)
            except Exception as exc:  # noqa: BLE001 -- reported by the test's assertion
                self.bad.append(f"{target.__name__} stopped: {exc!r}")

        return threading.Thread(target=run)

    def workers(self, base: str, slug: str, name: str) -> None:
        n = 0
        while not self.stop.is_set():
            worker, query = Browser(base), f"?workerId={name}-{n}"
            status, _, page = worker.request(f"/task/{slug}/{query}")
            self.note(status, "task page", page)
            if status == 200 and 'name="token"' in page:
                keys = set(re.findall(r'type="radio" name="(\w+)"', page))
                form = {"token": hidden(page, "token"), "item": hidden(page, "item")}
                form |= {key: "4" for key in keys}
                status, _, page = worker.request(f"/task/{slug}/submit/{query}", form)
                self.note(status, "answer", page)
            n += 1

    def researcher(self, researcher: Browser, slug: str) -> None:
        while not self.stop.is_set():
            status, _, page = researcher.request(f"/dashboard/c/{slug}/")
            self.note(status, "dashboard", page)
            form = {"csrfmiddlewaretoken": researcher.cookies["csrftoken"], "kind": "report"}
            status, _, page = researcher.request(f"/dashboard/c/{slug}/jobs/", form)
            self.note(status, "report job", page)
            if status != 200:
                self.bad.append(f"report job {status}: {page[:300]}")
            with self._lock:
                self.jobs_accepted += status == 200
            self.stop.wait(3)


def _stack_env(redis_url: str, tmp_path: Path, port: int) -> dict[str, str]:
    """compose's web environment, pointed at the test database and the private Redis."""
    db = connection.settings_dict
    given = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "POSTGRES_PASSWORD": "unused-here",
        "WEB_CONCURRENCY": "1",
    }
    environment = {
        k: interpolate(str(v), given)
        for k, v in compose()["services"]["web"]["environment"].items()
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "EVALSITE_"))}
    return {
        **base,
        **environment,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "CELERY_BROKER_URL": redis_url + "/0",
        "CELERY_RESULT_BACKEND": redis_url + "/1",
        "REDIS_URL": redis_url + "/2",
        "EVALSITE_DATA_DIR": str(tmp_path / "data"),
        "EVALSITE_BIND": f"127.0.0.1:{port}",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
    }


@pytest.mark.postgres  # the server and the worker must see the test database
@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_redis_outage_under_load_answers_no_500_and_every_accepted_job_runs(
    private_redis, tmp_path
):
    slug = "outage"
    campaign = campaign_create(
        slug=slug,
        name="Outage",
        protocol="likert",
        redundancy=50,
        items_per_assignment=1,
        controls={"open_links": True},
    )
    items = [
        (f"ex{n}/m", {"context": ["Hi!"], "response": f"Hi {n}.", "model": "m"}) for n in range(5)
    ]
    items_add(campaign=campaign, items=items)
    campaign_set_status(campaign=campaign, status="live")
    # Every request comes from 127.0.0.1: the limits would answer most of them 429.
    Campaign.objects.filter(pk=campaign.pk).update(rate_per_ip=10**6, rate_per_worker=10**6)
    get_user_model().objects.create_superuser("researcher", "r@example.org", "pw-outage-test-1")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = _stack_env(private_redis.url, tmp_path, port)
    processes = Processes(tmp_path)
    worker = ["celery", "-A", "evalsite", "worker", "-Q", "default", "--pool", "solo"]
    load = Load()
    try:
        processes.start("web", compose()["services"]["web"]["command"], env)
        processes.start("worker", [*worker, "--loglevel", "INFO"], env)
        wait_until(lambda: get_json(f"{base}/ready/")[0] == 200, 60, "the web server's /ready/")
        researcher = Browser(base)
        researcher.request("/admin/login/")
        login = {"csrfmiddlewaretoken": researcher.cookies["csrftoken"], "next": "/dashboard/"}
        login |= {"username": "researcher", "password": "pw-outage-test-1"}
        assert researcher.request("/admin/login/?next=/dashboard/", login)[:2] == (
            200,
            "/dashboard/",
        )
        threads = [load.thread(load.workers, base, slug, f"crowd{n}") for n in range(3)]
        threads.append(load.thread(load.researcher, researcher, slug))
        for thread in threads:
            thread.start()
        time.sleep(3)
        before = sum(load.statuses.values())
        private_redis.kill()
        time.sleep(OUTAGE_S)
        during = sum(load.statuses.values()) - before
        private_redis.start()
        time.sleep(1)
        load.stop.set()
        for thread in threads:
            thread.join(timeout=60)

        assert not load.bad, load.bad[:5]
        assert during >= 10, f"only {during} requests were answered during the outage"
        # The page queues a report of its own when judgments arrived: those count too.
        assert Job.objects.filter(campaign=campaign).count() >= load.jobs_accepted > 0
        # The sweep (beat's, every minute) sends the jobs the broker could not take; here it
        # is run once their requests' own sends are behind them.
        unsent = Job.objects.filter(campaign=campaign, dispatched_at__isnull=True).count()
        assert unsent, "no job was started while the broker was down"
        time.sleep(SWEEP_AFTER.total_seconds())
        sweep = "from dashboard.services import jobs_dispatch; print(jobs_dispatch())"
        command = [sys.executable, "manage.py", "shell", "-c", sweep]
        swept = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
        assert swept.returncode == 0, swept.stderr[-2000:]
        assert int(swept.stdout.split()[-1]) == unsent
        wait_until(
            lambda: (
                not Job.objects.filter(campaign=campaign, status__in=["queued", "running"]).exists()
            ),
            60,
            "every accepted job to finish",
        )
        jobs = Counter(Job.objects.filter(campaign=campaign).values_list("status", flat=True))
        assert set(jobs) == {"done"}, (jobs, processes.log("worker")[-3000:])
        print(f"statuses {dict(load.statuses)}, {during} during the outage; {unsent} swept")
    finally:
        load.stop.set()
        processes.stop_all()
