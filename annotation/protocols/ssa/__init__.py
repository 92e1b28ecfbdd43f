"""Sensibleness and Specificity (SSA) of responses in context (PROTOCOLS.md §6; Meena).

The worker answers "sensible?" and, only if yes, "specific?"; a response that is not
sensible is stored as not specific by rule, and "not sensible but specific" is refused.
Five workers per response, majority per question. The report gives per model sensibleness,
specificity and SSA (their average) with bootstrap CIs, and per question the % agreement and
Krippendorff's alpha (Meena's Table 1). The same protocol labels the bot turns of live chats
(interactive SSA) and of human–human conversations: an item is a context and one response.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from annotation.protocols.base import (
    GoldChecks,
    Judged,
    Planned,
    Question,
    Reliability,
    Report,
    ResponseItems,
    Simulated,
)
from annotation.protocols.likert import LikertProtocol, likert_items
from annotation.protocols.ssa.contrasts import (
    QUESTIONS,
    contrasts_note,
    crossed_design,
    ssa_contrasts,
)
from annotation.protocols.ssa.planner import ssa_design
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import aggregation, agreement, cluster_bootstrap, figures, reports, uncertainty
from evalstats.options import report_options
from evalstats.planner import SSADesign

# Meena's instructions (Adiwardana et al. 2020, §2.1 and Appendix); translated on the
# worker's page (a researcher's own wording stays as written).
SENSIBLE = gettext_noop(
    "Does the response make sense? Use your common sense: is it completely reasonable in "
    "context? If anything seems off (confusing, illogical, out of context, factually wrong), "
    "it does not make sense."
)
SPECIFIC = gettext_noop(
    "Is the response specific to the context? A response that could be used in dozens of "
    'different contexts is not specific ("That\'s nice" to "I love tennis").'
)
YES_NO: tuple[tuple[str, str], ...] = (("yes", gettext_noop("Yes")), ("no", gettext_noop("No")))
# Probability that a simulated worker of each reliability answers a question correctly.
_SIM_ACCURACY = {"good": 0.9, "noisy": 0.7}


class SSAProtocol(ResponseItems, GoldChecks, Simulated, Judged, Planned):
    """Label a response sensible or not, then (if sensible) specific or not."""

    name = "ssa"
    title = "Sensibleness and specificity (SSA)"
    template_name = "ssa/task.html"
    instructions = gettext_lazy(
        "Read the conversation and the **response**. First say whether the response "
        "**makes sense** in the conversation. Only if it does, say whether it is **specific** to "
        "this conversation, rather than something that could be said almost anywhere."
    )
    judge_prompt = (
        "A response is sensible if it is completely reasonable in context; anything confusing, "
        "illogical, out of context or factually wrong does not make sense. It is specific if it "
        "relates to this conversation rather than being something that could be said almost "
        "anywhere (Adiwardana et al., 2020).\n{questions}"
    )
    judge_prompt_version = "ssa-v1"
    planner_sizing = "model"
    planner_design_type = SSADesign
    default_redundancy = 5
    parameter_help = {
        "sensible_question": "Meena's wording: anything confusing, illogical, out of context "
        "or factually wrong does not make sense (PROTOCOLS.md §6).",
        "specific_question": "Asked only if sensible: could the response be used in dozens of "
        "contexts? (PROTOCOLS.md §6).",
        "n_boot": "Bootstrap resamples for the confidence intervals of sensibleness, "
        "specificity and SSA (evalsite's choice).",
    }

    def default_parameters(self) -> dict[str, Any]:
        return {"sensible_question": SENSIBLE, "specific_question": SPECIFIC, "n_boot": 1000}

    def planner_design(
        self,
        parameters: Mapping[str, Any],
        *,
        redundancy: int,
        sizes: Mapping[str, int],
        n_boot: int,
    ) -> SSADesign:
        return ssa_design(parameters, redundancy=redundancy, sizes=sizes, n_boot=n_boot)

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors = {
            key: "Give the question's text."
            for key in ("sensible_question", "specific_question")
            if not isinstance(cleaned[key], str) or not cleaned[key].strip()
        }
        n_boot = cleaned["n_boot"]
        if isinstance(n_boot, bool) or not isinstance(n_boot, int) or not 0 <= n_boot <= 100_000:
            errors["n_boot"] = "Must be a whole number from 0 to 100000."
        if errors:
            raise InvalidParameters("Invalid SSA parameters.", fields=errors)
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        # The same item as a Likert rating: a context, one response and its model.
        return LikertProtocol().clean_item(payload)

    def items_build(
        self,
        parameters: Mapping[str, Any],
        examples: Sequence[tuple[str, Sequence[str]]],
        responses: Mapping[str, Sequence[str]],
    ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        return likert_items(examples, responses), 0

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        return [
            Question(key="sensible", text=parameters["sensible_question"], choices=YES_NO),
            Question(
                key="specific",
                text=parameters["specific_question"],
                choices=YES_NO,
                only_if=("sensible", "yes"),
            ),
        ]

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        errors: dict[str, str] = {}
        sensible, specific = answers.get("sensible"), answers.get("specific")
        if sensible in (None, ""):
            errors["sensible"] = _("Please say whether the response makes sense.")
        elif sensible not in ("yes", "no"):
            errors["sensible"] = f"Answer yes or no, not {str(sensible)[:20]!r}."
        if specific not in (None, "", "yes", "no"):
            errors["specific"] = f"Answer yes or no, not {str(specific)[:20]!r}."
        elif sensible == "no" and specific == "yes":
            errors["specific"] = _("A response that does not make sense cannot be specific.")
        elif sensible == "yes" and specific in (None, ""):
            errors["specific"] = _("Please say whether the response is specific.")
        for extra in sorted(set(answers) - set(QUESTIONS)):
            errors[str(extra)[:64]] = _("This study asks no such question.")
        if errors:
            raise InvalidAnswer(_("Some answers are missing or not valid."), fields=errors)
        # Not sensible ⇒ not specific, by Meena's rule; the worker is never asked.
        return {"sensible": sensible, "specific": specific if sensible == "yes" else "no"}

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        report = Report(title="Sensibleness and specificity (SSA) per model")
        n_boot = report_options().n_boot or int(parameters["n_boot"])
        labels = ssa_labels(items, judgments)
        scores = ssa_scores(labels, n_boot=n_boot, judgments=judgments)
        report.tables["scores"] = scores
        report.tables["ssa_contrasts"] = ssa_contrasts(labels, judgments=judgments, n_boot=n_boot)
        report.tables["agreement"] = ssa_agreement(judgments, n_boot=n_boot)
        ties = int(labels[["sensible", "specific"]].isna().any(axis=1).sum()) if len(labels) else 0
        if report_options().aggregate != "majority":
            # The crossed intervals linearise each response's majority through its votes.
            report.notes.append(
                "SSA labels each response by the majority of its workers whatever the chosen "
                "aggregation: the intervals are built on the majority vote."
            )
        if ties:
            report.notes.append(
                f"{ties} response(s) had tied votes on a question and are left out of that "
                "question's score (an even number of workers split evenly)."
            )
        report.notes.append(
            "Each response's label is the majority of its workers per question; not sensible "
            "counts as not specific. SSA is the average of sensibleness and specificity. "
            "95% CIs (ci_method): crossed items×raters — the workers' leniency and each "
            "response's votes counted (docs/statistics.md) — Wilson on the effective size."
        )
        report.notes.append(contrasts_note())
        if not scores.empty:
            report.figures["ssa"] = ssa_figure(
                scores, title="Sensibleness, specificity and SSA per model", n_unit="responses"
            )
        return report

    def simulate_answers(
        self,
        parameters: Mapping[str, Any],
        payload: Mapping[str, Any],
        shown: Mapping[str, Any],
        truth: Mapping[str, Any] | None,
        reliability: Reliability,
        rng: random.Random,
    ) -> dict[str, str]:
        """Answer from the truth's ``sensible``/``specific`` booleans, right with some chance."""
        if reliability == "spammer" or not truth:
            sensible = rng.random() < 0.5
            specific = sensible and rng.random() < 0.5
        else:
            p = _SIM_ACCURACY[reliability]
            sensible = bool(truth["sensible"]) == (rng.random() < p)
            specific = sensible and (bool(truth["specific"]) == (rng.random() < p))
        answers = {"sensible": "yes" if sensible else "no"}
        if sensible:
            answers["specific"] = "yes" if specific else "no"
        return answers


def ssa_figure(
    scores: pd.DataFrame, *, title: str, n_unit: str, alt_extra: str = ""
) -> figures.ReportFigure:
    """Draw sensibleness, specificity and SSA (%) per model with their intervals and n (the
    model's labeled ``n_unit``); the alt text names the highest and lowest SSA."""
    finding = figures.extremes_text(
        scores,
        name="model",
        value="ssa",
        low="ssa_low",
        high="ssa_high",
        n="responses",
        on=" on SSA",
        digits=1,
        unit="%",
        n_unit=n_unit,
    )
    return figures.bar_figure(
        _bars(scores),
        group="metric",
        bar="model",
        value="value",
        n="n",
        interval=("low", "high"),
        title=title,
        alt=f"Bar chart of sensibleness, specificity and SSA (% of {n_unit}) per model. "
        f"{finding}{alt_extra}",
        ylabel=f"% of {n_unit} ({figures.ci_name()})",
        note=f"Error bars: {figures.ci_name()}, {figures.methods(scores['ci_method'])}. "
        f"n above each bar: {n_unit} labeled.",
        ylim=(0, 100),
    )


def _bars(scores: pd.DataFrame) -> pd.DataFrame:
    """Return one row per model and metric with its value, CI and n."""
    names = {"sensibleness": "Sensibleness", "specificity": "Specificity", "ssa": "SSA"}
    return pd.DataFrame(
        [
            {
                "model": row["model"],
                "metric": name,
                "value": row[key],
                "low": row[f"{key}_low"],
                "high": row[f"{key}_high"],
                "n": row["responses"],
            }
            for _, row in scores.iterrows()
            for key, name in names.items()
        ]
    )


def ssa_labels(items: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """Return per judged item its ``model`` and majority ``sensible``/``specific`` (bool/NaN).

    A tie leaves that question's label missing (never broken at random).
    """
    columns = ["item", "model", "sensible", "specific", "n_votes"]
    if judgments.empty:
        return pd.DataFrame(columns=columns)
    labels = []
    for question in QUESTIONS:
        part = judgments[judgments["question"] == question][["item", "rater", "value"]]
        vote = aggregation.majority_vote(part, ties="report")
        labels.append(vote["label"].map({"yes": True, "no": False}).rename(question))
    table = pd.concat(labels, axis=1)
    votes = judgments[judgments["question"] == "sensible"].groupby("item")["rater"].nunique()
    models = items.set_index("item")["payload"].map(lambda p: p["model"])
    table = table.assign(model=models.reindex(table.index), n_votes=votes.reindex(table.index))
    return table.rename_axis("item").reset_index()[columns]


def ssa_scores(
    labels: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    judgments: pd.DataFrame | None = None,
    conversations: pd.Series | None = None,
    workers: pd.Series | None = None,
    level: float | None = None,
) -> pd.DataFrame:
    """Return per model: responses, sensibleness, specificity and SSA in % with 95% CIs.

    The CI's method (``ci_method``) follows the design: with the workers' ``judgments``
    (static SSA, several workers per response from one pool) the crossed items x raters
    interval, the workers' leniency estimated from every model's votes; with each item's
    conversation (``conversations``, interactive SSA: one worker labels a chat's turns) a
    bootstrap over conversations, or over workers whole when the items' ``workers`` hold
    several chats (``cluster_bootstrap.chat_clusters``); otherwise a bootstrap over the
    model's responses. The
    report options set the level (unless given), the resamples and the seed; their method
    "independent" uses the bootstrap over responses (or turns) in every case.
    """
    options = report_options()
    level = options.level if level is None else level
    n_boot = options.n_boot or n_boot
    seed = options.seed if options.seed else seed
    if options.method == "independent":
        judgments = conversations = None
    metrics = ("sensibleness", "specificity", "ssa")
    columns = ["model", "responses"] + [f"{m}{s}" for m in metrics for s in ("", "_low", "_high")]
    columns.append("ci_method")
    crossed = None
    if judgments is not None and not judgments.empty:
        crossed = _ssa_crossed(judgments, level)
    rows = []
    rng = np.random.default_rng(seed)
    tail = (100 - 100 * level) / 2
    for model, part in labels.groupby("model", sort=True):
        sens = part["sensible"].astype(float).to_numpy()
        spec = part["specific"].astype(float).to_numpy()
        row: dict[str, Any] = {"model": model, "responses": len(part)}
        values = _ssa_triple(sens[None, :], spec[None, :])[0]
        bounds: list[tuple[float, float]] = [(np.nan, np.nan)] * 3
        if crossed is not None:
            bounds, row["ci_method"] = crossed(part), uncertainty.CROSSED_WILSON
        elif conversations is not None and n_boot:
            chats = conversations.reindex(part["item"]).fillna("").to_numpy()
            who = None if workers is None else workers.reindex(part["item"]).to_numpy()
            bounds, row["ci_method"] = _chat_bounds(sens, spec, chats, who, n_boot, seed, level)
        elif n_boot:
            idx = rng.integers(0, len(part), (n_boot, len(part)))
            bounds = _percentiles(_ssa_triple(sens[idx], spec[idx]), tail)
            row["ci_method"] = "bootstrap over responses" + (
                " (independent: comparison only)" if options.method == "independent" else ""
            )
        for k, metric in enumerate(metrics):
            row[metric] = values[k]
            row[f"{metric}_low"], row[f"{metric}_high"] = bounds[k]
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _chat_bounds(
    sens: np.ndarray,
    spec: np.ndarray,
    chats: np.ndarray,
    workers: np.ndarray | None,
    n_boot: int,
    seed: int,
    level: float,
) -> tuple[list[tuple[float, float]], str]:
    """Return the three shares' bounds (in %) over conversations or, when workers hold
    several chats, over workers (``cluster_bootstrap.chat_shares_ci``; SSA's from the mean
    of the two shares' draws), and its name."""
    bounds, method = cluster_bootstrap.chat_shares_ci(
        np.column_stack([sens, spec]),
        chats,
        workers,
        n_boot=n_boot,
        seed=seed,
        level=level,
        mean=True,
    )
    return [(low * 100, high * 100) for low, high in bounds], method


def _percentiles(draws: np.ndarray, tail: float) -> list[tuple[float, float]]:
    """Each column's interval: the ``tail`` and ``100 - tail`` percentiles of its draws."""
    return list(zip(*np.nanpercentile(draws, [tail, 100 - tail], axis=0), strict=True))


def _ssa_crossed(
    judgments: pd.DataFrame, level: float
) -> Callable[[pd.DataFrame], list[tuple[float, float]]]:
    """Return a function of one model's labels giving its crossed CIs (in %) per metric
    (the design, ``contrasts.crossed_design``, from the votes of every model)."""
    design = crossed_design(judgments)

    def bounds(part: pd.DataFrame) -> list[tuple[float, float]]:
        sens = pd.Series(part["sensible"].astype(float).to_numpy(), index=part["item"])
        spec = pd.Series(part["specific"].astype(float).to_numpy(), index=part["item"])
        ests = [
            uncertainty.crossed_mean(
                score, slope, design.effects, columns=["s", "p"], level=level, proportion=True
            )
            for score, slope in zip((sens, spec, (sens + spec) / 2), design.slopes, strict=True)
        ]
        # SSA from the two shares' own intervals (MOVER): near 0 and 1 its own symmetric
        # interval rests on a few rare labels (a generic bot's; docs/statistics.md).
        low, high = uncertainty.mover_average(ests[0], ests[1], ests[2].se)
        return [(e.low * 100, e.high * 100) for e in ests[:2]] + [(low * 100, high * 100)]

    return bounds


def _ssa_triple(sens: np.ndarray, spec: np.ndarray) -> np.ndarray:
    """Return rows of (sensibleness, specificity, SSA) in % for rows of 0/1/NaN labels."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a draw of only tied labels
        s = np.nanmean(sens, axis=1) * 100
        p = np.nanmean(spec, axis=1) * 100
    return np.column_stack([s, p, (s + p) / 2])


def ssa_agreement(judgments: pd.DataFrame, *, n_boot: int = 1000) -> pd.DataFrame:
    """Return per question the % agreement and Krippendorff's alpha, each with a 95% CI
    (``ci_method``: over items and workers when workers repeat, else over items)."""
    columns = ["question", "items", "agreement_pct", "pct_low", "pct_high", "alpha", "ci_low"]
    columns += ["ci_high", "ci_method", "note"]
    if judgments.empty:
        return pd.DataFrame(columns=columns)
    data = judgments[judgments["question"].isin(QUESTIONS)].rename(columns={"question": "group"})
    alphas = reports.agreement_table(data, level="nominal", n_boot=n_boot).set_index("aspect")
    rows = []
    for question in QUESTIONS:
        long = data[data["group"] == question][["item", "rater", "value"]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", agreement.AgreementUndefinedWarning)
            pct = agreement.percent_agreement_ci(long, n_boot=n_boot)
        a = alphas.loc[question] if question in alphas.index else None
        rows.append(
            {
                "question": question,
                "items": int(a["items"]) if a is not None else 0,
                "agreement_pct": pct.value * 100,
                "pct_low": pct.low * 100,
                "pct_high": pct.high * 100,
                "alpha": a["alpha"] if a is not None else np.nan,
                "ci_low": a["ci_low"] if a is not None else np.nan,
                "ci_high": a["ci_high"] if a is not None else np.nan,
                "ci_method": agreement.interval_method(long) if len(long) else "",
                "note": a["note"] if a is not None else "no judgments",
            }
        )
    return pd.DataFrame(rows, columns=columns)
