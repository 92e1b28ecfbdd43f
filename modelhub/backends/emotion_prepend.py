"""ED's emotion-prepend variant (PROTOCOLS.md §8): the top emotion predicted for the context
is prepended to the model's input ("proud I finally got promoted!").

Configuration::

    {"classifier": "var/models/emotion",          # a folder saved by EmotionClassifier.save
     "backend": "hf_local", "config": {"path": "/models/ed-finetuned"}}

The wrapped backend sees examples whose first turn starts with the label; scoring goes through
the same change, so perplexities are comparable with the model's training input.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from modelhub.backends.base import Backend, Example, Reply, TokenScores, config_check
from modelhub.backends.emotion import EmotionClassifier


class EmotionPrepend(Backend):
    """Prepend the predicted emotion to the context, then ask the wrapped backend."""

    name = "emotion_prepend"

    # The registry builds the wrapped backend (``backend`` and its ``config``) and passes it in.
    wraps = True

    def __init__(self, classifier: str, backend: Backend, config: dict | None = None) -> None:
        config_check(self.name, locals(), required=["classifier"], types={"classifier": str})
        self.inner = backend
        self.default_max_new_tokens = self.inner.default_max_new_tokens
        self.classifier = EmotionClassifier.load(classifier)

    def prepend(self, examples: Sequence[Example]) -> list[Example]:
        """Return the examples with the predicted label in front of their first turn."""
        labels = self.classifier.predict([" ".join(e.turns) for e in examples])
        return [
            replace(e, turns=(f"{label} {e.turns[0]}", *e.turns[1:])) if e.turns else e
            for e, label in zip(examples, labels, strict=True)
        ]

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        return [r.text for r in self.replies(examples, params)]

    def replies(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[Reply]:
        return self.inner.replies(self.prepend(examples), params) if examples else []

    def stream(self, example: Example, params: Mapping[str, Any]) -> Iterator[str | Reply]:
        return self.inner.stream(self.prepend([example])[0], params)

    def score(self, examples: Sequence[Example], responses: Sequence[str]) -> list[TokenScores]:
        return self.inner.score(self.prepend(examples), responses)

    @property
    def can_score(self) -> bool:
        return self.inner.can_score
