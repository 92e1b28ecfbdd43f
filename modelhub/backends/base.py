"""The backend interface: a batch of examples in, one response per example out.

Backends import nothing from Django, so each one can be built and tested alone. A backend's
constructor takes its configuration as keyword arguments and raises ``ValueError`` with a clear
message when the configuration is wrong; heavy resources (weights, connections) are loaded on
first use, so validating a configuration is cheap.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Example:
    """A dialogue context (oldest turn first) and, where the dataset has one, the human reply."""

    turns: tuple[str, ...]
    reference: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Return the JSON form stored with generations and jobs."""
        return {"turns": list(self.turns), "reference": self.reference}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Example:
        """Build an example from its JSON form; raise ValueError when it is malformed."""
        turns = data.get("turns") if isinstance(data, Mapping) else None
        if not isinstance(turns, list | tuple) or not all(isinstance(t, str) for t in turns):
            raise ValueError(f"an example needs 'turns', a list of strings; got {data!r:.200}")
        reference = data.get("reference")
        if reference is not None and not isinstance(reference, str):
            raise ValueError(f"an example's 'reference' must be a string; got {reference!r:.80}")
        return cls(turns=tuple(turns), reference=reference)


@dataclass(frozen=True)
class TokenScores:
    """The log-likelihood (natural log) of each token of a response given its context."""

    logprobs: tuple[float, ...]

    @property
    def total(self) -> float:
        return math.fsum(self.logprobs)

    @property
    def mean(self) -> float:
        """Return the length-normalised log-likelihood (per token)."""
        return self.total / len(self.logprobs) if self.logprobs else float("-inf")


FINISH_STOP = "stop"  # the model ended its reply (or the backend does not decode)
FINISH_LENGTH = "length"  # cut at max_new_tokens: the reply is not complete


@dataclass(frozen=True)
class Reply:
    """A response with what a report needs to trust it.

    ``finish_reason`` is ``"stop"`` when the model ended the reply itself and ``"length"`` when
    it was cut at ``max_new_tokens`` (a truncated reply); ``prompt_format`` names the exact
    format the context was rendered in (``chat_template:<sha256 prefix>``, ``joined:<sep>``,
    ``messages:<…>``), so two generations with different formats are told apart.
    """

    text: str
    finish_reason: str = FINISH_STOP
    prompt_format: str = ""

    @property
    def truncated(self) -> bool:
        return self.finish_reason == FINISH_LENGTH


def context_text(turns: Sequence[str], separator: str) -> str:
    """Join a dialogue context into one model input, oldest turn first."""
    return separator.join(t.strip() for t in turns)


class BackendError(RuntimeError):
    """The model could not answer: a clear, final error (bad request, garbage answer)."""


class TransientBackendError(BackendError):
    """The model could not answer now but may later (server down, timeout, overloaded)."""


class Backend(ABC):
    """A way to get responses from a model. No Django imports: testable alone."""

    name: ClassVar[str]
    # A wrapper around another backend (named by its ``backend`` option): the registry builds
    # that one and passes it in.
    wraps: ClassVar[bool] = False
    # The reply length limit when an endpoint's decoding names none (filled in at
    # registration): short for the dialogue models of the papers, long for chat models.
    default_max_new_tokens: int = 40

    @abstractmethod
    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        """Return one response per example, in order.

        ``params`` are decoding parameters (see ``modelhub.decoding``); backends that do not
        decode (rules, retrieval, gold) accept and ignore the sampling ones.
        """

    def replies(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[Reply]:
        """Return one ``Reply`` per example, in order: the text with its finish reason and
        prompt format. Backends that decode override it; the others never truncate."""
        return [Reply(text=text) for text in self.generate(examples, params)]

    def stream(self, example: Example, params: Mapping[str, Any]) -> Iterator[str | Reply]:
        """Yield the reply to one example as the model writes it: text pieces (``str``, to be
        concatenated), then the whole ``Reply`` last, exactly once.

        A backend that cannot stream (rules, retrieval, sample-and-rank, which must see every
        sample first) yields the whole text as one piece. An error raised mid-stream means
        the reply is lost: callers store only the final ``Reply``, never the pieces.
        """
        reply = self.replies([example], params)[0]
        if reply.text:
            yield reply.text
        yield reply

    def score(self, examples: Sequence[Example], responses: Sequence[str]) -> list[TokenScores]:
        """Return the per-token log-likelihood of each response given its example's context."""
        raise NotImplementedError(f"the {self.name} backend cannot score responses")

    @property
    def can_score(self) -> bool:
        """Say whether ``score`` is implemented (for perplexity and sample-and-rank)."""
        return type(self).score is not Backend.score


def config_check(
    backend: str,
    config: Mapping[str, Any],
    *,
    required: Sequence[str] = (),
    types: Mapping[str, type | tuple[type, ...]] | None = None,
) -> None:
    """Raise ValueError when required keys are missing or values have the wrong type."""
    missing = [k for k in required if config.get(k) in (None, "")]
    if missing:
        raise ValueError(f"the {backend} backend needs {', '.join(map(repr, missing))}")
    for key, kind in (types or {}).items():
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            raise ValueError(f"{backend}: {key!r} must be a number, not {value!r}")
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise ValueError(f"{backend}: {key!r} must be {names}, not {value!r:.80}")
