"""The A/B study's design for the planner (``evalstats.planner.pairs``): the items of the pair
of models with the fewest, ``redundancy`` judgments each from a shared pool; the win rate's
advantage over 50% (``manage.py plan ab``; with three models or more the review step adds
Bradley–Terry, ``plan bt``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.protocols.base import PLANNER_POOL
from evalstats.planner import ABDesign


def ab_design(
    parameters: Mapping[str, Any], *, redundancy: int, sizes: Mapping[str, int], n_boot: int
) -> ABDesign:
    """Return the design of an A/B draft with ``sizes`` items per pair of models."""
    return ABDesign(
        items=min(sizes.values()),
        judgments_per_item=redundancy,
        pool=max(PLANNER_POOL, redundancy),
    )
