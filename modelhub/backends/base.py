"""The backend interface: a batch of examples in, one response per example out."""

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Example:
    """A dialogue context (oldest turn first) and, where the dataset has one, the human reply."""

    turns: tuple[str, ...]
    reference: str | None = None


class Backend(ABC):
    """A way to get responses from a model. No Django imports: testable alone."""

    name: ClassVar[str]

    @abstractmethod
    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        """Return one response per example, in order."""
