"""Snow et al. (2008) RTE labels imported with their real worker ids, then Dawid–Skene.

Reads ``../shared/data/snow2008/rte.standardized.tsv`` (800 items × 10 labels, 164 MTurk
workers, binary, with gold), writes it as a long JSONL file (item, worker, question, value),
creates an SSA campaign with one item per RTE pair and imports the file through
``import_judgments --format long`` (the "sensible" question carries the label: 1 = yes).
Then, on the judgments as the report reads them (``campaign_judgments_frame``): accuracy
against gold of majority vote (ties counted as half right, as a random tie-break would score
on average) and of Dawid–Skene; and Dawid–Skene once more with the labels dealt out to
pseudo-workers at random, one label per item each, as replaying the file through allocation
did (each pseudo-worker then mixes several real workers' labels). Also times the import and
a second, idempotent import of the same file.

Run from the repository root: ``.venv/bin/python bench/import_rte.py``. It uses a temp
SQLite database unless ``DATABASE_URL`` is set.
"""

from __future__ import annotations

import csv
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
from evalsite.env import tasks_inline_unless_brokered  # noqa: E402

tasks_inline_unless_brokered()  # a command-line process, like manage.py
TMP = Path(tempfile.mkdtemp(prefix="bench-import-rte-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'bench.sqlite3'}")

import django  # noqa: E402

django.setup()

import pandas as pd  # noqa: E402
from django.core.management import call_command  # noqa: E402

from annotation.judgment_reads import campaign_judgments_frame  # noqa: E402
from annotation.services import campaign_create, items_add  # noqa: E402
from evalstats.aggregation import dawid_skene, majority_vote  # noqa: E402

RTE = ROOT.parent / "shared" / "data" / "snow2008" / "rte.standardized.tsv"


def _accuracy(labels: pd.Series, gold: dict[str, str]) -> float:
    return sum(labels.get(k) == v for k, v in gold.items()) / len(gold)


def _mv_accuracy(frame: pd.DataFrame, gold: dict[str, str]) -> float:
    votes = majority_vote(frame)
    right = sum(
        0.5 if row.tied else float(row.label == gold[item]) for item, row in votes.iterrows()
    )
    return right / len(gold)


def main() -> None:
    if not RTE.exists():
        sys.exit(f"{RTE} is not here; see ../shared/data/README.md")
    with RTE.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    gold = {r["orig_id"]: "yes" if r["gold"] == "1" else "no" for r in rows}
    long = TMP / "rte.jsonl"
    long.write_text(
        "".join(
            json.dumps(
                {
                    "item": r["orig_id"],
                    "worker": r["!amt_worker_ids"],
                    "question": "entails",
                    "value": int(r["response"]),
                }
            )
            + "\n"
            for r in rows
        )
    )
    call_command("migrate", verbosity=0)
    campaign = campaign_create(slug="rte", name="Snow 2008 RTE", protocol="ssa", redundancy=10)
    items_add(
        campaign=campaign,
        items=[
            (key, {"context": [f"RTE pair {key}"], "response": "(hypothesis)", "model": "rte"})
            for key in sorted(gold, key=int)
        ],
    )
    args = [
        "import_judgments", "rte", str(long), "--format", "long", "--provider", "mturk",
        "--map", "entails=sensible", "--value", "sensible:1=yes", "--value", "sensible:0=no",
        "--set", "specific=no",
    ]  # fmt: skip
    start = time.perf_counter()
    call_command(*args)
    first = time.perf_counter() - start
    start = time.perf_counter()
    call_command(*args)
    second = time.perf_counter() - start
    frame = campaign_judgments_frame(campaign)
    labels = frame[frame["question"] == "sensible"][["item", "rater", "value"]]
    ds_labels, _accuracy_per_rater = dawid_skene(labels)
    rng = random.Random(0)
    replayed = labels.copy()
    pseudo = []
    for _item, group in replayed.groupby("item", sort=False):
        pseudo += rng.sample(range(labels["rater"].nunique()), len(group))
    replayed = replayed.sort_values("item", kind="stable")
    replayed["rater"] = pseudo
    replayed_labels, _ = dawid_skene(replayed)
    print(f"{len(rows):,} labels, {len(gold)} items, {labels['rater'].nunique()} workers")
    print(f"import: {first:.2f} s; the same file again: {second:.2f} s (stores nothing)")
    print(f"majority vote (ties half right): {_mv_accuracy(labels, gold):.4f}")
    print(f"Dawid–Skene, real worker ids:    {_accuracy(ds_labels, gold):.4f}")
    print(f"Dawid–Skene, labels dealt out:   {_accuracy(replayed_labels, gold):.4f}")


if __name__ == "__main__":
    main()
