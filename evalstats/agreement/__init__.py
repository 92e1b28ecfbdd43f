"""Measure inter-rater agreement: Krippendorff's alpha, Fleiss' and Cohen's kappa, % agreement.

Pure numpy/pandas, no ORM. ``docs/statistics.md`` states every formula, its conventions and its
sources. Two input layouts are accepted wherever ratings are: a long DataFrame with columns
``item``, ``rater``, ``value`` (one row per judgment), or a raters x items array with NaN (or
None) for a missing value; in a NumPy string array, the text "nan" (what ``np.asarray`` makes
of NaN among strings, and what the ``krippendorff`` package reads as missing).

Undefined is not invalid: malformed input raises ``ValueError``; a coefficient that is 0/0 on
well-formed data (no pairable values, a single category everywhere, one rater) returns NaN and
emits ``AgreementUndefinedWarning`` saying why, so a report over many campaigns shows "n/a"
instead of crashing, and nothing is NaN without a message.

Modules: ``coding`` (input layouts, per-item counts), ``alpha`` (Krippendorff's alpha, percent
agreement), ``kappa`` (Fleiss, Cohen), ``bootstrap`` (percentile intervals over items),
``twoway`` (the pigeonhole bootstrap over items x raters, the default when raters repeat),
``limits`` (the sizes at which dense arrays give way to sparse ones).
"""

from evalstats.agreement import limits
from evalstats.agreement.alpha import (
    _coincidences,
    _expected_sum,
    _metric,
    _pair_agreement,
    coincidence_matrix,
    krippendorff_alpha,
    percent_agreement,
)
from evalstats.agreement.bootstrap import (
    _alpha_features,
    _check_boot,
    _compress,
    _feature_bootstrap,
    _interval_features,
    _percentile,
    _resampled_sums,
    bootstrap_ci,
    fleiss_kappa_ci,
    interval_method,
    krippendorff_alpha_ci,
    long_ratings,
    percent_agreement_ci,
    two_way_interval,
)
from evalstats.agreement.coding import (
    COLUMNS,
    LEVELS,
    AgreementUndefinedWarning,
    Estimate,
    Level,
    Ratings,
    _Coded,
    _encode,
)
from evalstats.agreement.kappa import cohen_kappa, fleiss_kappa

__all__ = [
    "COLUMNS",
    "LEVELS",
    "AgreementUndefinedWarning",
    "Estimate",
    "Level",
    "Ratings",
    "bootstrap_ci",
    "cohen_kappa",
    "coincidence_matrix",
    "fleiss_kappa",
    "fleiss_kappa_ci",
    "interval_method",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "limits",
    "long_ratings",
    "percent_agreement",
    "percent_agreement_ci",
    "two_way_interval",
    # Internals used by ranking.py (the pattern bootstrap) and by the tests.
    "_Coded",
    "_alpha_features",
    "_check_boot",
    "_coincidences",
    "_compress",
    "_encode",
    "_expected_sum",
    "_feature_bootstrap",
    "_interval_features",
    "_metric",
    "_pair_agreement",
    "_percentile",
    "_resampled_sums",
]
