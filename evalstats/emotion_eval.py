"""Scores of an emotion classifier against gold labels, as the emotion tasks report them.

- EmoContext (SemEval-2019 Task 3): precision, recall and F1 per emotion class and the
  micro-averaged F1 over happy, sad and angry — ``others`` is not a class of the score, so a
  prediction of ``others`` is never a true positive and an emotion predicted for an ``others``
  item is a false positive (the paper's Table 5 layout).
- EmotionLines / EmotionX: weighted accuracy (WA, each class's accuracy weighted by its share
  of the gold labels, i.e. the overall accuracy) and unweighted accuracy (UWA, the mean of the
  per-class accuracies), over the evaluated labels (EmotionX: neutral, joy, sadness, anger).

Pure Python/pandas, no ORM. ``docs/statistics.md`` gives the formulas.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

EMOCONTEXT_CLASSES: tuple[str, ...] = ("happy", "sad", "angry")
EMOTIONX_LABELS: tuple[str, ...] = ("neutral", "joy", "sadness", "anger")


def _pairs(gold: Sequence[str], predicted: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    g, p = np.asarray(gold, dtype=object), np.asarray(predicted, dtype=object)
    if g.shape != p.shape or g.ndim != 1:
        raise ValueError(f"gold and predicted need the same length, got {g.shape} and {p.shape}")
    return g, p


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def emocontext_scores(
    gold: Sequence[str],
    predicted: Sequence[str],
    classes: Sequence[str] = EMOCONTEXT_CLASSES,
) -> pd.DataFrame:
    """Return per class and micro-averaged precision, recall, F1 and gold support.

    Rows: one per class, then ``micro`` over ``classes``. A class never predicted has
    precision 0 (no true positive among zero predictions), as the task's scorer treats it.
    """
    g, p = _pairs(gold, predicted)
    rows = []
    totals = np.zeros(3)
    for c in classes:
        tp = float(np.sum((p == c) & (g == c)))
        fp = float(np.sum((p == c) & (g != c)))
        fn = float(np.sum((p != c) & (g == c)))
        totals += (tp, fp, fn)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        rows.append(
            {
                "class": c,
                "precision": precision,
                "recall": recall,
                "f1": _f1(precision, recall),
                "support": int(tp + fn),
            }
        )
    tp, fp, fn = totals
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    rows.append(
        {
            "class": "micro",
            "precision": precision,
            "recall": recall,
            "f1": _f1(precision, recall),
            "support": int(tp + fn),
        }
    )
    return pd.DataFrame(rows, columns=["class", "precision", "recall", "f1", "support"])


def emotionlines_accuracy(
    gold: Sequence[str],
    predicted: Sequence[str],
    labels: Sequence[str] = EMOTIONX_LABELS,
) -> tuple[float, float, pd.DataFrame]:
    """Return (WA, UWA, per-label table) over the items whose gold label is in ``labels``.

    WA = sum_c (n_c / N) a_c, UWA = (1 / C) sum_c a_c, where a_c is the accuracy on the items
    of gold class c and n_c their number; labels without gold items are left out of UWA.
    """
    g, p = _pairs(gold, predicted)
    keep = np.isin(g, list(labels))
    g, p = g[keep], p[keep]
    rows = []
    for c in labels:
        n = int(np.sum(g == c))
        rows.append(
            {
                "label": c,
                "n": n,
                "accuracy": float(np.mean(p[g == c] == c)) if n else np.nan,
            }
        )
    table = pd.DataFrame(rows, columns=["label", "n", "accuracy"])
    if not len(g):
        return np.nan, np.nan, table
    present = table[table["n"] > 0]
    wa = float((present["accuracy"] * present["n"]).sum() / present["n"].sum())
    uwa = float(present["accuracy"].mean())
    return wa, uwa, table
