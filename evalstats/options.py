"""The report options: how every report computes its intervals, set around one report.

The ``report`` command and the dashboard's report job set them with ``report_options_set``;
the statistics (intervals, tables, figures) read them with ``report_options``: a context
variable, so the functions between need no extra argument.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Literal

from evalstats.aggregation import AGGREGATES, Aggregate

METHODS = ("design", "independent")
# How agreement statistics and rates treat the raters (``agreement.twoway``): "auto" takes the
# two-way (units x raters) bootstrap when raters repeat across units, "two-way" always,
# "units" never (the one-way bootstrap over units, the intervals before issue #33).
INTERVALS = ("auto", "two-way", "units")


@dataclass(frozen=True)
class ReportOptions:
    """How a report computes its intervals (the ``report`` command's options).

    ``n_boot`` (None: each protocol's parameter) and ``seed`` for the bootstraps, ``level``
    of every interval, and ``method``: "design" (the default: intervals that respect the
    study's design) or "independent" (every judgment taken as independent, as the published
    papers did: for comparison only). ``aggregate`` names how the label protocols pick an
    item's label: "majority" (the default), "ds" (Dawid–Skene) or "mace"
    (``aggregation.labels_aggregate``). ``interval`` says whether the agreement statistics
    and rates resample raters too: "auto" (the default: the two-way bootstrap over units and
    raters when raters repeat across units, else over units), "two-way" or "units".
    """

    n_boot: int | None = None
    seed: int = 0
    level: float = 0.95
    method: Literal["design", "independent"] = "design"
    aggregate: Aggregate = "majority"
    interval: Literal["auto", "two-way", "units"] = "auto"


# A frozen dataclass: the default is immutable, so sharing it is safe.
_OPTIONS: ContextVar[ReportOptions] = ContextVar(
    "report_options",
    default=ReportOptions(),  # noqa: B039
)


def report_options() -> ReportOptions:
    """Return the report options in effect (the defaults unless ``report_options_set``)."""
    return _OPTIONS.get()


@contextmanager
def report_options_set(**changes: object) -> Iterator[ReportOptions]:
    """Build the reports inside this block with the given options changed."""
    options = replace(_OPTIONS.get(), **changes)  # type: ignore[arg-type]
    if options.method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {options.method!r}")
    if options.aggregate not in AGGREGATES:
        raise ValueError(
            f"aggregate must be one of {', '.join(AGGREGATES)}, got {options.aggregate!r}"
        )
    if options.interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {options.interval!r}")
    if not 0.0 < options.level < 1.0:
        raise ValueError(f"the level must lie strictly between 0 and 1, got {options.level}")
    if options.n_boot is not None and options.n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {options.n_boot}")
    token = _OPTIONS.set(options)
    try:
        yield options
    finally:
        _OPTIONS.reset(token)
