"""The EmotionLines study's design for the planner (``evalstats.planner.kappa``): the
dialogues, their numbers of utterances, ``redundancy`` raters and the published kappa (0.34):
the expected width of kappa's interval (``manage.py plan kappa``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalstats.planner import KappaDesign


def kappa_design(
    parameters: Mapping[str, Any], *, redundancy: int, sizes: Mapping[str, int], n_boot: int
) -> KappaDesign:
    """Return the design of an EmotionLines draft with ``sizes`` utterances per dialogue."""
    lengths = list(sizes.values())
    return KappaDesign(
        dialogues=len(lengths),
        min_utterances=max(1, min(lengths)),
        max_utterances=max(1, max(lengths)),
        raters=redundancy,
        n_boot=n_boot,
    )
