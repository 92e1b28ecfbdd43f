"""GenericBot, Meena's calibration baseline (PROTOCOLS.md §6): "I don't know" to questions,
"ok" to statements."""

import time
from collections.abc import Mapping, Sequence
from typing import Any

from modelhub.backends.base import Backend, Example


class GenericBot(Backend):
    """Answer every question with "I don't know" and everything else with "ok".

    ``delay_s`` makes it pretend to be a slow model (it sleeps that long per example); tests and
    benchmarks use it to have generation jobs that run long enough to be interrupted.
    """

    name = "generic_bot"

    def __init__(self, delay_s: float = 0.0) -> None:
        if isinstance(delay_s, bool) or not isinstance(delay_s, int | float) or delay_s < 0:
            raise ValueError(f"generic_bot: 'delay_s' must be a number ≥ 0, not {delay_s!r}")
        self.delay_s = float(delay_s)

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        if self.delay_s:
            time.sleep(self.delay_s * len(examples))
        return [
            "I don't know." if e.turns and _is_question(e.turns[-1]) else "ok" for e in examples
        ]


def _is_question(turn: str) -> bool:
    # Meena's GenericBot keys on the question mark; trailing quotes or emoji don't hide it.
    return turn.rstrip(" \t\n\"')]").endswith("?")
