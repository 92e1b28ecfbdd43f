"""The platform's added latency per bot turn of a live chat (interactive SSA).

For each bot turn: the time from the worker's message leaving the websocket client to the
state frame with the bot's reply arriving (websocket → consumer → database → Celery broker →
worker → model → database → channel layer → consumer → websocket), minus the model's own
time as the task measured it around the model call. Prints the median and p90 in ms.

Conversations are Meena's: up to 28 turns each, a new worker each time. It runs the
project's ASGI application with channels' communicator, so the channel layer,
the broker and the worker are the configured ones: run it with CELERY_BROKER_URL, REDIS_URL
and DATABASE_URL set (the database migrated). By default it starts a Celery worker for the
``inference`` queue itself (``--no-worker`` to use one already running).

    DATABASE_URL=postgres://… CELERY_BROKER_URL=redis://…/0 REDIS_URL=redis://…/2 \\
        .venv/bin/python bench/chat.py --turns 40
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=40, help="bot turns to time (default 40)")
    parser.add_argument(
        "--model-delay", type=float, default=0.0, help="GenericBot's pretend model time (s)"
    )
    parser.add_argument(
        "--no-worker", action="store_true", help="use a Celery worker that is already running"
    )
    args = parser.parse_args()
    if args.turns < 1:
        parser.error("--turns must be at least 1")

    import django

    django.setup()
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.REDIS_URL:
        sys.exit("Set CELERY_BROKER_URL and REDIS_URL: this measures the real path.")
    worker = None if args.no_worker else _worker_start()
    try:
        added, model = asyncio.run(_measure(args.turns, args.model_delay))
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
    _print(added, model, settings)


def _worker_start() -> subprocess.Popen:
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool", "solo"]
    command += ["-Q", "inference", "--loglevel", "WARNING"]
    return subprocess.Popen(command, cwd=ROOT)


async def _measure(turns: int, delay: float) -> tuple[list[float], list[float]]:
    """Chat as Meena's workers do (conversations of at most 28 turns, a new worker each
    time) until ``turns`` bot turns are timed; return added and model ms per bot turn."""
    from asgiref.sync import sync_to_async
    from asgiref.testing import ApplicationCommunicator
    from channels.testing import WebsocketCommunicator

    # channels' test communicator stops consumers from closing database connections between
    # frames; daphne does not, so neither may the benchmark.
    WebsocketCommunicator.send_input = ApplicationCommunicator.send_input  # type: ignore
    WebsocketCommunicator.receive_output = ApplicationCommunicator.receive_output  # type: ignore
    from evalsite.asgi import application

    slug = await sync_to_async(_campaign)(delay)
    added: list[float] = []
    model: list[float] = []
    warm = True  # the first turn warms the worker's model and connections: not timed
    conversation = 0
    while len(added) < turns:
        conversation += 1
        path = await sync_to_async(_seat_path)(slug, f"bench-{conversation}")
        communicator = WebsocketCommunicator(
            application, path, headers=[(b"origin", b"http://localhost")]
        )
        connected, _ = await communicator.connect()
        assert connected

        async def frame(predicate, communicator=communicator, timeout: float = 60.0) -> dict:
            while True:
                data = json.loads(await communicator.receive_from(timeout=timeout))
                if data["type"] == "error":
                    raise RuntimeError(data["message"])
                if predicate(data):
                    return data

        state = await frame(lambda f: f["type"] == "state")
        n = 0
        while state["turns"] + 2 <= state["max_turns"] and len(added) < turns:
            n += 1
            text = f"Turn {n}, how are you?" if n % 2 else f"Turn {n}: I like jazz."
            sent = time.perf_counter()
            await communicator.send_to(
                text_data=json.dumps({"type": "message", "client_id": f"b{n}", "text": text})
            )
            state = await frame(lambda f: f["type"] == "state" and "bot" in f)
            elapsed = (time.perf_counter() - sent) * 1000
            if not warm:
                added.append(elapsed - state["bot"]["model_ms"])
                model.append(state["bot"]["model_ms"])
            warm = False
            label = {"type": "label", "index": state["bot"]["index"], "sensible": "yes"}
            await communicator.send_to(text_data=json.dumps(label | {"specific": "no"}))
            state = await frame(lambda f: f["type"] == "state" and f["needs_label"] is None)
        if state["can_end"]:
            await communicator.send_to(text_data=json.dumps({"type": "end"}))
            await frame(lambda f: f["type"] == "state" and f["stage"] == "done")
        await communicator.disconnect()
    return added, model


def _campaign(delay: float) -> str:
    from annotation.services import campaign_create, campaign_set_status
    from modelhub.services import endpoint_register

    name = f"bench-bot-{int(delay * 1000)}ms"
    endpoint_register(name=name, backend="generic_bot", config={"delay_s": delay})
    slug = f"bench-chat-{int(time.time())}"
    campaign = campaign_create(
        slug=slug,
        name="bench/chat.py",
        protocol="ssa_interactive",
        parameters={"models": [name], "heartbeat_s": 120, "conversations_per_model": 100_000},
    )
    campaign_set_status(campaign=campaign, status="live")
    return slug


def _seat_path(slug: str, worker: str) -> str:
    from annotation.chat.seats import chat_arrive
    from annotation.models import Campaign
    from annotation.providers import Arrival
    from annotation.services import assignment_token

    campaign = Campaign.objects.get(slug=slug)
    visit = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id=worker))
    assert visit.assignment is not None
    return f"/ws/chat/{slug}/?workerId={worker}&token={assignment_token(visit.assignment)}"


def _print(added: list[float], model: list[float], settings) -> None:
    def p90(values: list[float]) -> float:
        return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]

    db = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(f"bot turns timed: {len(added)} (database {db}, Redis channel layer, Celery worker)")
    print(
        f"model's own time:   median {statistics.median(model):7.2f} ms   p90 {p90(model):7.2f} ms"
    )
    print(
        f"platform's added:   median {statistics.median(added):7.2f} ms   p90 {p90(added):7.2f} ms"
        "   (target: median under 50 ms)"
    )


if __name__ == "__main__":
    main()
