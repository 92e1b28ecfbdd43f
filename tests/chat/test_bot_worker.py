"""Bot turns on a real Celery worker (the ``inference`` queue) pushed back through the Redis
channel layer to the worker's websocket: PostgreSQL, a broker and REDIS_URL only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from annotation.models import Utterance
from evalsite.celery import app
from tests.chat.helpers import Client, ssa_campaign, ws_path

ROOT = Path(__file__).resolve().parents[2]


def _worker_env() -> dict[str, str]:
    db = connection.settings_dict
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.broker
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_bot_turns_arrive_from_a_real_worker_through_the_redis_channel_layer(tmp_path, generic_bot):
    env = _worker_env()
    app.control.purge()
    campaign = ssa_campaign(slug="ssa-worker", heartbeat_s=60)  # no pings while it starts
    path = ws_path(campaign, "real")
    log = tmp_path / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool", "solo"]
    command += ["-Q", "inference", "--loglevel", "INFO"]
    with log.open("ab") as out:
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)

    async def scenario():
        client = Client(path)
        await client.connect()
        replies = []
        for n, text in enumerate(["How are you?", "I like jazz."], start=1):
            assert (await client.say(text))["type"] == "ack"
            # The frame the bot's turn sends (the one with "bot"): the state the worker's own
            # utterance sends can already show the reply when the worker is that fast.
            state = await client.state(lambda s: "bot" in s, timeout=60)
            assert (
                state["needs_label"] is not None
                and state["bot"]["index"] == 2 * n
                and state["bot"]["model_ms"] >= 0
            )
            replies.append(state["utterances"][-1]["text"])
            await client.send(type="label", index=2 * n, sensible="yes", specific="no")
            await client.state(lambda s: s["needs_label"] is None)
        await client.close()
        return replies

    try:
        replies = async_to_sync(scenario)()
    except Exception:
        print(log.read_text()[-3000:])
        raise
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
    assert replies == ["I don't know.", "ok"]
    assert Utterance.objects.filter(speaker="bot").count() == 3  # "Hi!" and two replies
