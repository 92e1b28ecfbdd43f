"""Benchmark the researcher dashboard on large campaigns, in one run.

Builds A/B campaigns of 10,000, 100,000 and 1,000,000 judgments (workers grow with them),
their judgments spread over ``--hours`` hours as a week-long study's are (so the tallies have
the rows a real campaign has: hours × 8 shards × redundancy levels), builds each one's report
snapshot (the Celery job's work, timed here in-process), then requests the campaign page, the
progress poll and the campaign list (of all the campaigns built) through Django's test client,
every size in turn in each round, and prints the server time (median over the rounds) and the
number of SQL queries of each, next to the time of the
scan of all judgments that the live numbers used before tallies (``scan ms``). Targets: the
campaign page under 300 ms at 100,000 judgments (issue 8); the poll under 50 ms at 10^6
judgments with a flat ratio, and query counts that do not grow (issue 15).

Run from the repository root: ``.venv/bin/python bench/dashboard.py`` (a temp SQLite database)
or, as in production, with ``DATABASE_URL=postgres://…`` set (it creates its own campaigns
there and deletes them at the end). ``--sizes 10000 100000 1000000``, ``--repeat 7`` and
``--hours 168`` are the defaults; ``--no-report`` stores a stand-in snapshot of a real one's
size instead of building the report (to time the live numbers alone, quickly).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
from evalsite.env import tasks_inline_unless_brokered  # noqa: E402

tasks_inline_unless_brokered()  # a command-line process, like manage.py
TMP = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'bench.sqlite3'}")
os.environ.setdefault("EVALSITE_DATA_DIR", str(TMP / "var"))

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils import timezone  # noqa: E402

from annotation.models import Assignment, Campaign, Item, Judgment, Worker  # noqa: E402
from annotation.protocols import registry  # noqa: E402
from annotation.tallies import tallies_rebuild  # noqa: E402
from dashboard import services  # noqa: E402
from dashboard.models import Job  # noqa: E402
from tests.annotation.test_tallies import judgment_scan  # noqa: E402 -- the old live numbers

MODELS = ["gold", "retrieval", "generic-bot", "tiny-gpt2"]
CHOICES = ["first", "second", "both", "neither"]
REDUNDANCY = 5
BATCH = 5000


def campaign_build(judgments: int, workers: int, owner: User) -> Campaign:
    """Create a live A/B campaign with ``judgments`` judgments by ``workers`` workers."""
    slug = f"bench-dashboard-{judgments}"
    Campaign.objects.filter(slug=slug).delete()
    # The protocol's defaults as a researcher gets them: 1000 bootstrap resamples, not fewer.
    parameters = registry.get("pairwise").default_parameters()
    campaign = Campaign.objects.create(
        slug=slug,
        name=f"Bench: {judgments:,} judgments",
        protocol="pairwise",
        parameters=parameters,
        status=Campaign.Status.LIVE,
        redundancy=REDUNDANCY,
        owner=owner,
    )
    n_items = judgments // REDUNDANCY
    pairs = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1 :]]
    items = [
        Item(
            campaign=campaign,
            key=f"i{n}",
            payload={
                "context": [f"Context number {n}: I got a new puppy today."],
                "model_a": pairs[n % len(pairs)][0],
                "response_a": f"That is lovely {n}!",
                "model_b": pairs[n % len(pairs)][1],
                "response_b": f"ok {n}",
                "example": f"e{n}",
            },
        )
        for n in range(n_items)
    ]
    Item.objects.bulk_create(items, batch_size=BATCH)
    item_ids = list(
        Item.objects.filter(campaign=campaign).order_by("pk").values_list("pk", flat=True)
    )
    people = Worker.objects.bulk_create(
        [
            Worker(provider=Worker.Provider.SIMULATED, external_id=f"{slug}-w{w}")
            for w in range(workers)
        ],
        batch_size=BATCH,
    )
    people = list(Worker.objects.filter(external_id__startswith=f"{slug}-w").order_by("pk"))
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                campaign=campaign,
                worker=person,
                items_target=10,
                status=Assignment.Status.SUBMITTED,
                submitted_at=timezone.now(),
            )
            for person in people
        ],
        batch_size=BATCH,
    )
    by_worker = dict(Assignment.objects.filter(campaign=campaign).values_list("worker_id", "pk"))
    rows = []
    for n, item_id in enumerate(item_ids):
        for k in range(REDUNDANCY):
            person = people[(n * REDUNDANCY + k) % workers]
            rows.append(
                Judgment(
                    item_id=item_id,
                    worker=person,
                    assignment_id=by_worker[person.pk],
                    question="choice",
                    value=CHOICES[(n + k * (n % 3)) % 4],
                    presentation={"order": ["a", "b"]},
                    time_spent_ms=3000 + (n * 37 + k * 101) % 9000,
                )
            )
        if len(rows) >= BATCH:
            Judgment.objects.bulk_create(rows)
            rows = []
    Judgment.objects.bulk_create(rows)
    del assignments
    return campaign


def judgments_spread(campaign: Campaign, hours: int) -> None:
    """Move each judgment back by a pseudo-random whole number of hours below ``hours``: a
    study that ran that long, every hour with judgments of every level and shard."""
    judgment, item = Judgment._meta.db_table, Item._meta.db_table
    back = f"((id * 7919) %% 1000003 %% {hours})"
    shift = {
        "postgresql": f"created_at - {back} * interval '1 hour'",
        "sqlite": f"datetime(created_at, '-' || {back} || ' hours')",
    }[connection.vendor]
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {judgment} SET created_at = {shift} "  # noqa: S608
            f"WHERE item_id IN (SELECT id FROM {item} WHERE campaign_id = %s)",
            [campaign.pk],
        )


def snapshot_stand_in(campaign: Campaign, judgments: int) -> None:
    """Store a finished report job whose result is as large as a real one at 10^6 judgments
    (about 314 KB of JSON that does not compress away), without building the report."""
    rng = random.Random(judgments)
    rows = [[round(rng.random(), 6) for _ in range(100)] for _ in range(350)]
    # The shape the report job stores (dashboard.services: columns and rows per table).
    tables = {"columns": [f"c{n}" for n in range(100)], "rows": rows}
    Job.objects.create(
        campaign=campaign,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        progress=1.0,
        finished_at=timezone.now(),
        result={"judgments": judgments, "tables": {"stand_in": tables}, "figures": {}},
    )


def scan_ms(campaign: Campaign, repeat: int) -> float:
    """Median time of the scan of all judgments behind the live numbers before tallies."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        judgment_scan([campaign.pk], timezone.now())
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def timed(client: Client, url: str) -> float:
    """Return the server time of one request in ms (through Django's test client)."""
    started = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, (url, response.status_code)
    return elapsed


def queries(client: Client, url: str) -> int:
    """Return the number of SQL queries of one request."""
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    return len(captured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 100_000, 1_000_000],
        help="campaign sizes in judgments",
    )
    parser.add_argument("--repeat", type=int, default=7, help="requests timed per page")
    parser.add_argument(
        "--hours", type=int, default=168, help="hours the judgments are spread over"
    )
    parser.add_argument(
        "--no-report",
        action="store_true",
        help="store a stand-in snapshot of a real report's size instead of building one",
    )
    parser.add_argument(
        "--scan-repeat", type=int, default=3, help="runs of the old scan timed per size"
    )
    args = parser.parse_args()
    setup_test_environment()  # lets the test client in (ALLOWED_HOSTS) without a server
    call_command("migrate", verbosity=0)
    owner, _ = User.objects.get_or_create(
        username="bench-dashboard", defaults={"is_staff": True, "is_superuser": False}
    )
    client = Client()
    client.force_login(owner)
    print(
        f"database: {connection.vendor}; python {platform.python_version()}; {platform.machine()}"
    )
    built = []  # (size, workers, campaign, report seconds, build seconds)
    results = []
    try:
        for size in args.sizes:
            workers = max(10, size // 250)
            started = time.perf_counter()
            with transaction.atomic():
                campaign = campaign_build(size, workers, owner)
                judgments_spread(campaign, args.hours)
                tallies_rebuild([campaign.pk])  # what the submissions would have counted
            build_s = time.perf_counter() - started
            if connection.vendor == "postgresql":
                # What autovacuum does soon after a bulk load in production: fresh planner
                # statistics (without them the planner expects one row per table).
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            started = time.perf_counter()
            if args.no_report:
                snapshot_stand_in(campaign, size)
            else:
                job = Job.objects.create(campaign=campaign, kind=Job.Kind.REPORT)
                services.job_run(job.pk)
            report_s = time.perf_counter() - started
            built.append((size, workers, campaign, report_s, build_s))
            print(f"built {size:,} judgments in {build_s:.1f} s", flush=True)
        # Every size is timed in each round, in turn, so that the machine's load at one moment
        # does not favour one size; medians over the rounds.
        urls = {
            campaign.pk: {
                "page": reverse("dashboard:campaign", args=[campaign.slug]),
                "poll": reverse("dashboard:progress", args=[campaign.slug]),
                "list": reverse("dashboard:campaigns"),
            }
            for _, _, campaign, _, _ in built
        }
        times = {(pk, kind): [] for pk in urls for kind in ("page", "poll", "list")}
        for pk in urls:
            for url in urls[pk].values():
                client.get(url)  # warm caches (templates, the URL resolver, item counts)
        for _ in range(args.repeat):
            for pk, kinds in urls.items():
                for kind, url in kinds.items():
                    times[(pk, kind)].append(timed(client, url))
        print(
            f"\n{'judgments':>10} {'workers':>8} {'report job s':>13} {'page ms':>8} "
            f"{'queries':>8} {'poll ms':>8} {'queries':>8} {'list ms':>8} {'queries':>8}"
            f" {'scan ms':>8} {'tallies':>8}"
        )
        for size, workers, campaign, report_s, _ in built:
            page, poll, listing = (
                (statistics.median(times[(campaign.pk, kind)]), queries(client, url))
                for kind, url in urls[campaign.pk].items()
            )
            scan = scan_ms(campaign, args.scan_repeat)
            tallies = campaign.tallies.count()
            results.append((size, workers, page, poll, listing))
            print(
                f"{size:>10,} {workers:>8,} {report_s:>13.1f} {page[0]:>8.1f} {page[1]:>8} "
                f"{poll[0]:>8.1f} {poll[1]:>8} {listing[0]:>8.1f} {listing[1]:>8}"
                f" {scan:>8.1f} {tallies:>8,}",
                flush=True,
            )
    finally:
        for _, _, campaign, _, _ in built:
            Judgment.objects.filter(item__campaign=campaign).delete()
            Assignment.objects.filter(campaign=campaign).delete()
            campaign.delete()
        Worker.objects.filter(external_id__startswith="bench-dashboard-").delete()
    (small, w_small, page_small, poll_small, _) = results[0]
    (large, w_large, page_large, poll_large, _) = results[-1]
    print(
        f"\npoll at {large:,} judgments: {poll_large[0]:.1f} ms (target < 50 ms); "
        f"time ratio {poll_large[0] / poll_small[0]:.2f}x for {large / small:.0f}x the judgments; "
        f"queries {poll_small[1]} vs {poll_large[1]} "
        f"({'constant' if poll_large[1] <= poll_small[1] else 'GROWS'}: a large campaign's "
        "item count comes from the cache)"
    )
    print(
        f"campaign page at {large:,} judgments: {page_large[0]:.1f} ms (target < 300 ms); "
        f"queries {page_small[1]} at {small:,} judgments / {w_small} workers vs "
        f"{page_large[1]} at {large:,} / {w_large} "
        f"({'constant' if page_large[1] <= page_small[1] else 'GROWS'}); "
        f"time ratio {page_large[0] / page_small[0]:.2f}x for {large / small:.0f}x the judgments"
    )


if __name__ == "__main__":
    main()
