"""Readable headers and a glossary for the report tables the dashboard shows.

The report's CSV and JSON files keep their machine-readable column names (``ci_low``,
``loo_agreement``, ``sign_test_p``); only the page shows these headers, and explains them
in the campaign page's glossary. One mapping serves the report tables, the worker table and
the ``cell`` template filter (which formats p-values as "< 0.001").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# column → (header, what it means). Columns not listed keep their name, made readable.
COLUMNS: dict[str, tuple[str, str]] = {
    # worker quality
    "pseudonym": ("Worker", "The worker's random pseudonym; reports never show provider ids."),
    "items": ("Items", "Items judged (in agreement tables: items with at least two ratings)."),
    "median_seconds": ("Median s/item", "Median seconds per item, measured by the server."),
    "gold_answered": ("Gold answered", "Hidden gold checks the worker answered."),
    "gold_correct": ("Gold correct", "Gold checks answered with an accepted answer."),
    "gold_accuracy": ("Gold accuracy", "Gold correct / gold answered."),
    "loo_agreement": (
        "Agreement with others",
        "Share of the worker's answers that match the majority of the other workers on the "
        "same item (leave-one-out: the worker's own answer is not counted).",
    ),
    "attention_answered": ("Attention checks", "Attention checks the worker answered."),
    "attention_failed": ("Attention failed", "Attention checks answered against their text."),
    "reliability": (
        "Reliability",
        "MACE-style chance that the worker knows the answer rather than answers from habit, "
        "estimated from gold checks and agreement with the other workers (0: a spammer).",
    ),
    "spam_odds": (
        "Odds unreliable",
        "Likelihood ratio of all the worker's answers for an unreliable worker against an "
        "acceptable one; 1,000 to 1 blocks (5 to 1 for a fast worker).",
    ),
    "soft_blocked": ("Soft-blocked", "Gets no more items here; judgments left out of reports."),
    "flags": ("Flags", "Reasons to look: soft-blocked, attention, gold, agreement, fast, paste."),
    "passes": ("Passes review", "Whether quality control would approve the worker's work."),
    "reason": (
        "Reason",
        "Why the worker passes or fails, and why each flag was raised, with the evidence.",
    ),
    "texts_written": ("Texts written", "Chat messages and situations the worker wrote."),
    "texts_pasted": ("Texts pasted", "Of those, how many were pasted rather than typed."),
    # scores and intervals
    "model": ("Model", "The system whose responses were rated."),
    "model_a": ("Model A", "The first model of the pair."),
    "model_b": ("Model B", "The second model of the pair."),
    # model replies cut at their length limit (annotation/model_replies.py)
    "replies": ("Replies", "The model's replies the campaign's items or conversations show."),
    "truncated": (
        "Truncated",
        "Replies cut at the model's max_new_tokens (finish reason 'length'): rated as shown, "
        "unfinished.",
    ),
    "truncated_share": ("Truncated share", "Truncated replies ÷ replies."),
    "aspect": ("Aspect", "The quality rated (e.g. engagingness)."),
    "n": ("n", "Number of ratings (or comparisons) behind the row."),
    "mean": ("Mean", "Mean rating."),
    "sd": ("SD", "Standard deviation of the ratings."),
    "sem": ("SEM", "Standard error of the mean."),
    "ci_low": ("CI low", "Lower end of the 95% confidence interval."),
    "ci_high": ("CI high", "Upper end of the 95% confidence interval."),
    "ci_method": (
        "CI method",
        "How the interval was computed: a design-aware method (crossed items × raters, a "
        "bootstrap over conversations or dialogues) or one that treats ratings as independent.",
    ),
    "diff": ("Difference", "Mean minus the reference model's mean."),
    "diff_low": ("Difference CI low", "Lower end of the difference's 95% interval."),
    "diff_high": ("Difference CI high", "Upper end of the difference's 95% interval."),
    "p": ("p", "p-value of the difference from the reference model (two-sided)."),
    "p_holm": (
        "p (Holm)",
        "p-value adjusted for the number of comparisons (Holm's method); shown as < 0.001 "
        "when smaller.",
    ),
    "better": ("Better", "Whether the difference is significant after adjustment."),
    "highlighted": ("Highlighted", "Best in its column, as the paper highlights it."),
    "reference": ("Reference", "Published score of the paper, for comparison."),
    # paired comparisons
    "a_wins": ("A wins", "Comparisons won by model A."),
    "b_wins": ("B wins", "Comparisons won by model B."),
    "both": ("Both", "Both responses judged good."),
    "neither": ("Neither", "Neither response judged good."),
    "ratio": ("A:B ratio", "A's wins over B's wins."),
    "sign_test_p": (
        "Sign test p",
        "p-value of the two-sided sign test that A and B win equally often (ties left out).",
    ),
    "decisive": ("Decisive", "Comparisons with a winner (no tie)."),
    "win_rate": ("Win rate", "Share of decisive comparisons won."),
    "neither_rate": ("Neither rate", "Share of comparisons where neither was good."),
    "rank": ("Rank", "Position in the Bradley–Terry ranking."),
    "strength": ("Strength", "Bradley–Terry strength (log scale; higher wins more)."),
    # the arena's style control and operations (annotation/protocols/arena/report.py)
    "strength_style": (
        "Length-controlled strength",
        "Bradley–Terry strength with the replies' length and Markdown as covariates: what the "
        "model wins beyond what its style wins it.",
    ),
    "rank_style": ("Length-controlled rank", "Position in the length-controlled ranking."),
    "feature": ("Feature", "A style difference between the two replies: length or Markdown."),
    "coefficient": (
        "Coefficient",
        "Change in the log-odds of winning per standard deviation of the feature's difference.",
    ),
    "scale": ("Scale", "That standard deviation (a coefficient per unit is coefficient ÷ scale)."),
    "failed": (
        "Failed",
        "Conversations ended early because this model failed (an error, or a reply past the "
        "deadline): the worker was paid, the votes not counted.",
    ),
    "reply_ms_mean": ("Mean reply ms", "Mean time the model took per reply, in milliseconds."),
    "cut_replies": ("Cut replies", "Replies cut at the model's length limit."),
    # agreement
    "level": ("Level", "Measurement level of the ratings (nominal, ordinal, interval)."),
    "alpha": ("Krippendorff's α", "Agreement beyond chance: 1 perfect, 0 chance level."),
    "kappa": ("Fleiss' κ", "Agreement beyond chance for labels: 1 perfect, 0 chance level."),
    "agreement_pct": ("Agreement %", "Percent of rater pairs who agree."),
    "pct_low": ("Agreement % CI low", "Lower end of the agreement's 95% interval."),
    "pct_high": ("Agreement % CI high", "Upper end of the agreement's 95% interval."),
    "note": ("Note", "Why a value is missing or uncertain."),
    "raters": ("Raters", "Workers who rated."),
    # SSA, chats, emotion labels
    "responses": ("Responses", "Responses rated."),
    "sensibleness": ("Sensibleness", "Share of responses judged sensible."),
    "specificity": ("Specificity", "Share of responses judged specific."),
    "ssa": ("SSA", "Sensibleness and Specificity Average."),
    "conversations": ("Conversations", "Conversations collected."),
    "complete": ("Complete", "Conversations that reached their end."),
    "partial": ("Partial", "Conversations that ended early."),
    "flagged": ("Flagged", "Conversations flagged for a look."),
    "turns_mean": ("Mean turns", "Mean turns per conversation."),
    "utterances_mean": ("Mean utterances", "Mean utterances per conversation."),
    "words_per_utterance": ("Words/utterance", "Mean words per utterance."),
    "source": ("Source", "Where the utterances come from."),
    "dialogues": ("Dialogues", "Dialogues labeled."),
    "utterances": ("Utterances", "Utterances labeled."),
    "label": ("Label", "The (gold) label."),
    "votes": ("Votes", "Workers who chose the label."),
    "n_votes": ("Votes", "Workers who voted."),
    "tied": ("Tied", "Whether the vote was tied."),
    "precision": ("Precision", "Correct among those predicted as the class."),
    "recall": ("Recall", "Found among those of the class."),
    "f1": ("F1", "Harmonic mean of precision and recall."),
    "support": ("Support", "Items of the class."),
    "accuracy": ("Accuracy", "Share correct."),
}


def is_p_value(column: str) -> bool:
    """Whether ``column`` holds p-values: ``p``, ``p_holm``, ``p_…`` or ``…_p``."""
    return column == "p" or column.startswith("p_") or column.endswith("_p")


def header(column: str) -> str:
    """Return the readable header of ``column``."""
    if column in COLUMNS:
        return COLUMNS[column][0]
    for end, words in (("_low", "CI low"), ("_high", "CI high")):
        base = column.removesuffix(end)
        if base != column and base in COLUMNS:
            return f"{COLUMNS[base][0]} {words}"
    return column.replace("_", " ")


def explain(column: str) -> str:
    """Return what ``column`` means ("" when the glossary does not know it)."""
    if column in COLUMNS:
        return COLUMNS[column][1]
    for end, words in (("_low", "Lower"), ("_high", "Upper")):
        base = column.removesuffix(end)
        if base != column and base in COLUMNS:
            return f"{words} end of the 95% confidence interval of {COLUMNS[base][0]}."
    return ""


@dataclass(frozen=True)
class Column:
    """One column as the page shows it: its name (kept in data attributes), header, meaning."""

    name: str
    header: str
    help: str


def columns(names: list[str]) -> list[Column]:
    return [Column(name=n, header=header(n), help=explain(n)) for n in names]


def entries(names: list[str]) -> list[Column]:
    """The glossary of ``names`` (each once, in the order given), only those it explains."""
    seen: dict[str, Column] = {}
    for name in names:
        if name not in seen and explain(name):
            seen[name] = Column(name=name, header=header(name), help=explain(name))
    return list(seen.values())


def format_cell(value: Any, column: str = "") -> str:
    """Show a table cell: floats to 3 decimals, p-values under 0.001 as "< 0.001", missing
    values as an en dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float) and column and is_p_value(column):
        return "< 0.001" if value < 0.001 else f"{value:.3f}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
