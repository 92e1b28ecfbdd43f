"""EmotionLines on the real Friends files (../shared/data/emotionlines_friends), in one run:

- import time of the three JSON files (14,503 utterances) through ``import_dataset``;
- how often the EmotionLines rule on the 5 workers' votes gives the released label;
- Fleiss' kappa of those votes with a bootstrap 95% CI (published ≈ 0.34), and the label
  distribution (Table 4 style);
- with ``--classifier``: modelhub's EmotionClassifier (MiniLM embeddings + logistic
  regression) trained on the train split and scored on the test split with EmotionX's
  weighted and unweighted accuracy (neutral, joy, sadness, anger).

Run from the repository root: ``.venv/bin/python bench/emotionlines_friends.py``. It uses a
temp SQLite database unless ``DATABASE_URL`` is set.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
from evalsite.env import tasks_inline_unless_brokered  # noqa: E402

tasks_inline_unless_brokered()  # a command-line process, like manage.py
TMP = Path(tempfile.mkdtemp(prefix="bench-emotionlines-"))
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP / 'bench.sqlite3'}")

import django  # noqa: E402

django.setup()

import pandas as pd  # noqa: E402
from django.core.management import call_command  # noqa: E402

from annotation.dataset_reads import dataset_emotion_report  # noqa: E402
from annotation.models import Dataset, Utterance  # noqa: E402
from evalstats.emotion_eval import emotionlines_accuracy  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "emotionlines_friends"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classifier", action="store_true", help="Also train and score.")
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"{DATA} is absent: nothing to measure")
    call_command("migrate", verbosity=0)
    Dataset.objects.filter(name="bench-friends").delete()
    paths = [str(DATA / f"friends_{p}.json") for p in ("train", "dev", "test")]
    start = time.perf_counter()
    call_command(
        "import_dataset", "emotionlines", *paths, "--name", "bench-friends", "--source", "Friends"
    )
    print(f"import: {time.perf_counter() - start:.2f} s for {len(paths)} files")
    dataset = Dataset.objects.get(name="bench-friends")
    tables = dataset_emotion_report(dataset, n_boot=args.n_boot)
    with pd.option_context("display.width", 160, "display.precision", 3):
        for name, table in tables.items():
            print(f"\n[{name}]\n{table.to_string(index=False)}")
    if args.classifier:
        classify(dataset)


def classify(dataset: Dataset) -> None:
    from modelhub.backends.emotion import EmotionClassifier

    rows = pd.DataFrame(
        list(
            Utterance.objects.filter(dialogue__dataset=dataset).values_list(
                "dialogue__split", "text", "label"
            )
        ),
        columns=["split", "text", "label"],
    )
    train = rows[(rows["split"] == "train") & (rows["label"] != "non-neutral")]
    test = rows[rows["split"] == "test"]
    start = time.perf_counter()
    model = EmotionClassifier().fit(train["text"].tolist(), train["label"].tolist())
    predicted = model.predict(test["text"].tolist())
    wa, uwa, table = emotionlines_accuracy(test["label"].tolist(), predicted)
    print(f"\nclassifier (MiniLM + logistic regression), {time.perf_counter() - start:.0f} s")
    print(table.to_string(index=False))
    print(f"WA {wa * 100:.1f}%  UWA {uwa * 100:.1f}%  (test split, EmotionX labels)")


if __name__ == "__main__":
    main()
