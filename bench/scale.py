"""Benchmark ``report`` and ``export`` at 10^4..10^6 judgments on PostgreSQL, in one run.

Creates Likert and A/B campaigns of each size straight in the database (COPY: several raters
per item, raters who differ: good, noisy and spamming workers with their own biases), then runs
``python manage.py report <slug>`` and ``python manage.py export <slug> --format <fmt>`` each in
a subprocess of its own, measuring wall time and peak RSS (``os.wait4``'s rusage of that
child), and prints one table plus the ratios the targets are about: time per judgment at the
smallest vs the largest size, and peak RSS at 10^5 vs 10^6 (flat memory: near 1).
Targets (issue 15): report and export at 10^6 judgments under 20 s and under 1 GB peak RSS.

Run from the repository root with a PostgreSQL database of your own::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python bench/scale.py \\
        --sizes 10000 100000 1000000 --formats parquet csv

It migrates that database, deletes its own campaigns (``bench-scale-*``) and their workers at
the end unless ``--keep``; with ``--keep`` a later run reuses campaigns of the same size.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
from evalsite.env import tasks_inline_unless_brokered  # noqa: E402

tasks_inline_unless_brokered()  # a command-line process, like manage.py

PROTOCOLS = ("pairwise", "likert")
FORMATS = ("parquet", "csv", "jsonl")
MODELS = ["gold", "retrieval", "generic-bot", "tiny-gpt2", "blender-90m"]
RELIABILITY = {"good": 0.6, "noisy": 0.3, "spammer": 0.1}  # share of workers of each kind
JUDGMENTS_PER_WORKER = 200
LIKERT_REDUNDANCY, PAIRWISE_REDUNDANCY = 3, 5


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 100_000, 1_000_000],
        help="Judgments per campaign (default 10000 100000 1000000).",
    )
    parser.add_argument(
        "--formats",
        nargs="+",
        choices=FORMATS,
        default=["parquet", "csv"],
        help="Export formats to time (default parquet csv).",
    )
    parser.add_argument(
        "--protocols",
        nargs="+",
        choices=PROTOCOLS,
        default=list(PROTOCOLS),
        help="Campaign kinds (default pairwise likert).",
    )
    parser.add_argument(
        "--no-report", action="store_true", help="Time only the exports, not the report."
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="Keep the campaigns (and reuse existing ones of the same size) instead of "
        "deleting them at the end.",
    )
    parser.add_argument(
        "--timeout", type=int, default=600, help="Seconds allowed to each command (default 600)."
    )
    return parser.parse_args()


# --- building campaigns -----------------------------------------------------------------------


def _copy(model: Any, rows: Any, values: dict[str, Any]) -> None:
    """COPY ``rows`` (dicts of field attname → value) into ``model``'s table.

    Columns are the model's concrete fields that the table has (another migration may be
    pending); a field that no row names takes ``values`` or else its default, once.
    """
    from django.db import connection

    table = model._meta.db_table
    with connection.cursor() as cursor:
        present = {c.name for c in connection.introspection.get_table_description(cursor, table)}
    now = datetime.now(UTC)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key and f.column in present]
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return
    constant: dict[str, Any] = {}
    for f in fields:
        if f.attname in first:
            continue
        if f.attname in values:
            constant[f.attname] = values[f.attname]
        elif getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False):
            constant[f.attname] = now
        else:
            constant[f.attname] = f.get_default()
    json_fields = {f.attname for f in fields if f.get_internal_type() == "JSONField"}

    def cell(f: Any, row: dict[str, Any]) -> Any:
        value = row[f.attname] if f.attname in row else constant[f.attname]
        if f.attname not in json_fields or (value is None and f.null):
            return value  # a nullable JSON field's None is SQL NULL, not JSON null
        return json.dumps(value)

    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in itertools.chain([first], rows):
            copy.write_row([cell(f, row) for f in fields])


def campaign_build(protocol: str, judgments: int) -> Any:
    """Create a live campaign of ``protocol`` with about ``judgments`` judgments."""
    import numpy as np
    from django.db import transaction

    from annotation.models import Assignment, Campaign, Item, Judgment, Participation, Worker
    from annotation.protocols import registry

    slug = f"bench-scale-{protocol}-{judgments}"
    rng = np.random.default_rng(judgments)
    likert = protocol == "likert"
    redundancy = LIKERT_REDUNDANCY if likert else PAIRWISE_REDUNDANCY
    questions = ["empathy", "relevance", "fluency"] if likert else ["choice"]
    n_items = max(1, judgments // (redundancy * len(questions)))
    n_workers = max(redundancy * 2, judgments // JUDGMENTS_PER_WORKER)
    kinds = rng.choice(list(RELIABILITY), size=n_workers, p=list(RELIABILITY.values()))
    bias = rng.normal(0, 0.4, n_workers)
    quality = {m: q for m, q in zip(MODELS, [4.2, 3.1, 2.4, 2.9, 3.6], strict=True)}
    pairs = [(a, b) for i, a in enumerate(MODELS) for b in MODELS[i + 1 :]]
    with transaction.atomic():
        campaign = Campaign.objects.create(
            slug=slug,
            name=f"Bench scale: {protocol}, {judgments:,} judgments",
            protocol=protocol,
            parameters=registry.get(protocol).default_parameters(),
            status=Campaign.Status.LIVE,
            redundancy=redundancy,
        )
        workers = Worker.objects.bulk_create(
            Worker(provider=Worker.Provider.SIMULATED, external_id=f"{slug}-w{w}")
            for w in range(n_workers)
        )
        assignments = Assignment.objects.bulk_create(
            Assignment(
                campaign=campaign,
                worker=w,
                status=Assignment.Status.SUBMITTED,
                items_target=10,
                submitted_at=datetime.now(UTC),
            )
            for w in workers
        )
        Participation.objects.bulk_create(
            Participation(
                campaign=campaign, worker=w, soft_blocked=kind == "spammer" and i % 7 == 0
            )
            for i, (w, kind) in enumerate(zip(workers, kinds, strict=True))
        )

        def item_rows() -> Any:
            for n in range(n_items):
                context = [f"Context {n}: I got a new puppy today and I can't stop smiling."]
                if likert:
                    model = MODELS[n % len(MODELS)]
                    payload = {"context": context, "response": f"How lovely! ({n})", "model": model}
                else:
                    a, b = pairs[n % len(pairs)]
                    payload = {
                        "context": context,
                        "model_a": a,
                        "response_a": f"That is lovely {n}!",
                        "model_b": b,
                        "response_b": f"What breed is it? {n}",
                        "example": f"e{n}",
                    }
                yield {"campaign_id": campaign.pk, "key": f"i{n}", "payload": payload}

        _copy(Item, item_rows(), {"judged": redundancy, "claims": redundancy})
        items = list(Item.objects.filter(campaign=campaign).order_by("pk").values_list("pk", "key"))
        started = datetime.now(UTC) - timedelta(days=3)

        def judgment_rows() -> Any:
            # Raters of an item: a random window of the workers (distinct within an item).
            starts = rng.integers(0, n_workers, n_items)
            noise = rng.normal(0, 1, (n_items, redundancy, len(questions)))
            flips = rng.random((n_items, redundancy)) < 0.5
            spent = rng.integers(4000, 60000, (n_items, redundancy))
            for n, (item_id, key) in enumerate(items):
                for r in range(redundancy):
                    w = (int(starts[n]) + r * 7) % n_workers
                    kind = kinds[w]
                    base = {
                        "item_id": item_id,
                        "worker_id": workers[w].pk,
                        "assignment_id": assignments[w].pk,
                        "time_spent_ms": int(spent[n, r]),
                        "created_at": started + timedelta(seconds=n + r),
                    }
                    if likert:
                        truth = quality[MODELS[int(key[1:]) % len(MODELS)]]
                        sd = 0.5 if kind == "good" else 1.3
                        for q, question in enumerate(questions):
                            if kind == "spammer":
                                value = int(rng.integers(1, 6))
                            else:
                                raw = truth + bias[w] + sd * noise[n, r, q]
                                value = int(min(5, max(1, round(raw))))
                            yield base | {"question": question, "value": value}
                        continue
                    a, b = pairs[int(key[1:]) % len(pairs)]
                    order = ["b", "a"] if flips[n, r] else ["a", "b"]
                    if kind == "spammer":
                        choice = ["first", "second", "both", "neither"][int(noise[n, r, 0] > 0) * 2]
                    else:
                        sd = 0.4 if kind == "good" else 1.2
                        diff = quality[a] - quality[b] + sd * noise[n, r, 0]
                        if abs(diff) < 0.25:
                            choice = "both" if diff > 0 else "neither"
                        else:
                            better = "a" if diff > 0 else "b"
                            choice = "first" if order[0] == better else "second"
                    yield base | {
                        "question": "choice",
                        "value": choice,
                        "presentation": {"order": order},
                    }

        _copy(Judgment, judgment_rows(), {"presentation": {}})
    from django.db import connection

    # VACUUM as well as ANALYZE: the state autovacuum leaves a campaign collected over days
    # in. Without it autovacuum set about the million new rows during the timed commands and
    # shared the cores with them (pairwise CSV export at 10^6: 22.9 s, against 18.0 s after).
    with connection.cursor() as cursor:  # autocommit: VACUUM runs outside a transaction
        for model in (Item, Judgment, Worker, Assignment):
            cursor.execute(f"VACUUM (ANALYZE) {model._meta.db_table}")
    return campaign


def campaigns_delete(prefix: str = "bench-scale-") -> None:
    """Delete the benchmark's campaigns, their judgments and their workers."""
    from django.db import transaction

    from annotation.models import Assignment, Campaign, Judgment, Worker

    with transaction.atomic():
        campaigns = Campaign.objects.filter(slug__startswith=prefix)
        Judgment.objects.filter(item__campaign__in=campaigns).delete()
        Assignment.objects.filter(campaign__in=campaigns).delete()
        campaigns.delete()
        Worker.objects.filter(external_id__startswith=prefix).delete()


# --- measuring --------------------------------------------------------------------------------


def measure(args: list[str], timeout: int) -> tuple[float, float, float, str]:
    """Run ``manage.py args`` in a child; return wall and CPU seconds (user + system: what
    other load on the machine does not inflate), peak RSS in MB, and the output's tail."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), *args], stdout=out, stderr=subprocess.STDOUT
        )
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed ({status}):\n{text[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, usage.ru_maxrss / 1024, text[-400:]


def main() -> None:
    options = parse_args()
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from annotation.models import Campaign, Judgment

    if connection.vendor != "postgresql":
        raise SystemExit("bench/scale.py needs PostgreSQL: set DATABASE_URL=postgres://…")
    call_command("migrate", verbosity=0)
    print(
        f"report/export at scale | PostgreSQL {connection.pg_version} | Python "
        f"{platform.python_version()} | {os.cpu_count()} CPU(s) | database "
        f"{settings.DATABASES['default']['NAME']}"
    )
    rows: list[tuple[str, int, str, float, float, float]] = []
    out_dir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        for protocol in options.protocols:
            for size in options.sizes:
                slug = f"bench-scale-{protocol}-{size}"
                campaign = Campaign.objects.filter(slug=slug).first()
                if campaign is None or not options.keep:
                    if campaign is not None:
                        campaigns_delete(slug)
                    started = time.perf_counter()
                    campaign = campaign_build(protocol, size)
                    built = time.perf_counter() - started
                    print(f"built {slug} in {built:.1f} s", flush=True)
                n = Judgment.objects.filter(item__campaign=campaign).count()
                tasks = [] if options.no_report else [("report", ["report", slug])]
                for fmt in options.formats:
                    path = out_dir / f"{slug}.{fmt}"
                    tasks.append(
                        (f"export {fmt}", ["export", slug, "--format", fmt, "--out", str(path)])
                    )
                for what, args in tasks:
                    seconds, cpu, rss, _ = measure(args, options.timeout)
                    rows.append((protocol, n, what, seconds, cpu, rss))
                    print(
                        f"  {protocol:<8} {n:>9,} {what:<14} {seconds:7.2f} s (CPU {cpu:6.2f} s) "
                        f"{rss:7.0f} MB",
                        flush=True,
                    )
                for path in out_dir.iterdir():
                    path.unlink()
    finally:
        if not options.keep:
            campaigns_delete()
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
    table_print(rows)


def table_print(rows: list[tuple[str, int, str, float, float, float]]) -> None:
    """Print the measurements and the ratios between the smallest and largest sizes."""
    print(f"\n| {'protocol':<8} | {'judgments':>9} | {'command':<14} | {'wall s':>7} | "
          f"{'CPU s':>7} | {'µs/judgment':>11} | {'peak RSS MB':>11} |")  # fmt: skip
    print(f"|{'-' * 10}|{'-' * 11}|{'-' * 16}|{'-' * 9}|{'-' * 9}|{'-' * 13}|{'-' * 13}|")
    for protocol, n, what, seconds, cpu, rss in rows:
        print(
            f"| {protocol:<8} | {n:>9,} | {what:<14} | {seconds:7.2f} | {cpu:7.2f} | "
            f"{seconds / n * 1e6:11.1f} | {rss:11.0f} |"
        )
    print()
    keys = dict.fromkeys((p, w) for p, _, w, _, _, _ in rows)
    for protocol, what in keys:
        mine = sorted((n, s, r) for p, n, w, s, _, r in rows if (p, w) == (protocol, what))
        if len(mine) < 2:
            continue
        (n0, s0, r0), (n1, s1, r1) = mine[0], mine[-1]
        line = (
            f"{protocol:<8} {what:<14} time per judgment {n1:,} vs {n0:,}: "
            f"{(s1 / n1) / (s0 / n0):5.2f}x; peak RSS {n1:,} vs {n0:,}: {r1 / r0:5.2f}x"
        )
        mid = [m for m in mine if 9 <= n1 / m[0] <= 11]
        if mid and mid[0] != mine[0]:  # the 10x step, when the smallest size is not it
            line += f"; peak RSS {n1:,} vs {mid[0][0]:,}: {r1 / mid[0][2]:5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
