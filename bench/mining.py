"""Candidate mining (EmoContext, PROTOCOLS.md §5): seeds and pool from different sources.

Mining finds the pool's dialogues that resemble labeled seeds; if seeds and pool came from the
same templates, every emotional pool item would have a near-copy among the seeds and mining
would look better than it is. So the two never share a source:

- with the shared data folder (``../shared/data``, or ``--data``): seeds are 3-turn windows of
  EmotionLines (Friends, train split) ending on a joy / sadness / anger line; the pool is
  3-turn windows of MELD's dev and test splits, labeled by their last line (joy → happy,
  sadness → sad, anger → angry, anything else → others), with any window whose last line is
  also a seed's dropped (MELD re-annotates EmotionLines' dialogues);
- without it: seeds from ``annotation.mining.synthetic_dialogues`` (its templates), the pool
  from this file's own, differently worded templates.

The pool is drawn with 10% emotional windows (``--emotional-share``), as a mining pool is
mostly "others". Embeds once with MiniLM; per threshold, prints the candidates sent to the
judges, the emotional items found, and the emotional items per judgment of mining and of
random sampling for the same number found (7 judges per item), with the judgments saved
(published: 5x fewer).

Run from the repository root: ``.venv/bin/python bench/mining.py``. No database.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from annotation.mining import (  # noqa: E402
    candidates_mine,
    dialogue_text,
    minilm_embed,
    savings,
    synthetic_dialogues,
)

EMOTIONS = ("happy", "sad", "angry")
CLASS_OF = {"joy": "happy", "sadness": "sad", "anger": "angry"}
Labeled = list[tuple[str, str]]  # (dialogue text, class)

# The pool's templates when there is no real data: worded unlike annotation.mining's seeds.
_POOL_OPENERS = ["yo", "u around?", "quick question", "can we talk", "hello!", "sup", "heyy"]
_POOL_REPLIES = ["yeah what's up", "always, go on", "sure, tell me", "I'm listening", "hmm?"]
_POOL_LAST = {
    "happy": [
        "we won the finals, best day ever",
        "my sister had her baby and everyone is so excited",
        "got accepted to the program I wanted, can't stop smiling",
        "the concert was amazing, I'm still buzzing",
        "my paper got published, super proud",
        "finished the renovation and the house looks great",
    ],
    "sad": [
        "the vet said there is nothing more they can do",
        "I didn't get the job and I feel empty",
        "my parents are splitting up",
        "I spent the whole weekend alone again",
        "we had to sell the family house",
        "my plant died, I know it's silly but I'm down",
    ],
    "angry": [
        "the landlord kept my deposit for nothing, unbelievable",
        "my coworker took credit for my work again",
        "someone keyed my bike, I want to scream",
        "the bank charged me twice and won't fix it",
        "you never listen to anything I say",
        "they hung up on me after an hour on hold",
    ],
    "others": [
        "is the library open on sundays",
        "I'm thinking of learning to cook rice properly",
        "the train leaves at half past seven",
        "what's a good laptop for school",
        "I moved my desk next to the window",
        "do you prefer tea or coffee",
        "we need more printer paper",
        "the match starts at eight",
        "I'm trying a new route to work",
        "how many cups in a litre",
    ],
}
_POOL_TAILS = ["", " haha", " ngl", " just saying", " :)", " you know", " fr"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=ROOT.parent / "shared" / "data",
        help="the shared data folder (EmotionLines and MELD); synthetic data without it",
    )
    parser.add_argument("--seeds", type=int, default=300, help="seeds per class (default 300)")
    parser.add_argument("--pool", type=int, default=3000, help="pool size (default 3000)")
    parser.add_argument(
        "--emotional-share", type=float, default=0.1, help="emotional share of the pool"
    )
    args = parser.parse_args()
    real = (args.data / "emotionlines_friends").is_dir() and (args.data / "meld").is_dir()
    if real:
        seed_rows = _emotionlines_windows(args.data / "emotionlines_friends" / "friends_train.json")
        seen = {last for _, _, last in seed_rows}
        pool_rows = [
            row
            for split in ("dev", "test")
            for row in _meld_windows(args.data / "meld" / f"{split}_sent_emo.csv")
            if row[2] not in seen
        ]
        source = "seeds: EmotionLines train; pool: MELD dev+test (lines shared with seeds dropped)"
    else:
        seed_rows = [
            (dialogue_text(t), lab, t[-1])
            for t, lab in synthetic_dialogues(3000, emotion_share=1.0, seed=1)
        ]
        pool_rows = _synthetic_pool(4 * args.pool, seed=2)
        source = "synthetic: seeds from annotation.mining's templates, pool from this file's"
    seeds = _seeds([(text, label) for text, label, _ in seed_rows], args.seeds)
    pool, labels = _pool([(text, label) for text, label, _ in pool_rows], args)
    cache: dict[str, np.ndarray] = {}

    def embed(texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            cache.update(zip(missing, minilm_embed(missing), strict=True))
        return np.stack([cache[t] for t in texts])

    print(source)
    start = time.perf_counter()
    embed(pool + [t for texts in seeds.values() for t in texts])
    print(f"embedded {len(cache)} distinct texts in {time.perf_counter() - start:.1f} s")
    print(
        f"seeds: {', '.join(f'{c} {len(t)}' for c, t in seeds.items())}; pool: {len(pool)} "
        f"dialogues, {sum(lab in EMOTIONS for lab in labels)} emotional"
    )
    for threshold in (0.5, 0.6, 0.7):
        found = candidates_mine(seeds, pool, threshold=threshold, embed=embed)
        result = savings([labels[i] for i in found["index"]], labels, emotions=EMOTIONS)
        print(f"\nthreshold {threshold}")
        for line in result.lines():
            print("  " + line)


def _windows(lines: list[tuple[str, str]]) -> Iterable[tuple[str, str, str]]:
    """Yield (text, class, last line) for each 3-turn window of one dialogue's lines."""
    for i in range(2, len(lines)):
        turns = [text for text, _ in lines[i - 2 : i + 1]]
        yield dialogue_text(turns), CLASS_OF.get(lines[i][1], "others"), _norm(turns[-1])


def _norm(text: str) -> str:
    return " ".join(text.replace("\x92", "'").replace("’", "'").lower().split())


def _emotionlines_windows(path: Path) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for dialogue in json.loads(path.read_text(encoding="utf-8")):
        lines = [(u["utterance"].replace("\x92", "'"), u["emotion"]) for u in dialogue]
        rows.extend(_windows(lines))
    return rows


def _meld_windows(path: Path) -> list[tuple[str, str, str]]:
    dialogues: dict[str, list[tuple[int, str, str]]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            text = row["Utterance"].replace("\x92", "'").replace("’", "'")
            key = row["Dialogue_ID"]
            dialogues.setdefault(key, []).append((int(row["Utterance_ID"]), text, row["Emotion"]))
    rows: list[tuple[str, str, str]] = []
    for lines in dialogues.values():
        rows.extend(_windows([(text, emotion) for _, text, emotion in sorted(lines)]))
    return rows


def _synthetic_pool(n: int, *, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rng.choice(EMOTIONS) if rng.random() < 0.5 else "others"
        last = rng.choice(_POOL_LAST[label]) + rng.choice(_POOL_TAILS)
        turns = [rng.choice(_POOL_OPENERS), rng.choice(_POOL_REPLIES), last]
        rows.append((dialogue_text(turns), label, _norm(last)))
    return rows


def _seeds(rows: Labeled, per_class: int) -> dict[str, list[str]]:
    rng = random.Random(1)
    seeds = {}
    for emotion in EMOTIONS:
        texts = list(dict.fromkeys(text for text, label in rows if label == emotion))
        rng.shuffle(texts)
        seeds[emotion] = texts[:per_class]
    return seeds


def _pool(rows: Labeled, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Draw the pool: ``--pool`` windows, ``--emotional-share`` of them emotional."""
    rng = random.Random(2)
    emotional = [r for r in dict.fromkeys(rows) if r[1] in EMOTIONS]
    others = [r for r in dict.fromkeys(rows) if r[1] not in EMOTIONS]
    n_emotional = round(args.pool * args.emotional_share)
    n_others = args.pool - n_emotional
    if len(emotional) < n_emotional or len(others) < n_others:  # a small source: keep the share
        scale = min(len(emotional) / max(n_emotional, 1), len(others) / max(n_others, 1))
        n_emotional, n_others = int(n_emotional * scale), int(n_others * scale)
    drawn = rng.sample(emotional, n_emotional) + rng.sample(others, n_others)
    rng.shuffle(drawn)
    return [text for text, _ in drawn], [label for _, label in drawn]


if __name__ == "__main__":
    main()
