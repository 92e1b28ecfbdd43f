"""Emotion-labeling tables, shared by EmotionLines, EmoContext and the dialogue exports.

Votes per utterance, gold labels by EmotionLines' rule, the label distribution (EmotionLines'
Table 4), Fleiss' kappa per source with a bootstrap over dialogues, and the distribution
figure. Pure pandas: reports and exports pass DataFrames.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from evalstats import aggregation, agreement, cluster_bootstrap, figures
from evalstats.agreement import twoway
from evalstats.options import ReportOptions, report_options

NON_NEUTRAL = aggregation.NON_NEUTRAL


def utterance_votes(
    items: pd.DataFrame, judgments: pd.DataFrame, labels: Sequence[str]
) -> pd.DataFrame:
    """Return one row per judged utterance: item, utterance, source, dialogue, votes per label.

    Votes outside ``labels`` (a label set changed mid-campaign) are not counted.
    """
    columns = ["item", "utterance", "source", *labels]
    if judgments.empty:
        return pd.DataFrame(columns=columns)
    j = judgments[judgments["question"].astype(str).str.fullmatch(r"u\d{1,3}")]
    j = j.assign(utterance=j["question"].str[1:].astype(int))
    j = j[j["value"].isin(list(labels))]
    table = (
        j.groupby(["item", "utterance", "value"])
        .size()
        .unstack("value", fill_value=0)
        .reindex(columns=list(labels), fill_value=0)
        .reset_index()
    )
    sources = items.set_index("item")["payload"].map(lambda p: p.get("source") or "")
    table.insert(2, "source", table["item"].map(sources).fillna(""))
    table.columns.name = None
    return table[columns]


def utterance_judgments(judgments: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Return one row per vote: ``item`` (the dialogue), ``utterance``, ``rater``, ``value``.

    What the two-way interval of ``kappa_by_source`` resamples (dialogues x workers); votes
    outside ``labels`` are left out, as in ``utterance_votes``.
    """
    columns = ["item", "utterance", "rater", "value"]
    if judgments.empty:
        return pd.DataFrame(columns=columns)
    j = judgments[judgments["question"].astype(str).str.fullmatch(r"u\d{1,3}")]
    j = j[j["value"].isin(list(labels))]
    return j.assign(utterance=j["question"].str[1:].astype(int))[columns]


def gold_labels(
    counts: pd.DataFrame, labels: Sequence[str], parameters: Mapping[str, Any]
) -> pd.DataFrame:
    """Return per utterance its gold ``label`` by the EmotionLines rule and its ``votes``."""
    columns = ["item", "utterance", "source", "label", "votes"]
    if counts.empty:
        return pd.DataFrame(columns=columns)
    table = counts[list(labels)].to_numpy()
    gold = aggregation.emotionlines_labels(
        table,
        list(labels),
        threshold=parameters.get("vote_threshold"),
        fallback=parameters.get("fallback_label", NON_NEUTRAL),
    )
    return counts[["item", "utterance", "source"]].assign(
        label=gold.to_numpy(), votes=table.sum(axis=1)
    )[columns]


def label_distribution(
    gold: pd.DataFrame, labels: Sequence[str], *, fallback: str = NON_NEUTRAL
) -> pd.DataFrame:
    """Return per source (and overall) utterances, dialogues and % of each label (Table 4).

    ``gold`` has ``item`` (the dialogue), ``source`` and ``label`` per utterance.
    """
    names = [*labels, fallback]
    columns = ["source", "dialogues", "utterances", *names]
    if gold.empty:
        return pd.DataFrame(columns=columns)
    parts = [(s or "(none)", g) for s, g in gold.groupby("source", sort=True)]
    if len(parts) > 1:
        parts.append(("all", gold))
    rows = []
    for source, part in parts:
        shares = part["label"].value_counts(normalize=True).reindex(names, fill_value=0) * 100
        rows.append(
            {"source": source, "dialogues": part["item"].nunique(), "utterances": len(part)}
            | shares.to_dict()
        )
    return pd.DataFrame(rows, columns=columns)


RATES_TWO_WAY = "two-way bootstrap, dialogues × workers (pigeonhole, corrected)"


def label_rates(
    gold: pd.DataFrame,
    labels: Sequence[str],
    *,
    votes: pd.DataFrame | None = None,
    fallback: str = NON_NEUTRAL,
    threshold: int | None = None,
    n_boot: int = 1000,
) -> pd.DataFrame:
    """Return per source (and overall) and label the % of utterances with that gold label
    (``label_distribution``'s shares) with a 95% CI, one row each.

    A dialogue's utterances share its context and its workers, and the same workers label
    many dialogues: with the ``votes`` (``utterance_judgments``) and workers who label more
    than 1.5 dialogues each (``twoway.two_way_chosen``, the report options' ``interval``),
    the interval resamples dialogues and workers (``twoway.label_rate_statistic``: the
    resampled crowd's labels by the same rule), else dialogues (a percentile bootstrap).
    """
    names = [*labels, fallback]
    columns = ["source", "label", "utterances", "pct", "ci_low", "ci_high", "ci_method"]
    if gold.empty:
        return pd.DataFrame(columns=columns)
    options = report_options()
    n_boot = options.n_boot or n_boot
    parts = [(s or "(none)", g) for s, g in gold.groupby("source", sort=True)]
    if len(parts) > 1:
        parts.append(("all", gold))
    rows = []
    for source, part in parts:
        shares = part["label"].value_counts(normalize=True).reindex(names, fill_value=0)
        low, high, method = _rates_interval(part, votes, names, threshold, n_boot, options)
        for k, name in enumerate(names):
            rows.append(
                {
                    "source": source,
                    "label": name,
                    "utterances": len(part),
                    "pct": shares[name] * 100,
                    "ci_low": low[k] * 100,
                    "ci_high": high[k] * 100,
                    "ci_method": method,
                }
            )
    return pd.DataFrame(rows, columns=columns)


def _rates_interval(
    part: pd.DataFrame,
    votes: pd.DataFrame | None,
    names: list[str],
    threshold: int | None,
    n_boot: int,
    options: ReportOptions,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Return the lower and upper limits (shares) of each of ``names`` and the method."""
    nan = np.full(len(names), np.nan)
    if not n_boot:
        return nan, nan, ""
    cells = _rate_cells(part, votes, options)
    if cells is None:
        return _rates_one_way(part, names, n_boot, options)
    value = part["label"].value_counts(normalize=True).reindex(names, fill_value=0).to_numpy()
    stat = twoway.label_rate_statistic(cells, threshold)
    # The bootstrap's workers' share, not the jackknife's: leaving a worker out re-labels
    # every utterance of its dialogues by a crowd of four, which widened the intervals of a
    # pool of 20 to 98-100% coverage (the bootstrap's: 95-97.5%; docs/statistics.md).
    two = twoway.corrected_variances(cells, stat, n_boot=n_boot, seed=options.seed)
    # The statistic's columns are the coded values (labels voted at least once), then none.
    column = {str(v): k for k, v in enumerate(cells.values)} | {names[-1]: len(cells.values)}
    low, high = nan.copy(), nan.copy()
    for k, name in enumerate(names):
        if name not in column:  # never voted: never the label of a resampled crowd either
            low[k] = high[k] = 0.0
            continue
        variance, df, _ = two[column[name]]
        half = float(stats.t.ppf(0.5 + options.level / 2.0, df)) * np.sqrt(max(variance, 0.0))
        low[k], high[k] = max(value[k] - half, 0.0), min(value[k] + half, 1.0)
    return low, high, RATES_TWO_WAY


def _rates_one_way(
    part: pd.DataFrame, names: list[str], n_boot: int, options: ReportOptions
) -> tuple[np.ndarray, np.ndarray, str]:
    """Return ``_rates_interval`` by the percentile bootstrap over dialogues (utterances with
    the "independent" method), every label's share from the same resamples."""
    onehot = part["label"].to_numpy()[:, None] == np.asarray(names, dtype=object)[None, :]
    by_dialogue = options.method == "design"
    groups = part["item"].to_numpy() if by_dialogue else np.arange(len(part))
    per = pd.DataFrame(onehot.astype(float)).groupby(groups).sum().to_numpy()
    rng = np.random.default_rng(options.seed)
    draws = rng.multinomial(len(per), np.full(len(per), 1.0 / len(per)), size=n_boot)
    boot = (draws @ per) / (draws @ per.sum(axis=1))[:, None]
    tail = (1.0 - options.level) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail], axis=0)
    return low, high, cluster_bootstrap.DIALOGUES if by_dialogue else UTTERANCES


UTTERANCES = "bootstrap over utterances"


def _rate_cells(
    part: pd.DataFrame, votes: pd.DataFrame | None, options: ReportOptions
) -> twoway.Cells | None:
    """Return the votes on ``part``'s utterances coded for the two-way bootstrap (units:
    utterances, clusters: dialogues), or None when the design or the options call for the
    one-way bootstrap over dialogues."""
    if votes is None or votes.empty or options.method != "design":
        return None
    return _utterance_cells(part, votes, options)


def _utterance_cells(
    used: pd.DataFrame, votes: pd.DataFrame, options: ReportOptions
) -> twoway.Cells | None:
    """Return the votes on ``used``'s utterances coded for the two-way bootstrap (units:
    utterances, clusters: dialogues), or None when ``two_way_chosen`` keeps the one-way."""
    keep = pd.MultiIndex.from_frame(used[["item", "utterance"]])
    mine = votes[pd.MultiIndex.from_frame(votes[["item", "utterance"]]).isin(keep)]
    if mine.empty or not twoway.two_way_chosen(
        mine["item"].to_numpy(), mine["rater"].to_numpy(), options.interval
    ):
        return None
    unit = mine["item"].astype(str) + "\x1f" + mine["utterance"].astype(str)
    long = pd.DataFrame(
        {"item": unit, "rater": mine["rater"], "value": mine["value"], "cluster": mine["item"]}
    )
    return twoway.cells_code(long, "nominal", cluster="cluster")


def kappa_by_source(
    counts: pd.DataFrame,
    labels: Sequence[str],
    *,
    n_boot: int = 1000,
    votes: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Return Fleiss' kappa per source (and overall) with a bootstrap 95% CI.

    Fleiss' kappa needs the same number of raters on every utterance: each source uses the
    utterances with its most common number of votes, and says how many it left out. The
    utterances of a dialogue (an item) share its context and its workers, so the bootstrap
    draws whole dialogues (``cluster_bootstrap.fleiss_kappa_cluster_ci``); with the
    ``votes`` (``utterance_judgments``) and workers who label several dialogues, it draws
    dialogues and workers independently (the pigeonhole bootstrap, ``agreement.twoway``),
    unless the report options' ``interval`` is "units".
    """
    columns = ["source", "utterances", "raters", "kappa", "ci_low", "ci_high", "ci_method"]
    columns.append("note")
    options = report_options()
    n_boot = options.n_boot or n_boot
    if counts.empty:
        return pd.DataFrame(columns=columns)
    counts = counts.assign(_n=counts[list(labels)].sum(axis=1))
    parts = [(s or "(none)", g) for s, g in counts.groupby("source", sort=True)]
    if len(parts) > 1:
        parts.append(("all", counts))
    rows = []
    for source, part in parts:
        raters = int(part["_n"].mode().max())
        used = part[part["_n"] == raters]
        note = f"{len(part) - len(used)} utterance(s) with other vote counts left out"
        method = ""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", agreement.AgreementUndefinedWarning)
            if raters < 2:
                estimate = agreement.Estimate(np.nan, np.nan, np.nan)
                note = "fewer than two votes per utterance"
            else:
                estimate, method = _kappa_interval(
                    used, labels, n_boot=n_boot, options=options, votes=votes
                )
        if caught:
            note = str(caught[-1].message)
        rows.append(
            {
                "source": source,
                "utterances": len(used),
                "raters": raters,
                "kappa": estimate.value,
                "ci_low": estimate.low,
                "ci_high": estimate.high,
                "ci_method": method,
                "note": note if len(part) != len(used) or caught or raters < 2 else "",
            }
        )
    return pd.DataFrame(rows, columns=columns)


def _kappa_interval(
    used: pd.DataFrame,
    labels: Sequence[str],
    *,
    n_boot: int,
    options: ReportOptions,
    votes: pd.DataFrame | None = None,
) -> tuple[agreement.Estimate, str]:
    """Return Fleiss' kappa of the utterances' votes with its bootstrap interval, and the
    bootstrap's name ("" without one): over dialogues x workers when workers repeat, over
    dialogues by design, else over utterances."""
    table = used[list(labels)].to_numpy()
    estimate = agreement.Estimate(agreement.fleiss_kappa(table), np.nan, np.nan)
    if not n_boot or np.isnan(estimate.value):
        return estimate, ""
    cells = _kappa_cells(used, votes, options)
    if cells is not None:
        two = kappa_two_way(
            cells, estimate.value, n_boot=n_boot, level=options.level, seed=options.seed
        )
        return two, KAPPA_TWO_WAY
    # Without dialogues (an item column), each utterance is its own cluster.
    by_dialogue = "item" in used and options.method == "design"
    dialogues = used["item"] if by_dialogue else pd.Series(range(len(used)))
    ci = cluster_bootstrap.fleiss_kappa_cluster_ci(
        table, dialogues.to_numpy(), n_boot=n_boot, level=options.level, seed=options.seed
    )
    method = cluster_bootstrap.DIALOGUES if by_dialogue else "bootstrap over utterances"
    return estimate._replace(low=ci.low, high=ci.high), method


def kappa_two_way(
    cells: twoway.Cells, value: float, *, n_boot: int, level: float, seed: int | None
) -> agreement.Estimate:
    """Return Fleiss' kappa ``value`` with the two-way interval value -/+ t sd, the workers'
    share of the variance from the delete-a-worker jackknife (``twoway.corrected_variance``:
    the rater bootstrap alone covered 85-91% with pools of 20-40 workers); resamples whose
    kappa is undefined are left out with an ``AgreementUndefinedWarning``."""
    two = twoway.corrected_variance(
        cells, twoway.fleiss_statistic, n_boot=n_boot, seed=seed, jackknife=True
    )
    undefined = int(np.isnan(two.draws).sum())
    if undefined:
        warnings.warn(
            f"{undefined} of {len(two.draws)} resamples had an undefined statistic and were "
            "left out of the interval",
            agreement.AgreementUndefinedWarning,
            stacklevel=2,
        )
    if undefined == len(two.draws) or not np.isfinite(two.variance):
        return agreement.Estimate(value, np.nan, np.nan)
    half = float(stats.t.ppf(0.5 + level / 2.0, two.df)) * np.sqrt(two.variance)
    return agreement.Estimate(value, value - half, value + half)


KAPPA_TWO_WAY = "two-way bootstrap, dialogues × workers (pigeonhole, corrected)"


def _kappa_cells(
    used: pd.DataFrame, votes: pd.DataFrame | None, options: ReportOptions
) -> twoway.Cells | None:
    """Return the used utterances' votes coded for the two-way bootstrap (units: utterances,
    clusters: dialogues), or None when the design or the options call for the one-way."""
    if votes is None or votes.empty or options.method != "design":
        return None
    if "utterance" not in used:  # one labelled utterance per item (EmoContext)
        used, votes = used.assign(utterance=0), votes.assign(utterance=0)
    return _utterance_cells(used, votes, options)


def distribution_figure(
    distribution: pd.DataFrame,
    *,
    labels: Sequence[str],
    count: str,
    agreement: pd.DataFrame,
    title: str,
) -> figures.ReportFigure:
    """Draw the share of each label per source with its n (the ``count`` column: utterances
    or items, per source) above each bar; the agreement (``kappa_by_source``'s row of the
    overall source) and its interval are named in the footnote and the alt text, which
    names the most and least common labels."""
    overall = distribution.iloc[-1]  # the "all" row when there are several sources
    total = int(overall[count])
    bars = distribution.melt(
        id_vars=["source", count], value_vars=list(labels), var_name="label", value_name="pct"
    )
    bars["n"] = (bars["pct"] * bars[count] / 100).round().astype(int)
    shares = pd.Series([float(overall[label]) for label in labels], index=list(labels))
    top, bottom = shares.idxmax(), shares.idxmin()

    def said(label: str) -> str:
        n = round(shares[label] * total / 100)
        return f"{label} ({figures.number(shares[label], 1)}%, n={n})"

    kappa = agreement[agreement["source"] == overall["source"]]
    if len(agreement) == 1 or kappa.empty:
        kappa = agreement.iloc[-1:]
    agreed = "no agreement statistic yet"
    if len(kappa):
        row = kappa.iloc[0]
        agreed = (
            f"Fleiss' κ {figures.number(row['kappa'])} "
            f"({figures.interval_text(row['ci_low'], row['ci_high'])}, {row['ci_method']})"
            if row["ci_method"]
            else f"Fleiss' κ {figures.number(row['kappa'])} (no interval)"
        )
    scope = f" ({overall['source']})" if len(distribution) > 1 else ""
    return figures.bar_figure(
        bars,
        group="label",
        bar="source",
        value="pct",
        n="n",
        title=title,
        alt=f"Bar chart of the share of each label among {total} {count}{scope}. Most common: "
        f"{said(top)}; least common: {said(bottom)}. Agreement: {agreed}.",
        ylabel=f"% of {count}",
        note=f"n above each bar: {count} with the label (a count: no interval). "
        f"Agreement of the labels: {agreed}.",
    )
