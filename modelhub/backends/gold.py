"""The "Gold Response" pseudo-model: the human reply from the dataset, rated like a model."""

from collections.abc import Mapping, Sequence
from typing import Any

from modelhub.backends.base import Backend, Example


class Gold(Backend):
    """Return each example's reference reply."""

    name = "gold"

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        missing = [i for i, e in enumerate(examples) if not e.reference]
        if missing:
            raise ValueError(
                f"the gold backend needs a reference reply; examples {missing[:5]} have none"
            )
        return [e.reference or "" for e in examples]
