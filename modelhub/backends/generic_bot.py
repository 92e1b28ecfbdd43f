"""GenericBot, Meena's calibration baseline (PROTOCOLS.md §6): "I don't know" to questions,
"ok" to statements."""

from collections.abc import Mapping, Sequence
from typing import Any

from modelhub.backends.base import Backend, Example


class GenericBot(Backend):
    """Answer every question with "I don't know" and everything else with "ok"."""

    name = "generic_bot"

    def generate(self, examples: Sequence[Example], params: Mapping[str, Any]) -> list[str]:
        return ["I don't know." if _is_question(e.turns[-1]) else "ok" for e in examples]


def _is_question(turn: str) -> bool:
    # Meena's GenericBot keys on the question mark; trailing quotes or emoji don't hide it.
    return turn.rstrip(" \t\n\"')]").endswith("?")
