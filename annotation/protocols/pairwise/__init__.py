"""A/B comparison of two models' responses (PROTOCOLS.md §3; Rashkin et al. 2019).

The worker sees a context and two responses in random order and chooses the first, the
second, both equally, or neither. The order each worker saw is stored with the judgment, and
the report turns "first"/"second" back into models. Only examples whose two responses differ
(after whitespace and case normalisation) become items. The report gives per pair the wins,
A:B ratio and sign test, the ratio heatmap over all pairs (ED's Figure 5), averages over named
groups of pairs (ED's Table 5), and a Bradley–Terry ranking with bootstrap CIs.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from annotation.protocols.base import (
    ALLOCATION_PARAMETER_HELP,
    ALLOCATION_PARAMETERS,
    GoldChecks,
    Judged,
    ModelPairs,
    Planned,
    Question,
    Reliability,
    Report,
    ResponseItems,
    Simulated,
    context_clean,
)
from annotation.protocols.pairwise.figures import heatmap_figure, ranking_figure
from annotation.protocols.pairwise.planner import ab_design
from evalsite.errors import InvalidAnswer, InvalidParameters
from evalstats import adaptive, adaptive_rates, contrasts, ranking, reports, ties
from evalstats.planner import ABDesign

# The answers' labels, translated on the worker's page.
CHOICES: tuple[tuple[str, str], ...] = (
    ("first", gettext_noop("The first response")),
    ("second", gettext_noop("The second response")),
    ("both", gettext_noop("Both equally")),
    ("neither", gettext_noop("Neither")),
)
# A stored choice, given the order shown, as an outcome of ranking.OUTCOMES.
_OUTCOME = {"both": "both", "neither": "neither"}


def normalise(text: str) -> str:
    """Return ``text`` lower-cased with runs of whitespace made one space (for comparison)."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def pairwise_items(
    examples: Sequence[tuple[str, Sequence[str]]],
    responses: Mapping[str, Sequence[str]],
    pairs: Sequence[tuple[str, str]],
) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """Return (key, payload) items for each example and model pair, and how many were skipped.

    ``responses`` maps a model to its responses, one per example in order. An example whose
    two responses are the same after normalisation is skipped (PROTOCOLS.md §3).
    """
    for model, replies in responses.items():
        if len(replies) != len(examples):
            raise ValueError(f"{model}: {len(replies)} responses for {len(examples)} examples")
    items, skipped = [], 0
    for model_a, model_b in pairs:
        for name in (model_a, model_b):
            if name not in responses:
                raise ValueError(f"no responses for model {name!r}")
        for i, (example, context) in enumerate(examples):
            a, b = responses[model_a][i], responses[model_b][i]
            if normalise(a) == normalise(b):
                skipped += 1
                continue
            payload = {
                "context": list(context),
                "model_a": model_a,
                "response_a": a,
                "model_b": model_b,
                "response_b": b,
                "example": example,
            }
            items.append((f"{example}/{model_a}~{model_b}", payload))
    return items, skipped


def _rankings_add(report: Report, rankings: list[pd.DataFrame]) -> None:
    """Add the Bradley–Terry table, or one per component of the comparison graph (never one
    across them) with a note naming the groups."""
    if len(rankings) == 1:
        report.tables["bradley_terry"] = rankings[0]
        return
    for number, table in enumerate(rankings, start=1):
        report.tables[f"bradley_terry_{number}"] = table
    groups = "; ".join(
        f"group {number}: {', '.join(sorted(table['model']))}"
        for number, table in enumerate(rankings, start=1)
    )
    report.notes.append(
        f"The models form {len(rankings)} groups that were never compared with each "
        f"other ({groups}). Bradley–Terry strengths are estimated and ranked within "
        "each group (tables bradley_terry_1, bradley_terry_2, …); they are not "
        "comparable across groups, so there is no overall ranking. Compare models "
        "of different groups to rank them together."
    )


HALF_WIN_NOTE = (
    "Estimand: the Bradley–Terry table counts 'both' as half a win each way (Firth's "
    "penalised estimates), so its strengths are those of the half-win convention: when ties "
    "are frequent they are compressed toward each other, smaller than under a model in which "
    "ties have a probability of their own. The win-rate table drops ties altogether, so the two "
    "tables may disagree (on how far apart two models are, even on their order when one model "
    'ties much more often). The campaign parameter bt_ties = "davidson" models ties instead.'
)
CONTRAST_NOTE = (
    "bt_contrasts: every pair of models, the difference of their log-strengths (model_a minus "
    "model_b) with its 95% Wald interval (per pair, not adjusted; widened like the strengths' "
    "by the design effect), the z-test's p and Holm's adjustment over all pairs (of each "
    "group); the verdict follows the Holm-adjusted p. Read differences here rather than from "
    "overlapping intervals of the ranking."
)


def _davidson_note(nus: list[float]) -> str:
    values = ", ".join(f"{nu:.2f}" for nu in nus if np.isfinite(nu)) or "0 (no ties)"
    return (
        "Estimand: the Bradley–Terry table models ties by Davidson (1970): P(i beats j) = "
        "πi / (πi + πj + ν√(πiπj)), P(both) = ν√(πiπj) / (…), fitted by maximum likelihood "
        f"(ν = {values}); its strengths are Davidson's, not compressed by ties as the half-win "
        "convention's are. The win-rate table drops ties altogether, so the two tables may "
        "disagree."
    )


def _bradley_terry_add(
    report: Report, data: pd.DataFrame, parameters: Mapping[str, Any]
) -> list[pd.DataFrame]:
    """Add the Bradley–Terry ranking(s) under the campaign's ``bt_ties``, the note stating
    their estimand and the pairwise contrasts (one table per component); return the rankings."""
    prior = float(parameters["bt_prior"])
    convention = parameters.get("bt_ties", "half")
    rankings = ranking.bradley_terry_components(data, prior=prior)
    note = HALF_WIN_NOTE
    if convention == "davidson":
        try:
            fitted = ties.davidson_components(data, prior=prior)
        except ties.NoFiniteEstimate as error:
            convention = "half"
            note = f"The Davidson ties model could not be fitted ({error}). {note}"
        else:
            rankings = [table for table, _ in fitted]
            note = _davidson_note([nu for _, nu in fitted])
    _rankings_add(report, rankings)
    report.notes.append(note)
    tables = contrasts.bradley_terry_contrasts(data, ties_model=convention, prior=prior)
    for number, table in enumerate(tables, start=1):
        if not table.empty:
            report.tables["bt_contrasts" if len(tables) == 1 else f"bt_contrasts_{number}"] = table
    if any(not t.empty for t in tables):
        report.notes.append(CONTRAST_NOTE)
    return rankings


def _corrected_rates_add(report: Report, data: pd.DataFrame, parameters: Mapping[str, Any]) -> None:
    """Under adaptive allocation, add the rates its steering does not bias (allocation_note):
    ``win_rate_corrected`` and ``ratio_corrected`` to ``win_rates``, and per model the pooled
    and the corrected win rate (``model_win_rates``); evalstats/adaptive_rates.py says how."""
    first = adaptive_rates.first_judgments(parameters)
    if first is None:
        return
    pairs = adaptive_rates.pair_rates(data, first=first)
    pairs = pairs.rename(columns={"corrected": "win_rate_corrected"})
    report.tables["win_rates"] = report.tables["win_rates"].merge(
        pairs[["model_a", "model_b", "win_rate_corrected", "ratio_corrected"]],
        on=["model_a", "model_b"],
        how="left",
    )
    report.tables["model_win_rates"] = adaptive_rates.model_rates(data, first=first)


class PairwiseProtocol(ResponseItems, GoldChecks, Simulated, ModelPairs, Judged, Planned):
    """Choose the better of two responses, or both, or neither."""

    name = "pairwise"
    title = "A/B comparison of two responses"
    template_name = "pairwise/task.html"
    instructions = gettext_lazy(
        "Read the conversation, then the **two possible next responses**. Choose the "
        "better one, or say that both are equally good, or that neither is good."
    )
    judge_prompt = "Compare the two responses.\n{questions}"
    judge_prompt_version = "pairwise-v1"
    planner_sizing = "pair"
    planner_words = ("ab",)
    planner_design_type = ABDesign
    report_payload_keys = ("model_a", "model_b")
    parameter_help = {
        "question": "Asked with four answers: the first, the second, both equally, neither "
        "(PROTOCOLS.md §3).",
        "min_judgments_per_pair": "At least 50 judgments per model pair (PROTOCOLS.md §3).",
        "groups": "Named groups of pairs averaged in the report, e.g. generation vs retrieval "
        "(PROTOCOLS.md §3; ED Table 5). {} for none.",
        "bt_prior": "Virtual wins each way per model pair added to the Bradley–Terry fit, which "
        "shrink strengths toward each other (0: none; Firth's penalty already keeps them "
        "finite; evalsite's choice, not in the paper).",
        "bt_ties": "How the Bradley–Terry table treats 'both': \"half\" (half a win each way, "
        'the default) or "davidson" (Davidson\'s 1970 model, in which ties have a probability '
        "of their own; evalsite's choice, not in the paper).",
        "n_boot": "Bootstrap resamples for the agreement intervals (evalsite's choice).",
        **ALLOCATION_PARAMETER_HELP,
    }

    def default_parameters(self) -> dict[str, Any]:
        return {
            "question": gettext_noop("Which response is better in this conversation?"),
            "min_judgments_per_pair": 50,
            "groups": {},
            "bt_prior": 0.0,
            "bt_ties": "half",
            "n_boot": 1000,
            **ALLOCATION_PARAMETERS,
        }

    def planner_design(
        self,
        parameters: Mapping[str, Any],
        *,
        redundancy: int,
        sizes: Mapping[str, int],
        n_boot: int,
    ) -> ABDesign:
        return ab_design(parameters, redundancy=redundancy, sizes=sizes, n_boot=n_boot)

    def clean_parameters(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        cleaned = self.parameters_merged(parameters)
        errors: dict[str, str] = {}
        if not isinstance(cleaned["question"], str) or not cleaned["question"].strip():
            errors["question"] = "Give the question the worker answers."
        for key, low, high in (("min_judgments_per_pair", 1, 100_000), ("n_boot", 0, 100_000)):
            value = cleaned[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                errors[key] = f"Must be a whole number from {low} to {high}."
        prior = cleaned["bt_prior"]
        if isinstance(prior, bool) or not isinstance(prior, int | float) or not 0 <= prior <= 10:
            errors["bt_prior"] = "Must be a number of virtual wins from 0 to 10."
        if (
            not isinstance(cleaned["bt_ties"], str)
            or cleaned["bt_ties"] not in ties.TIE_CONVENTIONS
        ):
            errors["bt_ties"] = 'Must be "half" (a tie is half a win each way) or "davidson".'
        groups = cleaned["groups"]
        if not isinstance(groups, Mapping) or not all(
            isinstance(name, str)
            and isinstance(pairs, list)
            and all(
                isinstance(p, list | tuple)
                and len(p) == 2
                and all(isinstance(m, str) and m for m in p)
                for p in pairs
            )
            for name, pairs in groups.items()
        ):
            errors["groups"] = "Must map a group name to a list of [model A, model B] pairs."
        if errors:
            raise InvalidParameters("Invalid A/B parameters.", fields=errors)
        cleaned["groups"] = {n: [list(p) for p in ps] for n, ps in groups.items()}
        return cleaned

    def clean_item(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        context = context_clean(payload)
        for f in ("model_a", "response_a", "model_b", "response_b"):
            if not isinstance(payload.get(f), str) or not payload[f].strip():
                raise InvalidParameters(f"'{f}' must be a non-empty string.")
        if payload["model_a"].strip() == payload["model_b"].strip():
            raise InvalidParameters("The two models of an A/B item must differ.")
        if normalise(payload["response_a"]) == normalise(payload["response_b"]):
            raise InvalidParameters("The two responses are the same; only differing pairs count.")
        example = payload.get("example", "")
        if not isinstance(example, str):
            raise InvalidParameters("'example' must be a string.")
        cleaned = {
            f: payload[f].strip() for f in ("model_a", "response_a", "model_b", "response_b")
        }
        return {"context": context, **cleaned, "example": example}

    def items_build(
        self,
        parameters: Mapping[str, Any],
        examples: Sequence[tuple[str, Sequence[str]]],
        responses: Mapping[str, Sequence[str]],
    ) -> tuple[list[tuple[str, dict[str, Any]]], int]:
        """Pair every two of the models (in the order given) on every example."""
        return pairwise_items(examples, responses, list(itertools.combinations(responses, 2)))

    def questions(self, parameters: Mapping[str, Any]) -> list[Question]:
        return [Question(key="choice", text=parameters["question"], choices=CHOICES)]

    def presentation(
        self, parameters: Mapping[str, Any], payload: Mapping[str, Any], seed: str
    ) -> dict[str, Any]:
        return order_shown(seed)

    def judgment_winner(
        self,
        payload: Mapping[str, Any],
        question: str,
        value: Any,
        presentation: Mapping[str, Any] | None,
    ) -> str | None:
        """Return the model chosen (its name from the payload), or "both" / "neither"."""
        if question != "choice":
            return None
        side = outcome(value, presentation)
        if side in ("a", "b"):
            return str(payload.get(f"model_{side}", "")) or None
        return side

    def clean_answers(
        self, parameters: Mapping[str, Any], answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        errors: dict[str, str] = {}
        raw = answers.get("choice")
        if raw is None or raw == "":
            errors["choice"] = _("Please choose one of the four answers.")
        elif not isinstance(raw, str) or raw not in dict(CHOICES):  # a list is unhashable
            errors["choice"] = f"Choose first, second, both or neither, not {str(raw)[:20]!r}."
        for extra in sorted(set(answers) - {"choice"}):
            errors[str(extra)[:64]] = _("This study asks no such question.")
        if errors:
            raise InvalidAnswer(_("Some answers are missing or not valid."), fields=errors)
        return {"choice": raw}

    def clean_gold(
        self, parameters: Mapping[str, Any], gold: Mapping[str, Any]
    ) -> dict[str, list[Any]]:
        """Gold answers name the model's side, not the shown position: "a", "b", both, neither."""
        accepted = gold.get("choice") if isinstance(gold, Mapping) else None
        values = accepted if isinstance(accepted, list) else [accepted]
        if (
            set(gold if isinstance(gold, Mapping) else {}) != {"choice"}
            or not values
            or not all(isinstance(v, str) and v in ranking.OUTCOMES for v in values)
        ):
            raise InvalidParameters(
                'A/B gold answers are {"choice": [...]} with values "a", "b", "both", "neither" '
                "(the model's side, since the order shown is random)."
            )
        return {"choice": list(values)}

    def gold_correct(
        self,
        gold: Mapping[str, list[Any]],
        answers: Mapping[str, Any],
        presentation: Mapping[str, Any],
    ) -> bool:
        return outcome(answers.get("choice"), presentation) in gold["choice"]

    def report(
        self, parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
    ) -> Report:
        report = Report(title="A/B comparisons: wins, ratios and Bradley–Terry ranking")
        data = pairwise_outcomes(items, judgments)
        # The rest reads only the outcomes: at 10^6 judgments, letting go of the raw frames
        # keeps the report's peak memory under 1 GB.
        del items, judgments
        pairs = ranking.pair_table(data)
        report.tables["pairs"] = pairs
        if data.empty:
            report.notes.append("No judgments yet.")
            return report
        models = sorted(set(data["a"].unique()) | set(data["b"].unique()))
        matrix = ranking.ratio_matrix(pairs, models)
        report.tables["ratios"] = matrix.reset_index()
        report.tables["win_rates"] = ranking.win_rates(data)
        if parameters["groups"]:
            report.tables["groups"] = ranking.group_ratios(matrix, parameters["groups"])
        rankings = _bradley_terry_add(report, data, parameters)
        _corrected_rates_add(report, data, parameters)
        report.tables["agreement"] = reports.agreement_table(
            data.assign(group="choice", value=data["outcome"]),
            level="nominal",
            names={"choice": "A/B choice (a, b, both, neither)"},
            n_boot=int(parameters["n_boot"]),
        )
        n_min = int(parameters["min_judgments_per_pair"])
        few = [f"{r.model_a} vs {r.model_b} ({r.n})" for r in pairs.itertuples() if r.n < n_min]
        if few:
            report.notes.append(
                f"Fewer than {n_min} judgments (the protocol's minimum) for: {', '.join(few)}."
            )
        report.notes.append(
            "Ratio = times the row model was chosen over the column model : the reverse; "
            "'both' and 'neither' count for neither side. Bradley–Terry strengths are log-"
            "strengths (mean 0) with 'neither' left out "
            f"({parameters['bt_prior']} virtual wins each way per pair that met); 95% CIs are "
            "Wald intervals widened by the design effect of items and workers. Win rate = "
            "share of model_a's wins among the pair's decisive judgments; its 95% CI is crossed "
            "items×raters (a worker who judges many items of a pair counted), Wilson on the "
            "effective size."
        )
        report.notes.append(adaptive.allocation_note(parameters))
        report.figures["ratio_heatmap"] = heatmap_figure(matrix, pairs, report.tables["win_rates"])
        report.figures["bradley_terry"] = ranking_figure(rankings)
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
        """Pick by the truth's ``quality`` per model (higher is better); spammers pick at random.

        The choice is given as the worker saw it: "first" is whichever side was shown first.
        """
        if reliability == "spammer" or not truth:
            return {"choice": rng.choice([c for c, _ in CHOICES])}
        noise = 0.4 if reliability == "good" else 1.2
        qa = float(truth["quality"][payload["model_a"]]) + rng.gauss(0, noise)
        qb = float(truth["quality"][payload["model_b"]]) + rng.gauss(0, noise)
        if abs(qa - qb) < 0.25:
            return {"choice": "both" if min(qa, qb) > 0.5 else "neither"}
        better = "a" if qa > qb else "b"
        order = shown.get("order") or ["a", "b"]
        return {"choice": "first" if order[0] == better else "second"}


def order_shown(seed: str) -> dict[str, Any]:
    """Return which side is shown first, drawn from ``seed`` (stable for a worker and item):
    the presentation of A/B and ACUTE-Eval items."""
    flip = int(hashlib.sha256(seed.encode()).hexdigest(), 16) % 2
    return {"order": ["b", "a"] if flip else ["a", "b"]}


def outcome(choice: Any, presentation: Mapping[str, Any] | None) -> str | None:
    """Return the outcome ("a", "b", "both", "neither") of a stored choice, given the order."""
    order = (presentation or {}).get("order") or ["a", "b"]
    if choice == "first":
        return str(order[0])
    if choice == "second":
        return str(order[1])
    return _OUTCOME.get(choice)


def pairwise_outcomes(items: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """Return one row per judgment: ``item``, ``rater``, ``a``, ``b`` (models), ``outcome``.

    ``judgments`` needs the ``presentation`` column: the order each worker saw.
    """
    columns = ["item", "rater", "a", "b", "outcome"]
    choices = judgments[judgments["question"] == "choice"] if len(judgments) else judgments
    if choices.empty:
        return pd.DataFrame(columns=columns)
    payloads = items.set_index("item")["payload"]
    # Per item, then taken for each judgment: one lookup per item, not two per judgment.
    at = payloads.index.get_indexer(choices["item"])
    if (at < 0).any():
        raise KeyError(f"judged items missing from the items: {choices['item'][at < 0].iloc[0]}")
    model_a = np.array([p["model_a"] for p in payloads], dtype=object)[at]
    model_b = np.array([p["model_b"] for p in payloads], dtype=object)[at]
    known: dict[tuple[Any, int], str | None] = {}  # equal presentations are often one object
    outcomes = []
    for v, p in zip(choices["value"], choices["presentation"], strict=True):
        key = (v, id(p))
        if key not in known:
            known[key] = outcome(v, p)
        outcomes.append(known[key])
    frame = pd.DataFrame(
        {
            "item": choices["item"].to_numpy(),
            "rater": choices["rater"].to_numpy(),
            "a": model_a,
            "b": model_b,
            "outcome": outcomes,
        }
    )
    return frame[columns]
