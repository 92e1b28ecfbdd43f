"""A bounded simulated crowd over HTTP against the production web server, with integrity checks.

It creates a Likert campaign of ``--items`` items at ``--redundancy`` workers per item (through
the project's services, in bulk) in the PostgreSQL database of ``DATABASE_URL`` (migrated
first), starts the production web server (gunicorn with uvicorn workers,
``deploy/gunicorn.conf.py``, ``--web-concurrency`` processes) on a free port of 127.0.0.1,
and then:

1. hammers ``/health/`` with ``--workers`` concurrent clients for ``--health-seconds``: the
   bound, what this server answers per second when a request does nothing;
2. runs ``--workers`` concurrent simulated workers (the local provider: ``?workerId=…``). Each
   GETs the task page, parses the form (token, item, the radio questions), POSTs an answer as
   the HTML form does and follows the redirect, until its assignment is done; then a new
   worker (a new id) takes its place. A 503 is waited out as the page does (``Retry-After``)
   and the same request sent again. It ends when the campaign is full, at ``--duration``
   seconds, or at ``--max-requests``;
3. checks the database: items judged by more workers than the redundancy, duplicate
   judgments, acknowledged answers (a POST answered with a redirect) without exactly their
   stored judgments, live leases left over (none once the campaign is full; at most one per
   worker cut off by the end of the run otherwise), and counts every 5xx.

It prints throughput and p50/p99 per request kind, the ``/health/`` rate of the same run, and
full cycles (GET + acknowledged POST) per second ÷ ``/health/`` requests per second. The
issue's targets: at 200 workers p99 under 1 s and that ratio ≥ 0.5; at 500 workers no 5xx.
Each phase also prints the CPU that each side spent per request (the web server's processes,
PostgreSQL's, the load generator's own) and how busy the machine's cores were, so that a
reader sees what set the pace: on a small machine all three share the cores.

Each simulated worker has a connection of its own, as a browser does. By default they send
their answer the moment the page arrives (``--think 0``): the server's capacity, where by
Little's law the mean time of a request is the workers ÷ the requests per second, whatever
the server does. ``--think S`` makes each worker read and answer for a time drawn around S
seconds (log-normal, median S, p90 about 1.9 S), as people do; then the requests' times are
what a crowd of that size waits for a page.

``--burst N`` first sends N new workers' first pages at the same moment, each on a
connection opened (untimed) before, as a study's launch does, and prints their p50, p99 and
the web CPU a first page costs (target: 200 within 3 s at p99); each then answers its item
(untimed), so no lease is left for the crowd phase's checks.

``--items 1000,100000`` runs each size in turn against the same server (one worker by
default), and prints each size's GET p50 and its ratio to the smallest size's (target: within
1.5× from 1,000 to 100,000 items).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/evalsite \\
        .venv/bin/python bench/load.py --items 2000 --workers 200 --duration 60

Exits 1 when a check fails or any response was a 5xx (503 included). The campaigns and their
workers are deleted afterwards unless ``--keep``. ``--server-env NAME=VALUE`` passes a variable
to the server only (``EVALSITE_DB_POOL_MAX=0`` compares with the pool off).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import os
import random
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
from evalsite.env import tasks_inline_unless_brokered  # noqa: E402

tasks_inline_unless_brokered()  # a command-line process, like manage.py

FORM = re.compile(r'<form method="post" action="([^"]+)"[^>]*id="answer-form"')
HIDDEN = re.compile(r'<input type="hidden" name="(token|item)" value="([^"]*)">')
RADIO = re.compile(r'<input type="radio" name="([^"]+)" value="([^"]*)"')
MODELS = ("model-a", "model-b", "model-c", "model-d", "gold")


@dataclass
class Stats:
    """What one phase saw: latencies (ms) per request kind, statuses, acknowledged answers."""

    ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    # (worker id, item id) -> the answers whose POST was acknowledged
    acknowledged: dict[tuple[str, int], dict[str, str]] = field(default_factory=dict)
    requests: int = 0
    reconnects: int = 0
    holding: int = 0  # workers cut off between the item page and its acknowledgement
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per side, in the phase

    def server_errors(self) -> int:
        return sum(n for status, n in self.statuses.items() if status >= 500)


@dataclass
class Run:
    """The shared state of the crowd phase."""

    base: str
    slug: str
    prefix: str
    target: int  # judgment sets that fill the campaign: items × redundancy
    deadline: float
    max_requests: int
    think: float = 0.0
    stats: Stats = field(default_factory=Stats)
    next_worker: int = 0
    full: bool = False

    def over(self) -> bool:
        return (
            self.full
            or time.monotonic() >= self.deadline
            or self.stats.requests >= self.max_requests
        )


def main() -> None:
    args = parse_args()
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith(("postgres://", "postgresql://")):
        sys.exit("bench/load.py: set DATABASE_URL=postgres://… (a PostgreSQL database)")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    sizes = [int(n) for n in args.items.split(",")]
    workers = args.workers or (1 if len(sizes) > 1 else 50)
    run_id = f"{int(time.time())}-{os.getpid()}"
    campaigns = []
    failed = False
    try:
        for n, size in enumerate(sizes):
            started = time.perf_counter()
            campaigns.append(campaign_make(f"load-{run_id}-{n}", size, args.redundancy))
            print(f"campaign of {size:,} items made in {time.perf_counter() - started:.1f} s")
        with web_server(args) as (base, log_path, server):
            health = asyncio.run(health_phase(base, server, workers, args.health_seconds))
            print_health(health, workers, args.web_concurrency)
            if args.burst:
                burst = asyncio.run(burst_phase(base, server, campaigns[0], f"b{run_id}-", args))
                print_burst(burst, args.burst, args.web_concurrency)
                failed = failed or burst.server_errors() > 0
            results = []
            for n, (size, campaign) in enumerate(zip(sizes, campaigns, strict=True)):
                with ConnectionSampler(database_url) as connections:
                    stats = asyncio.run(
                        crowd_phase(base, server, campaign, f"w{run_id}-{n}-", workers, args, size)
                    )
                print(connections.summary())
                problems = integrity(campaign, f"w{run_id}-{n}-", stats)
                print_crowd(size, workers, args.think, stats, health, problems)
                results.append((size, stats))
                failed = failed or bool(problems) or stats.server_errors() > 0
                if stats.server_errors() or stats.errors:
                    print_server_errors(log_path)
            if len(sizes) > 1:
                print_sizes(results)
    finally:
        if not args.keep:
            for campaign in campaigns:
                campaign_delete(campaign, prefix=f"w{run_id}-")
    print("RESULT:", "FAIL" if failed else "ok")
    sys.exit(1 if failed else 0)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--items",
        default="2000",
        help="items in the campaign, or a comma-separated list of sizes run in turn (default 2000)",
    )
    parser.add_argument("--redundancy", type=int, default=3, help="workers per item (default 3)")
    parser.add_argument(
        "--burst",
        type=int,
        default=0,
        help="new workers whose first pages are asked for at once before the crowd (default 0)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=0,
        help="concurrent simulated workers (default 50; 1 with a list of sizes)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=60.0,
        help="most seconds of the crowd phase, per campaign size (default 60)",
    )
    parser.add_argument(
        "--health-seconds",
        type=float,
        default=5.0,
        help="seconds of the /health/ phase (default 5)",
    )
    parser.add_argument(
        "--max-requests",
        type=int,
        default=200_000,
        help="most requests of a crowd phase (default 200000)",
    )
    parser.add_argument(
        "--web-concurrency",
        type=int,
        default=2,
        help="the server's WEB_CONCURRENCY: uvicorn worker processes (default 2)",
    )
    server_argument(parser)
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a variable for the server only, e.g. EVALSITE_DB_POOL_MAX=0 (repeatable)",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="median seconds a worker takes to answer an item (log-normal; default 0: none)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the campaigns and workers")
    args = parser.parse_args()
    if args.redundancy < 1 or not 0 <= args.workers <= 2000 or not 1 <= args.web_concurrency <= 64:
        parser.error("--redundancy ≥ 1, --workers 0–2000 and --web-concurrency 1–64, please")
    if not 0 < args.duration <= 3600 or not 0 < args.health_seconds <= 600:
        parser.error("--duration must be in (0, 3600] and --health-seconds in (0, 600]")
    if not 0 <= args.think <= 600:
        parser.error("--think must be in [0, 600] seconds")
    if not 0 <= args.burst <= 5000:
        parser.error("--burst must be in [0, 5000] workers")
    if not re.fullmatch(r"\d+(,\d+)*", args.items) or "0" in args.items.split(","):
        parser.error("--items takes a size or a comma-separated list of sizes, e.g. 1000,100000")
    return args


# The HTTP servers a bench can start: the shipped one and the alternatives issue #32 measured.
SERVERS = {
    "asgi": ["evalsite.asgi:application"],  # shipped: uvicorn, SyncChainHandler
    "asgi-stock": ["--pythonpath", "bench", "stock_asgi:application"],  # Django's ASGIHandler
    "wsgi": ["-k", "gthread", "--threads", "8", "evalsite.wsgi:application"],  # no websockets
}


def server_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--server``: which application and worker class gunicorn serves."""
    parser.add_argument(
        "--server",
        choices=sorted(SERVERS),
        default="asgi",
        help="asgi (shipped: uvicorn workers, Django's chain synchronous in one thread hop), "
        "asgi-stock (Django's own ASGI handler), wsgi (gthread workers, 8 threads; HTTP only); "
        "default asgi",
    )


# --- the campaign ----------------------------------------------------------------------------


def campaign_make(slug: str, size: int, redundancy: int):
    """A live Likert campaign of ``size`` items, made through the services in bulk batches."""
    from annotation.models import Campaign
    from annotation.services import campaign_create, campaign_set_status, items_add

    # Open links, and every simulated worker may start from this one address.
    campaign = campaign_create(
        slug=slug,
        name=f"Load test {slug}",
        protocol="likert",
        redundancy=redundancy,
        # Every simulated worker sends from this one address: lift the limits per address.
        controls={
            "open_links": True,
            "open_arrivals_per_address": 100_000,
            "rate_per_ip": 1_000_000,
            "rate_per_worker": 100_000,
        },
    )
    batch = 10_000
    for start in range(0, size, batch):
        items_add(
            campaign=campaign,
            items=((f"item-{n}", payload(n)) for n in range(start, min(size, start + batch))),
        )
    return campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)


def payload(n: int) -> dict[str, str | list[str]]:
    return {
        "context": [f"I finally finished my thesis, part {n}.", "Congratulations! How are you?"],
        "response": f"That's wonderful news ({n}), you must be so relieved.",
        "model": MODELS[n % len(MODELS)],
        "example": f"ex{n // len(MODELS)}",
    }


def campaign_delete(campaign, *, prefix: str) -> None:
    """Remove a bench campaign, its judgments and the bench's workers."""
    from django.db.models.deletion import ProtectedError

    from annotation.models import Judgment, Worker

    Judgment.objects.filter(item__campaign=campaign).delete()
    campaign.delete()
    with contextlib.suppress(ProtectedError):  # a kept bench campaign still refers to them
        Worker.objects.filter(external_id__startswith=prefix).delete()


# --- the server ------------------------------------------------------------------------------


class web_server:  # noqa: N801 -- used as a context manager, like open()
    """The production web server in its own process group, on a free port of 127.0.0.1."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.folder = tempfile.TemporaryDirectory(prefix="evalsite-load-")
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> tuple[str, Path, int]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = dict(os.environ)
        env["EVALSITE_BIND"] = f"127.0.0.1:{port}"
        env["WEB_CONCURRENCY"] = str(self.args.web_concurrency)
        for pair in self.args.server_env:
            name, _, value = pair.partition("=")
            env[name] = value
        log_path = Path(self.folder.name) / "web.log"
        command = [
            str(Path(sys.executable).parent / "gunicorn"),
            "-c",
            "deploy/gunicorn.conf.py",
            *SERVERS[self.args.server],
        ]
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit("the web server stopped:\n" + log_path.read_text(errors="replace"))
            try:
                if httpx.get(base + "/ready/", timeout=2).status_code == 200:
                    return base, log_path, self.process.pid
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.__exit__()
        sys.exit("the web server did not become ready in 60 s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.folder.cleanup()


class ConnectionSampler:
    """The peak of PostgreSQL's client connections while the crowd runs (every 0.2 s)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.peak_here = self.peak_all = self.limit = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def __enter__(self) -> ConnectionSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def sample(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            self.limit = int(conn.execute("SHOW max_connections").fetchone()[0])  # type: ignore[index]
            while not self.stop.wait(0.2):
                here, everyone = conn.execute(
                    "SELECT count(*) FILTER (WHERE datname = current_database()), count(*)"
                    " FROM pg_stat_activity WHERE backend_type = 'client backend'"
                ).fetchone()  # type: ignore[misc]
                self.peak_here = max(self.peak_here, here)
                self.peak_all = max(self.peak_all, everyone)

    def summary(self) -> str:
        return (
            f"  PostgreSQL client connections, peak: {self.peak_here} to this database, "
            f"{self.peak_all} in all (max_connections {self.limit}; the sampler's own included)"
        )


# --- the phases ------------------------------------------------------------------------------


def client() -> httpx.AsyncClient:
    """One simulated person's connection, as a browser keeps one per site. One pool shared by
    every simulated worker would cost the load generator time growing with the number of
    connections (httpx scans its pool on each request): at 200 workers it, not the server,
    set the pace, 10 ms of its CPU per request against 0.6 ms with a connection each."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0), follow_redirects=False)


async def health_phase(base: str, server: int, workers: int, seconds: float) -> Stats:
    """``workers`` clients GET /health/ back to back for ``seconds``, each on a connection
    opened (by one untimed request) before the clock starts: the rate of requests, not of
    200 connections opened at once."""
    stats = Stats()
    clients = [client() for _ in range(workers)]
    try:
        await asyncio.gather(*(http.get(base + "/health/") for http in clients))
        deadline = time.monotonic() + seconds

        async def one(http: httpx.AsyncClient) -> None:
            while time.monotonic() < deadline and stats.requests < 1_000_000:
                await timed(http, stats, "GET /health/", "GET", base + "/health/")

        with cpu_meter(stats, server):
            await asyncio.gather(*(one(http) for http in clients))
    finally:
        await asyncio.gather(*(http.aclose() for http in clients))
    return stats


async def burst_phase(
    base: str, server: int, campaign, prefix: str, args: argparse.Namespace
) -> Stats:
    """``args.burst`` new workers ask for their first page at once, each on a connection
    opened (by an untimed ``/health/``) before the clock starts; then each answers its item,
    untimed, so that none holds a lease afterwards."""
    stats = Stats()
    clients = [client() for _ in range(args.burst)]
    urls = [f"{base}/task/{campaign.slug}/?workerId={prefix}{n}" for n in range(args.burst)]
    try:
        await asyncio.gather(*(http.get(base + "/health/") for http in clients))
        with cpu_meter(stats, server):
            pages = await asyncio.gather(
                *(
                    timed(http, stats, "GET first page", "GET", url)
                    for http, url in zip(clients, urls, strict=True)
                )
            )
        rng = random.Random(0)
        await asyncio.gather(
            *(
                answer(http, base, page, rng)
                for http, page in zip(clients, pages, strict=True)
                if page is not None
            )
        )
    finally:
        await asyncio.gather(*(http.aclose() for http in clients))
    return stats


async def answer(http: httpx.AsyncClient, base: str, page: httpx.Response, rng: random.Random):
    """Answer the item of a task page with random choices (untimed)."""
    form = FORM.search(page.text)
    if page.status_code != 200 or form is None:
        return
    choices: dict[str, list[str]] = defaultdict(list)
    for name, value in RADIO.findall(page.text):
        choices[name].append(html.unescape(value))
    answers = {name: rng.choice(values) for name, values in choices.items()}
    data = {**dict(HIDDEN.findall(page.text)), **answers}
    await http.post(base + html.unescape(form.group(1)), data=data)


async def crowd_phase(
    base: str,
    server: int,
    campaign,
    prefix: str,
    workers: int,
    args: argparse.Namespace,
    size: int,
) -> Stats:
    """``workers`` simulated workers at once, each replaced by a new one when it is done."""
    run = Run(
        base=base,
        slug=campaign.slug,
        prefix=prefix,
        target=size * campaign.redundancy,
        deadline=time.monotonic() + args.duration,
        max_requests=args.max_requests,
        think=args.think,
    )
    with cpu_meter(run.stats, server):
        await asyncio.gather(*(crowd_slot(run, n) for n in range(workers)))
    return run.stats


async def crowd_slot(run: Run, seed: int) -> None:
    """One place in the crowd: worker after worker, each doing one assignment, on one
    connection."""
    rng = random.Random(seed)
    idle = 0
    async with client() as http:
        while not run.over():
            worker = f"{run.prefix}{run.next_worker}"
            run.next_worker += 1
            outcome = await worker_session(http, run, worker, rng)
            if outcome == "nothing":  # all open items are leased by others, or the study is full
                idle += 1
                if idle > 50:
                    return
                await asyncio.sleep(0.1 + 0.1 * rng.random())
            else:
                idle = 0


async def worker_session(http: httpx.AsyncClient, run: Run, worker: str, rng: random.Random) -> str:
    """One worker's assignment: item pages and answers until done; returns how it ended."""
    stats = run.stats
    url = f"{run.base}/task/{run.slug}/?workerId={worker}"
    while not run.over():
        page = await patient(http, run, "GET task", "GET", url)
        if page is None:
            return "cut"
        if page.status_code != 200 or "answer-form" not in page.text:
            return "nothing" if "No more items" in page.text else "other"
        action = html.unescape(FORM.search(page.text).group(1))  # type: ignore[union-attr]
        fields = dict(HIDDEN.findall(page.text))
        choices: dict[str, list[str]] = defaultdict(list)
        for name, value in RADIO.findall(page.text):
            choices[name].append(html.unescape(value))
        answers = {name: rng.choice(values) for name, values in choices.items()}
        if run.think:
            await asyncio.sleep(min(run.think * rng.lognormvariate(0, 0.5), 20 * run.think))
        stats.holding += 1
        sent = await patient(
            http, run, "POST submit", "POST", run.base + action, data={**fields, **answers}
        )
        if sent is None or sent.status_code != 302:
            return "cut"
        stats.holding -= 1
        stats.acknowledged[(worker, int(fields["item"]))] = answers
        if len(stats.acknowledged) >= run.target:
            run.full = True
        location = sent.headers["location"]
        if "/done/" in location:
            await patient(http, run, "GET done", "GET", run.base + location)
            return "done"
        url = run.base + location
    return "cut"


async def patient(
    http: httpx.AsyncClient, run: Run, kind: str, method: str, url: str, **kwargs
) -> httpx.Response | None:
    """Send a request; on a 503 wait ``Retry-After`` (with jitter) and send the same again."""
    while run.stats.requests < run.max_requests and time.monotonic() < run.deadline + 30:
        response = await timed(http, run.stats, kind, method, url, **kwargs)
        if response is None or response.status_code != 503:
            return response
        wait = float(response.headers.get("retry-after", "1"))
        await asyncio.sleep(wait * (1 + 0.5 * random.random()))
    return None


async def timed(
    http: httpx.AsyncClient, stats: Stats, kind: str, method: str, url: str, **kwargs
) -> httpx.Response | None:
    stats.requests += 1
    started = time.perf_counter()
    try:
        try:
            response = await http.request(method, url, **kwargs)
        except (httpx.RemoteProtocolError, httpx.ReadError):
            # The server closed a kept-alive connection as it was reused (its keep-alive is
            # 5 s): a browser sends the request again on a new one, and so do we, once. Safe
            # for the POST too, since the same answers resent store nothing.
            stats.reconnects += 1
            started = time.perf_counter()
            response = await http.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        stats.errors[f"{kind}: {type(exc).__name__}"] += 1
        return None
    stats.ms[kind].append(1000 * (time.perf_counter() - started))
    stats.statuses[response.status_code] += 1
    return response


@contextlib.contextmanager
def cpu_meter(stats: Stats, server: int):
    """Time the phase into ``stats.seconds`` and its CPU, per side, into ``stats.cpu``."""
    before, started = cpu_seconds(server), time.monotonic()
    backends_before = backend_cpu()
    try:
        yield
    finally:
        stats.seconds = time.monotonic() - started
        after = cpu_seconds(server)
        stats.cpu = {side: after[side] - before[side] for side in after}
        backends_after = backend_cpu()
        if backends_after:  # this database's backends only: not other work on the machine
            stats.cpu["postgres"] = sum(
                seconds - backends_before.get(pid, 0.0) for pid, seconds in backends_after.items()
            )


def backend_cpu() -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend connected to the benchmark's database
    (pg_stat_activity's pids, read from /proc): what serving this run cost PostgreSQL, apart
    from other databases' clients on the same server. The web processes keep their pooled
    connections for the run, so their backends live from the first request to the last.
    Empty where PostgreSQL runs on another machine or /proc is missing."""
    import psycopg

    tick = os.sysconf("SC_CLK_TCK") if os.path.exists("/proc/stat") else 0
    if not tick:
        return {}
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        pids = [
            pid
            for (pid,) in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
            )
        ]
    cpu = {}
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # on another machine, or it ended
            continue
        fields = text[text.rindex(")") + 2 :].split()
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    return cpu


def cpu_seconds(server: int) -> dict[str, float]:
    """CPU seconds spent so far by the web server (the processes of its session), PostgreSQL's
    processes (all of them; ``cpu_meter`` narrows this to the run's database), this load
    generator, and the whole machine (busy time of all cores), read from Linux's /proc; empty
    elsewhere."""
    if not os.path.exists("/proc/stat"):
        return {}
    tick = os.sysconf("SC_CLK_TCK")
    sides = {"server": 0.0, "postgres": 0.0}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "stat").read_text()
        except OSError:  # the process ended
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        fields = rest.split()
        seconds = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        if int(fields[3]) == server:  # the server was started in a session of its own
            sides["server"] += seconds
        elif name.startswith("postgres"):
            sides["postgres"] += seconds
    me = resource.getrusage(resource.RUSAGE_SELF)
    sides["generator"] = me.ru_utime + me.ru_stime
    cores = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    sides["machine"] = (sum(map(int, cores)) - int(cores[3]) - int(cores[4])) / tick
    return sides


def print_cpu(stats: Stats, requests: int) -> None:
    if not stats.cpu or not requests:
        return
    per = {side: 1000 * seconds / requests for side, seconds in stats.cpu.items()}
    print(
        f"  CPU per request: web server {per['server']:.1f} ms, PostgreSQL "
        f"{per['postgres']:.1f} ms, load generator {per['generator']:.1f} ms; the machine's "
        f"cores busy {stats.cpu['machine'] / stats.seconds:.2f} of {os.cpu_count()}"
    )


# --- the checks and the report ---------------------------------------------------------------


def integrity(campaign, prefix: str, stats: Stats) -> list[str]:
    """What the database says went wrong; an empty list when nothing did."""
    from django.db.models import Count
    from django.utils import timezone

    from annotation.models import Judgment, Lease

    judgments = Judgment.objects.filter(item__campaign=campaign)
    problems = []
    over = (
        judgments.values("item")
        .annotate(n=Count("worker", distinct=True))
        .filter(n__gt=campaign.redundancy)
        .count()
    )
    if over:
        problems.append(f"{over} items judged by more than {campaign.redundancy} workers")
    twice = (
        judgments.values("item", "worker", "question").annotate(n=Count("id")).filter(n__gt=1)
    ).count()
    if twice:
        problems.append(f"{twice} (item, worker, question) stored more than once")
    stored: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    rows = judgments.filter(worker__external_id__startswith=prefix).values_list(
        "worker__external_id", "item_id", "question", "value"
    )
    for worker, item, question, value in rows.iterator(chunk_size=10_000):
        stored[(worker, item)][question] = str(value)
    wrong = sum(1 for key, answers in stats.acknowledged.items() if stored.get(key) != answers)
    if wrong:
        problems.append(f"{wrong} acknowledged answers without exactly their stored judgments")
    unacknowledged = len(set(stored) - set(stats.acknowledged))
    if unacknowledged:
        print(f"  note: {unacknowledged} stored answers whose POST was cut off (no ack)")
    leases = Lease.objects.filter(item__campaign=campaign, expires_at__gt=timezone.now()).count()
    full = len(stored) >= campaign.items.count() * campaign.redundancy
    if leases > (0 if full else stats.holding):
        problems.append(
            f"{leases} live leases left over ({'full campaign' if full else 'at most'} "
            f"{0 if full else stats.holding} expected)"
        )
    if stats.errors:
        problems.append(f"transport errors: {dict(stats.errors)}")
    return problems


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def print_health(stats: Stats, workers: int, web: int) -> None:
    ms = stats.ms["GET /health/"]
    print(
        f"/health/: {len(ms) / stats.seconds:.1f} requests/s, p50 {percentile(ms, 0.5):.1f} ms, "
        f"p99 {percentile(ms, 0.99):.1f} ms ({workers} clients, WEB_CONCURRENCY={web}, "
        f"{stats.seconds:.1f} s)"
    )
    print_cpu(stats, len(ms))


def print_burst(stats: Stats, workers: int, web: int) -> None:
    ms = stats.ms["GET first page"]
    statuses = ", ".join(f"{s}: {n:,}" for s, n in sorted(stats.statuses.items()))
    print(
        f"launch burst: {workers} new workers' first pages at once (WEB_CONCURRENCY={web}), "
        f"{stats.seconds:.2f} s: p50 {percentile(ms, 0.5):.0f} ms, p99 {percentile(ms, 0.99):.0f}"
        f" ms, max {max(ms, default=0):.0f} ms (target: p99 under 3 s at 200); statuses {statuses}"
    )
    print_cpu(stats, stats.requests)


def print_crowd(
    size: int, workers: int, think: float, stats: Stats, health: Stats, problems: list[str]
) -> None:
    cycles = len(stats.acknowledged) / stats.seconds
    health_rate = len(health.ms["GET /health/"]) / health.seconds
    print(
        f"crowd: {size:,} items, {workers} workers "
        f"{f'answering in about {think:g} s' if think else 'back to back'}, {stats.seconds:.1f} s, "
        f"{len(stats.acknowledged):,} answers acknowledged, {stats.requests:,} requests"
    )
    for kind, ms in sorted(stats.ms.items()):
        print(
            f"  {kind:<12} {len(ms):>7,}  {len(ms) / stats.seconds:8.1f}/s  "
            f"p50 {percentile(ms, 0.5):8.1f} ms  p99 {percentile(ms, 0.99):8.1f} ms"
        )
    statuses = ", ".join(f"{s}: {n:,}" for s, n in sorted(stats.statuses.items()))
    print(
        f"  statuses {statuses}; 5xx: {stats.server_errors()}; "
        f"resent on a closed keep-alive connection: {stats.reconnects}"
    )
    print(
        f"  full cycles {cycles:.1f}/s ÷ /health/ {health_rate:.1f}/s = {cycles / health_rate:.3f}"
    )
    print_cpu(stats, stats.requests)
    rate = stats.requests / stats.seconds
    if not think and workers > 1:
        print(
            f"  back to back, a request's mean time is at least {workers} workers ÷ "
            f"{rate:.0f} requests/s = {workers / rate:.2f} s (Little's law), whatever the server"
        )
    if think and stats.cpu and stats.requests:
        print_core_capacity(stats, think)
    print("  integrity:", "; ".join(problems) if problems else "ok (0 over redundancy, "
          "0 duplicated, 0 lost, no leftover leases)")  # fmt: skip


def print_core_capacity(stats: Stats, think: float) -> None:
    """Print the workers one web core carries at this think time, from the measured web CPU of a
    cycle: a worker asks for at most one cycle (page + answer) per think time."""
    web_ms = 1000 * stats.cpu["server"] / stats.requests
    carried = think / (2 * web_ms / 1000)
    busy = stats.cpu["server"] / stats.seconds
    p99 = max(percentile(ms, 0.99) for ms in stats.ms.values())
    print(
        f"  one web core carries about {carried:,.0f} workers answering every {think:g} s "
        f"({2 * web_ms:.1f} ms of web CPU a cycle); in this run the web server was busy "
        f"{busy:.2f} cores and the slowest kind's p99 was {p99:.0f} ms"
    )


def print_sizes(results: list[tuple[int, Stats]]) -> None:
    smallest = percentile(results[0][1].ms["GET task"], 0.5)
    print("GET task p50 by campaign size:")
    for size, stats in results:
        p50 = percentile(stats.ms["GET task"], 0.5)
        print(f"  {size:>9,} items: {p50:8.1f} ms  ({p50 / smallest:.2f}× the smallest)")


def print_server_errors(log_path: Path) -> None:
    lines = log_path.read_text(errors="replace").splitlines()
    errors = [line for line in lines if re.search(r"error|TIMEOUT|Booting", line, re.I)][-10:]
    print("  server log (last error lines):", *errors, sep="\n    ")


if __name__ == "__main__":
    main()
