"""An arena conversation on the production layout's parts: both sides' replies come from a real
Celery worker (the ``inference`` queue) through the Redis channel layer to the worker's
websocket; the vote, the end and the reveal go over the socket; the votes then leave in the
public battle format and are re-ranked from it. PostgreSQL, a broker and REDIS_URL only."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from annotation.models import Judgment, Utterance
from annotation.services import campaign_create, campaign_set_status
from evalsite.celery import app
from modelhub.services import endpoint_register
from tests.chat.helpers import Client, ws_path
from tests.chat.test_bot_worker import ROOT, _worker_env


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.broker
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_an_arena_conversation_runs_on_a_real_worker_and_its_votes_leave_as_battles(tmp_path):
    for name in ("bot-x", "bot-y"):
        endpoint_register(name=name, backend="generic_bot")
    campaign = campaign_create(
        slug="arena-worker",
        name="Arena",
        protocol="arena",
        parameters={"models": ["bot-x", "bot-y"], "heartbeat_s": 60, "min_turns": 2},
        controls={"open_links": True},
    )
    campaign = campaign_set_status(campaign=campaign, status="live")
    app.control.purge()
    path = ws_path(campaign, "real")
    log = tmp_path / "worker.log"
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool", "threads"]
    command += ["--concurrency", "2", "-Q", "inference", "--loglevel", "INFO"]
    with log.open("ab") as out:
        worker = subprocess.Popen(
            command, cwd=ROOT, env=_worker_env(), stdout=out, stderr=subprocess.STDOUT
        )

    async def scenario():
        client = Client(path)
        first = await client.connect()
        assert [s["label"] for s in first["sides"]] == ["A", "B"] and first["your_turn"]
        for turn, (text, vote) in enumerate([("How are you?", "a"), ("I like jazz.", "tie")], 1):
            assert (await client.say(text))["type"] == "ack"
            state = await client.state(lambda s, t=turn: s["needs_vote"] == t, timeout=60)
            assert [s["utterances"][-1]["role"] for s in state["sides"]] == ["bot", "bot"]
            await client.send(type="vote", turn=turn, winner=vote)
            await client.until(lambda f: f["type"] == "ack" and f.get("what") == "vote")
        await client.send(type="end")
        done = await client.state(lambda s: s["stage"] == "done")
        await client.send(type="vote", turn=2, winner="b")  # after the reveal: refused
        refused = await client.until(lambda f: f["type"] == "error")
        await client.close()
        return done, refused

    try:
        done, refused = async_to_sync(scenario)()
    except Exception:
        print(log.read_text()[-3000:])
        raise
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
    assert set(done["revealed"].values()) == {"bot-x", "bot-y"}
    assert refused["code"] == "conflict"  # another vote on exchange 2: votes cannot change
    assert Utterance.objects.filter(speaker="bot").count() == 4  # two exchanges, two sides
    assert sorted(Judgment.objects.values_list("value", flat=True)) == ["a", "tie"]

    out = tmp_path / "battles.jsonl"
    call_command("export", campaign.slug, "--format", "battles", "--out", out, stdout=io.StringIO())
    battles = [json.loads(line) for line in out.read_text().splitlines()]
    assert [b["winner"] for b in sorted(battles, key=lambda b: b["turn"])] == ["model_a", "tie"]
    assert all(b["anony"] and len(b["conversation_a"]) == 2 * b["turn"] for b in battles)
    ranked = io.StringIO()
    call_command("arena_rank", out, "--json", stdout=ranked)
    assert "bot-x" in ranked.getvalue() and "bot-y" in ranked.getvalue()
