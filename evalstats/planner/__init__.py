"""Plan a study: the power to detect a difference, and the difference detectable.

Pure numpy/pandas, no ORM. A design (items per model, ratings per item, a pool of raters or
fresh ones) and the variance components of the ratings (item, rater leniency, noise: assumed,
or estimated from a pilot with ``likert_components``) give, by simulating studies analysed
exactly as the report analyses them (``uncertainty.crossed_contrast``), the power to find a
model better than its reference, and the difference found with a given power
(docs/statistics.md, "Planning a study").

One module per protocol family: likert.py, ssa.py, pairs.py (A/B win rates, Bradley–Terry),
chats.py (interactive SSA), kappa.py (EmotionLines); common.py holds the Plan; found.py the
one answer (``design_found``) that the wizard's review step and ``manage.py plan`` print.
"""

from evalstats.planner.chats import ChatDesign, chat_difference, chat_labels, chat_plan
from evalstats.planner.common import Plan
from evalstats.planner.found import Found, design_found
from evalstats.planner.kappa import EMOTION_SHARES, KappaDesign, KappaPlan, kappa_plan, kappa_votes
from evalstats.planner.likert import LikertDesign, likert_components, likert_plan
from evalstats.planner.pairs import (
    AB_EDGE,
    ABDesign,
    BTDesign,
    ab_detectable,
    ab_outcomes,
    ab_plan,
    ab_reachable,
    ab_win_rate,
    bt_difference,
    bt_plan,
    bt_votes,
)
from evalstats.planner.ssa import SSADesign, ssa_plan

__all__ = [
    "AB_EDGE",
    "EMOTION_SHARES",
    "ABDesign",
    "BTDesign",
    "ChatDesign",
    "Found",
    "KappaDesign",
    "KappaPlan",
    "LikertDesign",
    "Plan",
    "SSADesign",
    "ab_detectable",
    "ab_outcomes",
    "ab_plan",
    "ab_reachable",
    "ab_win_rate",
    "bt_difference",
    "bt_plan",
    "bt_votes",
    "chat_difference",
    "chat_labels",
    "chat_plan",
    "design_found",
    "kappa_plan",
    "kappa_votes",
    "likert_components",
    "likert_plan",
    "ssa_plan",
]
