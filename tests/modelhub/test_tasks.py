"""Generation jobs and bot turns as Celery tasks: eagerly, and on a real worker over the
configured broker (killed mid-job and restarted)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from evalsite.celery import app
from modelhub.backends import Example
from modelhub.models import Generation, GenerationJob
from modelhub.services import endpoint_register, generation_job_start
from modelhub.tasks import bot_reply, job_run

ROOT = Path(__file__).resolve().parents[2]


def _examples(n: int) -> list[Example]:
    return [Example(turns=(f"Turn {i}{'?' if i % 3 == 0 else '.'}",)) for i in range(n)]


def test_the_tasks_go_to_the_inference_queue():
    route = app.amqp.router.route({}, job_run.name)  # every job kind's one task
    assert route["queue"].name == "inference"
    assert app.amqp.router.route({}, bot_reply.name)["queue"].name == "inference"
    assert job_run.acks_late and bot_reply.acks_late


def test_a_job_task_continues_itself_until_the_job_is_done(db, monkeypatch):
    bot = endpoint_register(name="slow", backend="generic_bot", config={"delay_s": 0.01})
    job = GenerationJob.objects.create(
        endpoint=bot, examples=[e.as_dict() for e in _examples(6)], total=6, batch_size=2
    )
    queued = []
    monkeypatch.setattr(job_run, "apply_async", lambda **kw: queued.append(kw))
    # slice_s=0: one batch per task; each task queues the next
    assert job_run.apply(args=[job.pk], kwargs={"slice_s": 0}).get() is False
    while queued:
        job_run.apply(**queued.pop())
    job.refresh_from_db()
    assert (job.status, job.done, job.attempts) == ("done", 6, 3)


def test_bot_reply_task_returns_the_text_and_why_it_ended(db):
    bot = endpoint_register(name="bot", backend="generic_bot")
    reply = bot_reply.apply(args=[bot.pk, ["Hi!", "How are you?"]]).get()
    assert (reply["text"], reply["finish_reason"]) == ("I don't know.", "stop")


def _worker_env() -> dict[str, str]:
    db = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }


def _start_worker(env: dict[str, str], log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "tests.modelhub.celery_worker", "worker"]
    command += ["--pool", "solo", "-Q", "default,inference", "--loglevel", "INFO"]
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _stop(worker: subprocess.Popen) -> None:
    if worker.poll() is None:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def _wait_for(condition, timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out; worker log:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def _job(pk: int) -> GenerationJob:
    return GenerationJob.objects.get(pk=pk)


@pytest.mark.slow
@pytest.mark.postgres  # the worker process must see the test database
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_a_job_runs_to_completion_on_a_real_worker(tmp_path):
    env = _worker_env()
    app.control.purge()
    log = tmp_path / "worker.log"
    worker = _start_worker(env, log)
    try:
        bot = endpoint_register(name="bot", backend="generic_bot")
        job = generation_job_start(endpoint=bot, examples=_examples(20), batch_size=4)
        _wait_for(lambda: _job(job.pk).status == "done", 90, log)
        reply = bot_reply.delay(bot.pk, ["Hi!", "Any plans?"]).get(timeout=30)
    finally:
        _stop(worker)
    assert reply["text"] == "I don't know."
    job = _job(job.pk)
    assert (job.done, job.total, job.error) == (20, 20, "")
    assert Generation.objects.filter(endpoint=bot).count() == 20


@pytest.mark.slow
@pytest.mark.postgres  # the worker process must see the test database
@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_killing_the_worker_mid_job_and_restarting_it_stores_every_response_once(tmp_path):
    env = _worker_env()
    app.control.purge()
    log = tmp_path / "worker.log"
    # 32 examples at 0.25 s each, 2 per batch: about 8 s of "inference"
    bot = endpoint_register(name="slow-bot", backend="generic_bot", config={"delay_s": 0.25})
    examples = _examples(32)
    worker = _start_worker(env, log)
    try:
        job = generation_job_start(endpoint=bot, examples=examples, batch_size=2)
        _wait_for(lambda: _job(job.pk).done >= 6, 60, log)
        os.kill(worker.pid, signal.SIGKILL)  # no warm shutdown: the task stays unacknowledged
        worker.wait()
        stopped_at = _job(job.pk).done
        assert 6 <= stopped_at < 32, "the job ended before the worker was killed"
        time.sleep(3.5)  # past the visibility timeout, so the broker hands the task out again
        worker = _start_worker(env, log)
        _wait_for(lambda: _job(job.pk).status == "done", 90, log)
    finally:
        _stop(worker)
    job = _job(job.pk)
    assert (job.done, job.total) == (32, 32)
    assert job.attempts >= 2  # the redelivered task did the rest
    stored = Generation.objects.filter(endpoint=bot)
    assert stored.count() == 32
    assert sorted(g.context["turns"][0] for g in stored) == sorted(e.turns[0] for e in examples)
