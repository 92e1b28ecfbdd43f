"""The interactive SSA study's design for the planner (``evalstats.planner.chats``): the
parameters' conversations per model of ``min_turns``-``max_turns`` utterances, every other one
a labelled bot turn; it needs no items (the chats make them). Holm over every pair of models,
as the report's ``ssa_contrasts``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalstats.planner import ChatDesign


def chat_design(
    parameters: Mapping[str, Any], *, redundancy: int, sizes: Mapping[str, int], n_boot: int
) -> ChatDesign:
    """Return the design of an interactive SSA draft from its parameters."""
    low, high = int(parameters.get("min_turns", 14)), int(parameters.get("max_turns", 28))
    return ChatDesign(
        conversations_per_model=int(parameters.get("conversations_per_model", 100)),
        min_turns=max(1, low // 2),  # every other utterance is the bot's
        max_turns=max(1, low // 2, high // 2),
        n_boot=n_boot,
        # the report's ssa_contrasts test every pair of models (Holm)
        comparisons=max(1, len(sizes) * (len(sizes) - 1) // 2),
    )
