"""Model-vs-model contrasts: every pair's difference with a Wald interval and Holm's verdict.

Reports that print one interval per model (Bradley–Terry strengths, SSA) invite reading
non-overlap as a difference, which has little power and no error control. ``pairwise_contrasts``
turns a vector of estimates and its covariance into every pair's difference, its standard
error (from the covariance, so correlated estimates such as log-strengths constrained to mean
0 are handled), a Wald interval, a two-sided z-test p-value, Holm's (1979) adjusted p over all
pairs of the table, and the verdict that adjusted p implies. Pure numpy/pandas.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from evalstats import ranking, ties
from evalstats.options import report_options
from evalstats.uncertainty import holm

CONTRAST_COLUMNS = [
    "model_a",
    "model_b",
    "difference",
    "se",
    "low",
    "high",
    "p",
    "p_holm",
    "verdict",
]
A_HIGHER = "A higher"
B_HIGHER = "B higher"


def no_difference(level: float) -> str:
    """Return the verdict of a pair whose Holm-adjusted p is not below 1 - ``level``."""
    return f"no difference at {100 * (1 - level):g}% (Holm)"


def pairwise_contrasts(
    names: list[str],
    estimates: np.ndarray,
    covariance: np.ndarray,
    *,
    level: float = 0.95,
) -> pd.DataFrame:
    """Return every pair (a, b), a before b in ``names``: a - b, its SE, CI, p, Holm p, verdict.

    ``estimates`` (k) and ``covariance`` (k x k) are on one scale (e.g. log-strengths); the
    difference's variance is Var(a) + Var(b) - 2 Cov(a, b). ``low``/``high`` are the Wald
    interval at ``level`` for that pair alone (not adjusted); ``p`` is the two-sided z-test of
    a zero difference and ``p_holm`` Holm's step-down adjustment over all pairs of the table.
    The verdict is "A higher" / "B higher" when ``p_holm`` < 1 - ``level``, else "no
    difference at 5% (Holm)" (for level 0.95); pairs with a missing estimate get NaN and
    the no-difference verdict. Columns: CONTRAST_COLUMNS.
    """
    estimates = np.asarray(estimates, dtype=float)
    covariance = np.asarray(covariance, dtype=float)
    k = len(names)
    if estimates.shape != (k,) or covariance.shape != (k, k):
        raise ValueError(
            f"need {k} estimates and a {k} x {k} covariance, got {estimates.shape} "
            f"and {covariance.shape}"
        )
    if not 0 < level < 1:
        raise ValueError("the level must be between 0 and 1")
    first, second = np.triu_indices(k, 1)
    difference = estimates[first] - estimates[second]
    variance = covariance[first, first] + covariance[second, second] - 2 * covariance[first, second]
    se = np.sqrt(np.maximum(variance, 0.0))
    z = float(stats.norm.ppf(0.5 + level / 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.where(se > 0, difference / se, np.nan)
    p = 2 * stats.norm.sf(np.abs(statistic))
    p_holm = holm(p)
    significant = p_holm < 1 - level
    verdict = np.where(
        significant & (difference > 0),
        A_HIGHER,
        np.where(significant & (difference < 0), B_HIGHER, no_difference(level)),
    )
    return pd.DataFrame(
        {
            "model_a": [names[i] for i in first],
            "model_b": [names[j] for j in second],
            "difference": difference,
            "se": se,
            "low": difference - z * se,
            "high": difference + z * se,
            "p": p,
            "p_holm": p_holm,
            "verdict": verdict,
        },
        columns=CONTRAST_COLUMNS,
    )


def bradley_terry_contrasts(
    outcomes: pd.DataFrame, *, ties_model: str = "half", prior: float = 0.0
) -> list[pd.DataFrame]:
    """Return per component of the comparison graph (largest first, as
    ``ranking.bradley_terry_components``) every pair's difference of log-strengths.

    ``ties_model`` is "half" (a tie as half a win each way, ``ranking.bradley_terry``) or
    "davidson" (``ties.davidson_fit``). Variances carry the design effect of items and raters
    like the strengths' intervals; Holm runs over the pairs of each component. A component
    with fewer than two fitted models gives an empty table (so tables and components align).
    """
    if outcomes.empty:
        return []
    level = report_options().level
    tables = []
    for models in ranking.comparison_components(outcomes):
        ia, _, _, _ = ties.judged(outcomes, models)
        if len(models) < 2 or not len(ia):
            tables.append(pd.DataFrame(columns=CONTRAST_COLUMNS))
            continue
        point, covariance, _ = ties.strengths(outcomes, models, ties=ties_model, prior=prior)
        tables.append(pairwise_contrasts(models, point, covariance, level=level))
    return tables
