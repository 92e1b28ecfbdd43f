"""The arena's report: the leaderboard (Bradley–Terry, conversations as clusters, workers as
raters), the style-controlled leaderboard, the win-rate matrix, votes per pair, and per model
the operations table (conversations, failures, reply latency, cut replies)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from annotation.protocols.arena.checks import STYLE_KEYS
from annotation.protocols.pairwise.figures import heatmap_figure, ranking_figure
from evalstats import adaptive, ranking
from evalstats.reports import Report
from evalstats.style import bradley_terry_style

OUTCOME = {"a": "a", "b": "b", "tie": "both", "both_bad": "neither"}
MODEL_COLUMNS = [
    "model",
    "conversations",
    "complete",
    "failed",
    "replies",
    "reply_ms_mean",
    "cut_replies",
]
# A side's dialogue flag when its own model failed (``chat.arena``).
FAILURE_FLAGS = ("bot_failed", "bot_timeout")


def arena_outcomes(items: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """Return one row per vote: ``item`` (the conversation: its votes are one cluster),
    ``rater``, ``a``, ``b``, ``outcome``, ``turn``, and each side's style features as
    ``<feature>_a`` / ``<feature>_b``."""
    style = [f"{k}_{s}" for k in STYLE_KEYS for s in ("a", "b")]
    columns = ["item", "rater", "a", "b", "outcome", "turn", *style]
    votes = judgments[judgments["question"] == "winner"] if len(judgments) else judgments
    if votes.empty:
        return pd.DataFrame(columns=columns)
    payloads = items.set_index("item")["payload"].loc[votes["item"]].to_list()
    frame = pd.DataFrame(
        {
            "item": [p["example"] for p in payloads],
            "rater": votes["rater"].to_numpy(),
            "a": [p["model_a"] for p in payloads],
            "b": [p["model_b"] for p in payloads],
            "outcome": votes["value"].map(OUTCOME).to_numpy(),
            "turn": [int(p["turn"]) for p in payloads],
        }
    )
    for key in STYLE_KEYS:
        for side in ("a", "b"):
            frame[f"{key}_{side}"] = [float(p[f"style_{side}"][key]) for p in payloads]
    return frame[columns]


def win_matrix(outcomes: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Return the row model's win rate over the column model: its wins plus half the ties,
    over the pair's votes that were not "both bad" (NaN for pairs that never met)."""
    matrix = pd.DataFrame(np.nan, index=models, columns=models)
    decided = outcomes[outcomes["outcome"] != "neither"]
    score = decided["outcome"].map({"a": 1.0, "b": 0.0, "both": 0.5})
    won = pd.concat(
        [
            pd.DataFrame({"row": decided["a"], "col": decided["b"], "score": score}),
            pd.DataFrame({"row": decided["b"], "col": decided["a"], "score": 1.0 - score}),
        ]
    )
    for (row, col), part in won.groupby(["row", "col"]):
        matrix.loc[row, col] = part["score"].mean()
    matrix.index.name = "model"
    return matrix


def _style_add(report: Report, outcomes: pd.DataFrame) -> None:
    """Add the style-controlled leaderboard and its coefficients (one connected graph)."""
    decided = outcomes[outcomes["outcome"] != "neither"]
    if decided.empty or len(ranking.comparison_components(outcomes)) > 1:
        report.notes.append(
            "No style-controlled ranking: it needs votes that link every model in one group."
        )
        return
    fit = bradley_terry_style(outcomes, features=STYLE_KEYS)
    report.tables["leaderboard_style"] = fit.table
    report.tables["style_coefficients"] = fit.coefficients
    report.notes.extend(fit.notes)
    report.notes.append(
        "Style-controlled ranking: Bradley–Terry with the difference of the two sides' reply "
        "length and Markdown (headers, list items, bold) as covariates, normalised and "
        "standardised (the public arenas' 'style control'); a strength is then what a model "
        "wins beyond what its length and formatting win it. Same intervals as the leaderboard."
    )


def arena_report(
    parameters: Mapping[str, Any], items: pd.DataFrame, judgments: pd.DataFrame
) -> Report:
    """Build the arena's report from the votes of completed conversations."""
    report = Report(title="Arena: leaderboard of the models by the crowd's votes")
    data = arena_outcomes(items, judgments)
    pairs = ranking.pair_table(data)
    report.tables["pairs"] = pairs
    if data.empty:
        report.notes.append("No votes yet.")
        return report
    models = sorted(set(data["a"]) | set(data["b"]))
    report.tables["win_matrix"] = win_matrix(data, models).reset_index()
    report.tables["win_rates"] = ranking.win_rates(data)
    rankings = ranking.bradley_terry_components(data)
    if len(rankings) == 1:
        report.tables["leaderboard"] = rankings[0]
    else:
        for number, table in enumerate(rankings, start=1):
            report.tables[f"leaderboard_{number}"] = table
        report.notes.append(
            f"The models form {len(rankings)} groups never compared with each other; each "
            "group is ranked on its own (leaderboard_1, leaderboard_2, …)."
        )
    if parameters["style_control"]:
        _style_add(report, data)
    conversations = data["item"].nunique()
    report.notes.append(
        f"{len(data)} votes in {conversations} completed conversations. Votes: A better, B "
        "better, tie (half a win each way) or both bad (left out of Bradley–Terry, like A/B's "
        "'neither'). Strengths are log-strengths (mean 0), Firth's penalised estimates; "
        "95% CIs are Wald intervals widened by the design effect of conversations (a "
        "conversation's votes share its context and worker) and of workers. Only votes "
        "given before the models were revealed exist; conversations in which a model failed "
        "are left out whole."
    )
    report.notes.append(_allocation_note(parameters))
    matrix = ranking.ratio_matrix(pairs, models)
    report.figures["ratio_heatmap"] = heatmap_figure(matrix, pairs, report.tables["win_rates"])
    report.figures["leaderboard"] = ranking_figure(rankings)
    return report


def _allocation_note(parameters: Mapping[str, Any]) -> str:
    """Return how the conversations' model pairs were drawn."""
    cap = (
        f" No worker met the same pair more than {parameters['max_pair_per_worker']} times, "
        f"and every model had {parameters['min_exposure']} conversations before steering."
    )
    if parameters["allocation"] != "adaptive":
        return "Pairs: drawn uniformly per conversation (the pair with fewest first)." + cap
    return adaptive.allocation_note(parameters).replace("judgments", "votes") + cap


def models_table(
    parameters: Mapping[str, Any], dialogues: pd.DataFrame
) -> tuple[pd.DataFrame, list[str]]:
    """Return per model its conversations, how many completed and how many it failed, its
    replies, their mean latency and how many were cut at the length limit; and notes.

    ``dialogues`` has one row per side of a conversation (the side's model in ``model``).
    """
    if not len(dialogues):
        return pd.DataFrame(columns=MODEL_COLUMNS), []
    rows = []
    for model, part in dialogues.groupby("model", sort=True):
        failed = part["flags"].map(lambda flags: any(f in FAILURE_FLAGS for f in flags))
        replies = part["bot_turns"].sum()
        weighted = (part["bot_ms"].fillna(0) * part["bot_turns"]).sum()
        rows.append(
            {
                "model": model,
                "conversations": len(part),
                "complete": int((part["status"] == "complete").sum()),
                "failed": int(failed.sum()),
                "replies": int(replies),
                "reply_ms_mean": weighted / replies if replies else np.nan,
                "cut_replies": int(part["cut"].sum()),
            }
        )
    table = pd.DataFrame(rows, columns=MODEL_COLUMNS)
    notes = []
    excluded = int((dialogues["status"] == "partial").sum()) // 2
    if excluded:
        notes.append(
            f"{excluded} conversations ended early because a model failed; the worker was paid "
            "and the conversation's votes are not counted (models table: 'failed')."
        )
    return table, notes
