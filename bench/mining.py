"""Candidate mining (EmoContext, PROTOCOLS.md §5) on a synthetic pool with known labels.

Embeds 300 seeds per class and a pool of 3,000 3-turn dialogues (10% emotional) once with
MiniLM, then, per threshold, prints the candidates sent to the judges, the emotional items
found, and the emotional items per judgment of mining and of random sampling for the same
number found (7 judges per item), with the judgments saved (published: 5x fewer).

Run from the repository root: ``.venv/bin/python bench/mining.py``. No database.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.mining import (  # noqa: E402
    candidates_mine,
    dialogue_text,
    minilm_embed,
    savings,
    synthetic_dialogues,
)

EMOTIONS = ("happy", "sad", "angry")


def main() -> None:
    made = synthetic_dialogues(1500, emotion_share=1.0, seed=1)
    seeds = {c: [dialogue_text(t) for t, lab in made if lab == c][:300] for c in EMOTIONS}
    drawn = synthetic_dialogues(3000, emotion_share=0.1, seed=2)
    pool = [dialogue_text(t) for t, _ in drawn]
    labels = [lab for _, lab in drawn]
    cache: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            cache.update(zip(missing, minilm_embed(missing), strict=True))
        return np.stack([cache[t] for t in texts])

    start = time.perf_counter()
    embed(pool + [t for texts in seeds.values() for t in texts])
    print(f"embedded {len(cache)} distinct texts in {time.perf_counter() - start:.1f} s")
    print(f"pool: {len(pool)} dialogues, {sum(lab in EMOTIONS for lab in labels)} emotional")
    for threshold in (0.5, 0.6, 0.7):
        found = candidates_mine(seeds, pool, threshold=threshold, embed=embed)
        result = savings([labels[i] for i in found["index"]], labels, emotions=EMOTIONS)
        print(f"\nthreshold {threshold}")
        for line in result.lines():
            print("  " + line)


if __name__ == "__main__":
    main()
