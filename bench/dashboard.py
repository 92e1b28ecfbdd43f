"""Benchmark the researcher dashboard on large campaigns, in one run.

Builds A/B campaigns of 10,000 and 100,000 judgments (the second with ten times the workers),
builds each one's report snapshot (the Celery job's work, timed here in-process), then
requests the campaign page, the progress poll and the campaign list through Django's test
client, and prints the server time (median of repeated requests) and the number of SQL
queries of each. Targets (issue 8): the campaign page under 300 ms at 100,000 judgments, and
a query count that does not grow with the number of judgments or workers.

Run from the repository root: ``.venv/bin/python bench/dashboard.py`` (a temp SQLite database)
or, as in production, with ``DATABASE_URL=postgres://…`` set (it creates its own campaigns
there and deletes them at the end). ``--sizes 10000 100000`` and ``--repeat 7`` are the defaults.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
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
from dashboard import services  # noqa: E402
from dashboard.models import Job  # noqa: E402

MODELS = ["gold", "retrieval", "generic-bot", "tiny-gpt2"]
CHOICES = ["first", "second", "both", "neither"]
REDUNDANCY = 5
BATCH = 5000


def campaign_build(judgments: int, workers: int, owner: User) -> Campaign:
    """Create a live A/B campaign with ``judgments`` judgments by ``workers`` workers."""
    slug = f"bench-dashboard-{judgments}"
    Campaign.objects.filter(slug=slug).delete()
    parameters = registry.get("pairwise").default_parameters() | {"n_boot": 200}
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


def measure(client: Client, url: str, repeat: int) -> tuple[float, int]:
    """Return the median server time in ms over ``repeat`` requests and the query count."""
    client.get(url)  # warm caches (templates, the URL resolver)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    return statistics.median(times), len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=7)
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
    print(
        f"{'judgments':>10} {'workers':>8} {'report job s':>13} "
        f"{'page ms':>8} {'queries':>8} {'poll ms':>8} {'queries':>8} {'list ms':>8} {'queries':>8}"
    )
    results = []
    campaigns = []
    try:
        for size in args.sizes:
            workers = max(10, size // 250)
            started = time.perf_counter()
            with transaction.atomic():
                campaign = campaign_build(size, workers, owner)
            campaigns.append(campaign)
            build_s = time.perf_counter() - started
            if connection.vendor == "postgresql":
                # What autovacuum does soon after a bulk load in production: fresh planner
                # statistics (without them the planner expects one row per table).
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            job = Job.objects.create(campaign=campaign, kind=Job.Kind.REPORT)
            started = time.perf_counter()
            services.job_run(job.pk)
            report_s = time.perf_counter() - started
            page = measure(client, reverse("dashboard:campaign", args=[campaign.slug]), args.repeat)
            poll = measure(client, reverse("dashboard:progress", args=[campaign.slug]), args.repeat)
            listing = measure(client, reverse("dashboard:campaigns"), args.repeat)
            results.append((size, workers, page, poll, listing))
            print(
                f"{size:>10,} {workers:>8,} {report_s:>13.1f} {page[0]:>8.1f} {page[1]:>8} "
                f"{poll[0]:>8.1f} {poll[1]:>8} {listing[0]:>8.1f} {listing[1]:>8}"
                f"   (data built in {build_s:.1f} s)"
            )
    finally:
        for campaign in campaigns:
            Judgment.objects.filter(item__campaign=campaign).delete()
            Assignment.objects.filter(campaign=campaign).delete()
            campaign.delete()
        Worker.objects.filter(external_id__startswith="bench-dashboard-").delete()
    (small, w_small, page_small, *_), (large, w_large, page_large, *_) = results[0], results[-1]
    print(
        f"\ncampaign page at {large:,} judgments: {page_large[0]:.1f} ms (target < 300 ms); "
        f"queries {page_small[1]} at {small:,} judgments / {w_small} workers vs "
        f"{page_large[1]} at {large:,} / {w_large} "
        f"({'constant' if page_small[1] == page_large[1] else 'GROWS'}); "
        f"time ratio {page_large[0] / page_small[0]:.2f}x for {large / small:.0f}x the judgments"
    )


if __name__ == "__main__":
    main()
