"""The static SSA study's design for the planner (``evalstats.planner.ssa``): the responses of
the smallest model, ``redundancy`` workers each from a shared pool, Holm over every pair of
models (the report's ``ssa_contrasts``: SSA has no reference model)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation.protocols.base import PLANNER_POOL
from evalstats.planner import SSADesign


def ssa_design(
    parameters: Mapping[str, Any], *, redundancy: int, sizes: Mapping[str, int], n_boot: int
) -> SSADesign:
    """Return the design of an SSA draft with ``sizes`` responses per model."""
    return SSADesign(
        responses_per_model=min(sizes.values()),
        raters_per_response=redundancy,
        pool=max(PLANNER_POOL, redundancy),
        comparisons=max(1, len(sizes) * (len(sizes) - 1) // 2),
    )
