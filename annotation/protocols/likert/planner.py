"""The Likert study's design for the planner (``evalstats.planner.likert``): the items of the
smallest model (the weakest comparison), one rating per worker per item, Holm over every
comparison the report tests: the models but one on each aspect."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalstats.planner import LikertDesign


def likert_design(
    parameters: Mapping[str, Any], *, redundancy: int, sizes: Mapping[str, int], n_boot: int
) -> LikertDesign:
    """Return the design of a Likert draft with ``sizes`` items per model."""
    aspects = max(1, len(parameters.get("aspects") or []))
    return LikertDesign(
        items_per_model=min(sizes.values()),
        ratings_per_item=redundancy,
        # the report's Holm runs over the aspects too (uncertainty.mean_comparisons)
        comparisons=max(1, len(sizes) - 1) * aspects,
    )
