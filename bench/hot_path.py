"""The worker's hot path against the stack's own floor: CPU, statements, Redis commands.

It starts the production web server (``bench/load.py``'s: gunicorn with uvicorn workers,
``deploy/gunicorn.conf.py``) with ``EVALSITE_BENCH_FLOOR=1``, on the PostgreSQL database of
``DATABASE_URL`` and, where ``redis-server`` is installed, a private Redis of its own on a free
port (the cache: rate limits, open-link arrivals), so that Redis's CPU and commands are this
run's alone. One client then sends, one request at a time, ``--rounds`` rounds of three
requests: the **floor** (``evalsite.floor``: one indexed SELECT, a small template, the whole
middleware chain), a worker's **task page** (GET) and its **answer** (POST), a new worker
(local provider, open links) whenever an assignment is done. Around each request it reads
the CPU time of the web server's threads, of this database's PostgreSQL backends and of
Redis's threads from Linux's ``/proc/<pid>/task/*/schedstat`` (nanoseconds), so each side's
CPU is charged to the request that caused it.

Then, in this process on the same database and Redis, it counts each kind's SQL statements
(``CaptureQueriesContext``) and the Redis commands it sends (``MONITOR``: commands a Lua
script runs inside Redis are listed apart), and, as before, the milliseconds and statements
of an ED chat message (``--pairs``, the services the chat consumer calls).

It prints per kind the CPU a request costs on each side, and the ratios to the floor: the
task page's and the answer's web CPU (issue #32's target ≤ 2.5× each), a whole answer (GET
+ POST) in all sides (≤ 7×), and the statements and Redis commands of an answer (≤ 8, ≤ 2)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite .venv/bin/python bench/hot_path.py

The first ``--warmup`` rounds are not counted. The campaign and its workers are deleted
afterwards. CPU is charged by interval: what the server does after it answered (a log line)
lands on the next request, whatever its kind.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
import load  # noqa: E402  (bench/load.py: its server, campaign and form parsing)

KINDS = ("floor", "GET task", "POST answer")
WIDTHS = (9, 16, 8, 10, 11, 20)
SITUATION = "I finally finished the marathon I had trained for all year long."


class PrivateRedis:
    """A redis-server of the bench's own on a free port (no persistence), or nothing."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def __enter__(self) -> PrivateRedis:
        executable = shutil.which("redis-server")
        if executable is None:
            print("no redis-server: the cache is each process's memory; no Redis figures")
            return self
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.process = subprocess.Popen(
            [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{port}/0"
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                if redis.Redis.from_url(self.url).ping():
                    return self
            time.sleep(0.1)
        sys.exit("the private redis-server did not start")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def pid(self) -> int | None:
        if not self.url:
            return None
        import redis

        return int(redis.Redis.from_url(self.url).info("server")["process_id"])


def main() -> None:
    args = parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("bench/hot_path.py: set DATABASE_URL=postgres://… (a PostgreSQL database)")
    with PrivateRedis() as redis_server:
        if redis_server.url:
            os.environ["REDIS_URL"] = redis_server.url  # the server's and this process's cache
        os.environ["EVALSITE_CACHE_PREFIX"] = f"hot-path-{os.getpid()}"
        os.environ["EVALSITE_BENCH_FLOOR"] = "1"  # the floor page, here and in the server
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        run_id = f"{int(time.time())}-{os.getpid()}"
        prefix = f"hp{run_id}-"
        campaign = load.campaign_make(f"hot-path-{run_id}", args.items, 3)
        try:
            served = serve(args, campaign.slug, prefix, redis_server)
            counted = count_in_process(campaign.slug, prefix + "c", redis_server.url)
            report(served, counted)
            if args.pairs:
                ms, statements = chat_messages(args.pairs, 8, run_id)
                print(f"ED chat message (in process): {ms:.2f} ms, {statements:.1f} statements")
        finally:
            load.campaign_delete(campaign, prefix=prefix)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=2000, help="items (default 2000)")
    parser.add_argument("--rounds", type=int, default=300, help="measured rounds (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="rounds not counted (default 30)")
    parser.add_argument(
        "--web-concurrency", type=int, default=1, help="uvicorn worker processes (default 1)"
    )
    load.server_argument(parser)
    parser.add_argument(
        "--pairs", type=int, default=20, help="ED pairs, 8 messages each (default 20; 0: none)"
    )
    args = parser.parse_args()
    if args.items < 10 or args.rounds < 1 or args.warmup < 0 or args.pairs < 0:
        parser.error("--items ≥ 10, --rounds ≥ 1, --warmup ≥ 0 and --pairs ≥ 0, please")
    args.server_env = []  # the server inherits this process's environment
    return args


# --- CPU from /proc ----------------------------------------------------------------------------


def thread_ns(pid: int) -> int:
    """Nanoseconds on a CPU so far of the live threads of process ``pid`` (schedstat: exact,
    for processes whose threads live on: PostgreSQL's backends, Redis)."""
    total = 0
    with contextlib.suppress(OSError):
        for task in os.scandir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                total += int(Path(task.path, "schedstat").read_text().split()[0])
    return total


TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 10_000_000


def process_ns(pid: int) -> int:
    """Nanoseconds on a CPU so far of process ``pid``, ended threads included (``stat``'s
    utime + stime, in clock ticks). The web server runs each request's sync code in a thread
    of its own that ends with it (asgiref), which schedstat would miss once gone; a tick is
    coarse, but its error averages out over many requests (``serve`` prints it)."""
    with contextlib.suppress(OSError):
        text = Path(f"/proc/{pid}/stat").read_text()
        fields = text[text.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) * TICK_NS
    return 0


def session_pids(session: int) -> list[int]:
    """The processes of a session (the web server was started in one of its own)."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                text = Path(entry.path, "stat").read_text()
                if int(text[text.rindex(")") + 2 :].split()[3]) == session:
                    pids.append(int(entry.name))
    return pids


def backend_pids() -> list[int]:
    """This database's PostgreSQL client backends but the asking one (the server's pool)."""
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return [pid for (pid,) in rows]


class Meter:
    """CPU nanoseconds so far of each side: the web server, PostgreSQL's backends, Redis."""

    def __init__(self, server: int, redis_pid: int | None) -> None:
        self.sides = {
            "web": session_pids(server),
            "postgres": backend_pids(),
            "redis": [redis_pid] if redis_pid else [],
        }

    def read(self) -> dict[str, int]:
        return {
            side: sum(map(process_ns if side == "web" else thread_ns, pids))
            for side, pids in self.sides.items()
        }


# --- the server phase --------------------------------------------------------------------------


class Worker:
    """The simulated workers, one at a time: each answers until its assignment is done."""

    def __init__(self, base: str, slug: str, prefix: str) -> None:
        self.base, self.slug, self.prefix = base, slug, prefix
        self.n = 0
        self.url = self.first_url()

    def first_url(self) -> str:
        self.n += 1
        return f"{self.base}/task/{self.slug}/?workerId={self.prefix}{self.n}"

    def answer_of(self, page: str) -> tuple[str, dict[str, str]]:
        """The answer form's URL and fields (the first choice of every question)."""
        found = load.FORM.search(page)
        if found is None:
            sys.exit(f"the task page shows no item:\n{page[:500]}")
        fields = dict(load.HIDDEN.findall(page))
        for name, value in load.RADIO.findall(page):
            fields.setdefault(name, html.unescape(value))
        return self.base + html.unescape(found.group(1)), fields

    def answered(self, response: httpx.Response) -> None:
        if response.status_code != 302:
            sys.exit(f"an answer was not acknowledged: {response.status_code}")
        location = response.headers["location"]
        self.url = self.first_url() if "/done/" in location else self.base + location


def serve(
    args: argparse.Namespace, slug: str, prefix: str, redis_server: PrivateRedis
) -> dict[str, dict[str, float]]:
    """Run the rounds against the server; return per kind the mean CPU ms of a request on
    each side, the standard error of the web side's, and the median wall ms."""
    samples: dict[str, list[dict[str, float]]] = defaultdict(list)
    with load.web_server(args) as (base, _log, server), httpx.Client(timeout=30) as http:
        worker = Worker(base, slug, prefix)
        floor_url = f"{base}/bench/floor/{slug}/"
        if http.get(floor_url).status_code != 200:
            sys.exit("the floor page does not answer (EVALSITE_BENCH_FLOOR=1)")
        meter: Meter | None = None
        for n in range(args.warmup + args.rounds):
            if n == args.warmup:
                meter = Meter(server, redis_server.pid())  # the pool's backends are open now
            timed(http, meter, samples, "floor", "GET", floor_url)
            page = timed(http, meter, samples, "GET task", "GET", worker.url)
            action, fields = worker.answer_of(page.text)
            sent = timed(http, meter, samples, "POST answer", "POST", action, data=fields)
            worker.answered(sent)
    out: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        rows = samples[kind]
        out[kind] = {side: statistics.fmean(row[side] for row in rows) for side in rows[0]}
        out[kind]["web ±"] = statistics.stdev(row["web"] for row in rows) / len(rows) ** 0.5
        out[kind]["wall"] = statistics.median(row["wall"] for row in rows)
    return out


def timed(
    http: httpx.Client,
    meter: Meter | None,
    samples: dict[str, list[dict[str, float]]],
    kind: str,
    method: str,
    url: str,
    **kwargs: object,
) -> httpx.Response:
    """Send one request; when measuring, add its CPU ms per side and its wall ms to
    ``samples[kind]``."""
    before = meter.read() if meter else {}
    started = time.perf_counter()
    response = http.request(method, url, **kwargs)  # type: ignore[arg-type]
    spent = time.perf_counter() - started
    if meter:
        after = meter.read()
        row = {side: (after[side] - before[side]) / 1e6 for side in after}
        samples[kind].append(row | {"wall": spent * 1000})
    if response.status_code >= 400:
        sys.exit(f"{kind} answered {response.status_code}:\n{response.text[:500]}")
    return response


# --- statements and Redis commands, in this process ---------------------------------------------


class RedisMonitor:
    """The commands Redis receives while it runs (MONITOR): sent by a client, or run by a
    Lua script inside Redis."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.commands: list[tuple[str, bool]] = []  # (command, run by a script)
        self.thread: threading.Thread | None = None

    def __enter__(self) -> RedisMonitor:
        if self.url:
            import redis

            self.monitor = redis.Redis.from_url(self.url).monitor().__enter__()
            self.thread = threading.Thread(target=self.listen, daemon=True)
            self.thread.start()
        return self

    def listen(self) -> None:
        for command in self.monitor.listen():
            name = command["command"].split(" ", 1)[0].upper()
            if command["command"] == "ECHO hot-path-stop":
                return
            self.commands.append((name, command.get("client_type") == "lua"))

    def mark(self) -> int:
        time.sleep(0.05)  # MONITOR's stream lags a little
        return len(self.commands)

    def __exit__(self, *exc: object) -> None:
        if self.thread is not None:
            import redis

            redis.Redis.from_url(self.url).echo("hot-path-stop")
            self.thread.join(timeout=5)


def count_in_process(slug: str, prefix: str, redis_url: str, rounds: int = 5) -> dict:
    """Return per kind the statements and the Redis commands (sent, run by scripts) of one
    request, averaged over ``rounds`` rounds after one not counted."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    setup_test_environment()  # the test client's host
    client = Client()
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    worker = Worker("", slug, prefix)
    with RedisMonitor(redis_url) as monitor:
        for n in range(rounds + 1):
            for kind in KINDS:
                start = monitor.mark()
                with CaptureQueriesContext(connection) as captured:
                    if kind == "floor":
                        response = client.get(f"/bench/floor/{slug}/")
                    elif kind == "GET task":
                        response = client.get(worker.url)
                        action, fields = worker.answer_of(response.content.decode())
                    else:
                        response = client.post(action, fields)
                        worker.answered(response)  # type: ignore[arg-type]
                commands = monitor.commands[start : monitor.mark()]
                if n:
                    counts[kind]["statements"] += len(captured.captured_queries)
                    counts[kind]["sent"] += sum(1 for _name, lua in commands if not lua)
                    counts[kind]["in scripts"] += sum(1 for _name, lua in commands if lua)
    return {kind: {k: v / rounds for k, v in counts[kind].items()} for kind in KINDS}


# --- the report ----------------------------------------------------------------------------------


def report(served: dict[str, dict[str, float]], counted: dict[str, dict[str, float]]) -> None:
    """Print each kind's CPU per request per side, statements and Redis commands, and the
    ratios to the floor."""
    heads = ("wall p50", "web CPU ± s.e.", "PG CPU", "Redis CPU", "statements", "Redis sent")
    print(f"{'request':<12} " + " ".join(f"{h:>{w}}" for h, w in zip(heads, WIDTHS, strict=True)))
    for kind in KINDS:
        s, c = served[kind], counted[kind]
        print(
            f"{kind:<12} {s['wall']:>6.2f} ms {s['web']:>5.2f}±{s['web ±']:.2f} ms"
            f" {s['postgres']:>5.2f} ms"
            f" {s['redis']:>7.3f} ms {c['statements']:>11.1f} {c['sent']:>6.1f}"
            f" (+{c['in scripts']:.1f} in scripts)"
        )

    def all_sides(kind: str) -> float:
        return sum(served[kind][side] for side in ("web", "postgres", "redis"))

    floor = served["floor"]
    answer = all_sides("GET task") + all_sides("POST answer")
    print(
        f"web CPU ÷ the floor's: GET {served['GET task']['web'] / floor['web']:.2f}×, "
        f"POST {served['POST answer']['web'] / floor['web']:.2f}× (target ≤ 2.5× each)"
    )
    print(
        f"an answer (GET + POST) in all sides ÷ the floor's: {answer / all_sides('floor'):.2f}×"
        f" (target ≤ 7×); {answer:.2f} ms of CPU"
    )
    statements = counted["GET task"]["statements"] + counted["POST answer"]["statements"]
    sent = counted["GET task"]["sent"] + counted["POST answer"]["sent"]
    print(
        f"an answer: {statements:.1f} SQL statements (target ≤ 8), {sent:.1f} Redis commands"
        f" sent (target ≤ 2)"
    )


def chat_messages(pairs: int, messages: int, run_id: str) -> tuple[float, float]:
    """Return ms and statements per ED message between paired workers (in this process)."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    from annotation.services import campaign_create, campaign_set_status
    from chat import empathetic
    from chat.models import ChatSeat
    from chat.seats import chat_arrive, seat_connect
    from chat.snapshot import pair_dialogues
    from providers import Arrival

    ed = campaign_create(
        slug=f"hot-path-ed-{run_id}",
        name="ED",
        protocol="empathetic_chat",
        controls={"open_links": True},
    )
    ed = campaign_set_status(campaign=ed, status="live")
    spent, statements, count = 0.0, 0, 0
    for pair in range(pairs):
        seats = []
        for k in (0, 1):
            arrival = Arrival(provider="local", worker_id=f"hp{run_id}-ed{pair}-{k}")
            seat = chat_arrive(campaign=ed, arrival=arrival).seat
            assert seat is not None
            seat_connect(seat_id=seat.pk, channel_name=f"chan-{pair}-{k}")
            empathetic.situation_submit(
                seat_id=seat.pk, emotion=seat.offered[0], text=SITUATION, signals={}
            )
            seats.append(seat)
        empathetic.lobby_pair(seat_id=seats[1].pk)
        dialogue = pair_dialogues(ChatSeat.objects.get(pk=seats[0].pk))[0]
        speaker_first = dialogue.metadata.get("speaker_seat") == seats[0].pk
        order = seats if speaker_first else seats[::-1]
        for i in range(messages):
            reset_queries()
            start = time.perf_counter()
            with CaptureQueriesContext(connection) as captured:
                empathetic.utterance_send(
                    seat_id=order[i % 2].pk,
                    client_id=f"c{pair}-{i}",
                    text=f"message {i} of pair {pair}",
                    signals={},
                    dialogue_id=dialogue.pk,
                    role="",
                )
            spent += time.perf_counter() - start
            statements += len(captured.captured_queries)
            count += 1
    return spent / count * 1000, statements / count


if __name__ == "__main__":
    main()
