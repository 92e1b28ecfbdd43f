"""The platform's added latency per bot turn of a live chat (interactive SSA), measured through
the production web server over a real websocket.

It starts the production web server (gunicorn with uvicorn workers, ``deploy/gunicorn.conf.py``)
on a free port of 127.0.0.1 and a Celery worker for the ``inference`` queue as
``compose.yaml`` runs it (prefork, one process), then chats over TCP websockets like a browser.
For each bot turn it times the worker's message leaving the client to the state frame with
the bot's reply arriving (TCP → gunicorn/uvicorn → consumer → database → broker → worker →
model → database → channel layer → consumer → TCP), minus the model's own time, which the
task measures around the model call and the state frame carries (``state["bot"]``).

The bound, from the same run and the same socket: a ``ping`` frame's round trip (TCP → the
server → one database write → ``pong``), taken just before every turn. A bot turn cannot take
less than about two of those (the worker's frame in, the reply out) plus a broker hop.

Conversations are Meena's: up to 28 turns each, a new worker each time. Run it with
PostgreSQL, a broker and Redis (the database migrated):

    DATABASE_URL=postgres://… CELERY_BROKER_URL=redis://…/0 REDIS_URL=redis://…/2 \\
        .venv/bin/python bench/chat.py --turns 100

Prints the median and p90 of the added time, of the ping round trip and their ratio, and the
client-side split of a turn: message → ack (stored, task queued), ack → reply state.

``--stream S``: the bot is ``openai_http`` against the loopback OpenAI-compatible server of the
tests (tests/modelhub/fake_openai.py, started in this process), streaming its reply as
server-sent events, one token every S seconds. Each turn then also times the first partial
frame: from the moment the worker's task had the model's first piece (``emitted``, carried by
the frame) to the frame on the page — the platform's added latency to first token (target
≤ 50 ms) — and from the message sent to that frame (time to first token as the worker sees it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
from evalsite.env import tasks_inline_unless_brokered  # noqa: E402

tasks_inline_unless_brokered()  # a command-line process, like manage.py


@dataclass
class Timings:
    """Milliseconds per timed bot turn (and the ping just before it)."""

    added: list[float] = field(default_factory=list)
    model: list[float] = field(default_factory=list)
    ping: list[float] = field(default_factory=list)
    ack: list[float] = field(default_factory=list)
    after_ack: list[float] = field(default_factory=list)
    first_added: list[float] = field(default_factory=list)  # --stream: emitted -> on the page
    first_seen: list[float] = field(default_factory=list)  # --stream: message -> first partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100, help="bot turns to time (default 100)")
    parser.add_argument(
        "--model-delay", type=float, default=0.0, help="GenericBot's pretend model time (s)"
    )
    parser.add_argument(
        "--web-workers", type=int, default=2, help="gunicorn's uvicorn processes (default 2)"
    )
    parser.add_argument(
        "--warm-up", type=int, default=5, help="bot turns before timing starts (default 5)"
    )
    parser.add_argument(
        "--stream",
        type=float,
        default=None,
        metavar="S",
        help="a streaming bot (openai_http on the loopback fake), one token every S seconds",
    )
    args = parser.parse_args()
    if args.turns < 2:
        parser.error("--turns must be at least 2")

    import django

    django.setup()
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.REDIS_URL:
        sys.exit("Set CELERY_BROKER_URL and REDIS_URL: this measures the real path.")
    from evalsite.celery import app

    app.control.purge()  # tasks an earlier run left behind would delay this one's first turns
    server = None
    if args.stream is not None:
        from tests.modelhub.fake_openai import FakeServer

        server = FakeServer()
        server.token_delay_s = args.stream
    slug = _campaign(args.model_delay, server)
    port = _free_port()
    logs = Path(tempfile.mkdtemp(prefix="bench-chat-"))
    processes = [
        _web_start(port, args.web_workers, logs / "web.log"),
        _worker_start(logs / "worker.log"),
    ]
    try:
        _wait_ready(port, processes)
        timings = asyncio.run(_measure(port, slug, args.turns, args.warm_up))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if server is not None:
            server.close()
    _print(timings, settings, args)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _web_start(port: int, workers: int, log: Path) -> subprocess.Popen:
    """Start the production web command (``make web``) on ``port``."""
    env = {**os.environ, "EVALSITE_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(workers)}
    command = [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"]
    command += ["evalsite.asgi:application"]
    with log.open("w") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def _worker_start(log: Path) -> subprocess.Popen:
    """Start the inference worker as compose.yaml does (prefork, one process)."""
    command = [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "-Q", "inference"]
    command += ["--concurrency", "1", "--loglevel", "WARNING", "-n", f"bench-chat-{os.getpid()}@%h"]
    with log.open("w") as out:
        return subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


def _wait_ready(port: int, processes: list[subprocess.Popen], timeout: float = 90.0) -> None:
    """Wait for the web server's /ready/ (database, broker, channel layer)."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in processes):
            sys.exit("The web server or the worker stopped; see their logs in the temp folder.")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready/", timeout=2) as answer:
                if answer.status == 200:
                    return
        except urllib.error.HTTPError as exc:  # 503 names what is not ready (migrations...)
            last = exc.read().decode("utf-8", "replace")[:300]
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"The web server did not become ready: {last or 'no answer'}")


async def _measure(port: int, slug: str, turns: int, warm_up: int) -> Timings:
    """Chat as Meena's workers do (conversations of at most 28 turns, a new worker each
    time) until ``turns`` bot turns are timed after ``warm_up`` untimed ones."""
    from asgiref.sync import sync_to_async
    from websockets.asyncio.client import connect

    timings = Timings()
    seen = 0
    conversation = 0
    while len(timings.added) < turns:
        conversation += 1
        path = await sync_to_async(_seat_path)(slug, f"bench-{conversation}")
        origin = f"http://127.0.0.1:{port}"
        async with connect(f"ws://127.0.0.1:{port}{path}", origin=origin) as ws:  # type: ignore[arg-type]

            async def frame(predicate, ws=ws, timeout: float = 60.0) -> dict:
                while True:
                    data = json.loads(await asyncio.wait_for(ws.recv(), timeout))
                    if data["type"] == "error":
                        raise RuntimeError(data["message"])
                    if predicate(data):
                        return data

            state = await frame(lambda f: f["type"] == "state")
            n = 0
            while state["turns"] + 2 <= state["max_turns"] and len(timings.added) < turns:
                n += 1
                sent = time.perf_counter()
                await ws.send(json.dumps({"type": "ping"}))
                await frame(lambda f: f["type"] == "pong")
                ping = (time.perf_counter() - sent) * 1000
                text = f"Turn {n}, how are you?" if n % 2 else f"Turn {n}: I like jazz."
                sent = time.perf_counter()
                await ws.send(json.dumps({"type": "message", "client_id": f"b{n}", "text": text}))
                await frame(lambda f: f["type"] == "ack")
                acked = time.perf_counter()
                partial = None
                while True:
                    data = await frame(lambda f: f["type"] in ("partial", "state"))
                    if data["type"] == "partial" and partial is None:
                        partial = (time.time(), time.perf_counter(), data)
                    if data["type"] == "state" and "bot" in data:
                        break
                state = data
                done = time.perf_counter()
                if partial is not None and seen >= warm_up:
                    timings.first_added.append((partial[0] - partial[2]["emitted"]) * 1000)
                    timings.first_seen.append((partial[1] - sent) * 1000)
                seen += 1
                if seen > warm_up:
                    model_ms = float(state["bot"]["model_ms"])
                    timings.added.append((done - sent) * 1000 - model_ms)
                    timings.model.append(model_ms)
                    timings.ping.append(ping)
                    timings.ack.append((acked - sent) * 1000)
                    timings.after_ack.append((done - acked) * 1000 - model_ms)
                label = {"type": "label", "index": state["bot"]["index"], "sensible": "yes"}
                await ws.send(json.dumps(label | {"specific": "no"}))
                state = await frame(lambda f: f["type"] == "state" and f["needs_label"] is None)
            if state["can_end"]:
                await ws.send(json.dumps({"type": "end"}))
                await frame(lambda f: f["type"] == "state" and f["stage"] == "done")
    return timings


def _campaign(delay: float, server) -> str:  # type: ignore[no-untyped-def]
    from annotation.services import campaign_create, campaign_set_status
    from modelhub.services import endpoint_register

    if server is None:
        name = f"bench-bot-{int(delay * 1000)}ms"
        endpoint_register(name=name, backend="generic_bot", config={"delay_s": delay})
    else:
        name = "bench-stream"
        endpoint_register(
            name=name, backend="openai_http", config={"base_url": server.url, "model": "bench"}
        )
    slug = f"bench-chat-{int(time.time())}"
    campaign = campaign_create(
        slug=slug,
        name="bench/chat.py",
        protocol="ssa_interactive",
        parameters={"models": [name], "heartbeat_s": 120, "conversations_per_model": 100_000},
        # Every simulated worker sends from this one address: lift the limits per address;
        # and a timed turn's frames (ping, message, label) come faster than a person's.
        controls={
            "open_links": True,
            "open_arrivals_per_address": 100_000,
            "rate_per_ip": 1_000_000,
            "rate_per_worker": 100_000,
            "chat_frames_per_second": 1000,
        },
    )
    campaign_set_status(campaign=campaign, status="live")
    return slug


def _seat_path(slug: str, worker: str) -> str:
    from annotation.models import Campaign
    from annotation.services import assignment_token
    from chat.seats import chat_arrive
    from providers import Arrival

    campaign = Campaign.objects.get(slug=slug)
    visit = chat_arrive(campaign=campaign, arrival=Arrival(provider="local", worker_id=worker))
    assert visit.assignment is not None
    return f"/ws/chat/{slug}/?workerId={worker}&token={assignment_token(visit.assignment)}"


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def _print(t: Timings, settings, args: argparse.Namespace) -> None:  # type: ignore[no-untyped-def]
    db = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    broker = settings.CELERY_BROKER_URL.split(":", 1)[0]
    print(
        f"bot turns timed: {len(t.added)} after {args.warm_up} untimed; gunicorn + uvicorn "
        f"({args.web_workers} processes) on 127.0.0.1, database {db}, broker {broker}, "
        "Redis channel layer, Celery worker (prefork, 1 process)"
    )

    def row(name: str, values: list[float]) -> None:
        print(f"{name:<34} median {statistics.median(values):7.2f} ms   p90 {_p90(values):7.2f} ms")

    row("model's own time", t.model)
    row("platform's added (turn - model)", t.added)
    row("  message -> ack (stored, queued)", t.ack)
    row("  ack -> reply state, less model", t.after_ack)
    row("bound: ping -> pong, same socket", t.ping)
    ratios = [a / p for a, p in zip(t.added, t.ping, strict=True) if p > 0]
    print(
        f"added / ping (per turn)            median {statistics.median(ratios):7.2f}x"
        f"   (medians: {statistics.median(t.added) / statistics.median(t.ping):.2f}x)"
    )
    print("target: added median under 30 ms")
    if t.first_added:
        row("stream: first piece -> page", t.first_added)
        row("stream: message -> first partial", t.first_seen)
        print("target: first piece -> page under 50 ms")


if __name__ == "__main__":
    main()
