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
        two = agreement.two_way_interval(
            cells,
            twoway.fleiss_statistic,
            estimate.value,
            n_boot=n_boot,
            ci=options.level,
            seed=options.seed,
        )
        return estimate._replace(low=two.low, high=two.high), KAPPA_TWO_WAY
    # Without dialogues (an item column), each utterance is its own cluster.
    by_dialogue = "item" in used and options.method == "design"
    dialogues = used["item"] if by_dialogue else pd.Series(range(len(used)))
    ci = cluster_bootstrap.fleiss_kappa_cluster_ci(
        table, dialogues.to_numpy(), n_boot=n_boot, level=options.level, seed=options.seed
    )
    method = cluster_bootstrap.DIALOGUES if by_dialogue else "bootstrap over utterances"
    return estimate._replace(low=ci.low, high=ci.high), method


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
    keep = pd.MultiIndex.from_frame(used[["item", "utterance"]])
    part = votes[pd.MultiIndex.from_frame(votes[["item", "utterance"]]).isin(keep)]
    if not twoway.two_way_chosen(
        part["item"].to_numpy(), part["rater"].to_numpy(), options.interval
    ):
        return None
    unit = part["item"].astype(str) + "\x1f" + part["utterance"].astype(str)
    long = pd.DataFrame(
        {"item": unit, "rater": part["rater"], "value": part["value"], "cluster": part["item"]}
    )
    return twoway.cells_code(long, "nominal", cluster="cluster")


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
