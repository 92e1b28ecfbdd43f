"""What a campaign's model replies say of themselves: which were cut at ``max_new_tokens``,
and which prompt formats produced them.

A reply the model did not finish (``finish_reason`` "length") is rated as it was shown, and a
reader must know how many such replies the scores rest on. Live chats store the finish reason
with each bot turn's item; items built from generations are matched with the replies modelhub
stored as cut (same model, same text). Items whose responses came from a file carry no finish
reason and count as finished. The prompt formats (chat template hash and conversation format,
``modelhub``'s ``Reply.prompt_format``) are those of the models' stored replies and of the
live chats' bot turns, so a report says which format produced its replies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
from django.db.models.fields.json import KeyTextTransform

from annotation.models import Campaign, Item
from annotation.protocols import Report
from modelhub.selectors import generations_prompt_formats, generations_truncated

SIDES = (("model", "response"), ("model_a", "response_a"), ("model_b", "response_b"))
TRUNCATED_COLUMNS = ["model", "replies", "truncated", "truncated_share"]


def _shown(payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return the (model, reply) pairs an item shows (one, or two for A/B)."""
    return [
        (payload[m], payload[r])
        for m, r in SIDES
        if isinstance(payload.get(m), str) and isinstance(payload.get(r), str)
    ]


def _models(campaign: Campaign) -> set[str]:
    """Return the names of the models whose replies the campaign's items show (one query)."""
    rows = (
        Item.objects.filter(campaign=campaign)
        .values_list(*(KeyTextTransform(side, "payload") for side, _ in SIDES))
        .distinct()
    )
    return {name for row in rows for name in row if name}


def campaign_cut_replies(campaign: Campaign) -> set[tuple[str, str]]:
    """Return the (model, reply) pairs modelhub stored as cut, for the models the campaign's
    items show (one query for the names, one for the replies)."""
    return generations_truncated(models=_models(campaign))


def payload_truncated(payload: Any, cut: set[tuple[str, str]]) -> bool:
    """Say whether an item shows a truncated reply: its own finish reason (a live chat's bot
    turn) or a reply modelhub stored as cut (``cut``, from ``campaign_cut_replies``)."""
    if not isinstance(payload, Mapping):
        return False
    return payload.get("finish_reason") == "length" or any(p in cut for p in _shown(payload))


@dataclass(frozen=True)
class Shown:
    """The model replies a campaign's items show: (model, reply, the item says it was cut),
    one per reply shown, and live chats' prompt formats per model."""

    replies: list[tuple[str, str, bool]]
    chat_formats: dict[str, list[str]]

    @property
    def models(self) -> set[str]:
        return {model for model, _, _ in self.replies}


def campaign_shown_replies(campaign: Campaign) -> Shown:
    """Read the campaign's items once for what their model replies say of themselves."""
    payloads = Item.objects.filter(campaign=campaign, gold__isnull=True).values_list(
        "payload", flat=True
    )
    replies: list[tuple[str, str, bool]] = []
    chat_formats: dict[str, list[str]] = {}
    for payload in payloads.iterator():
        if not isinstance(payload, Mapping):
            continue
        own = payload.get("finish_reason") == "length"
        replies.extend((m, t, own) for m, t in _shown(payload))
        model, prompt_format = payload.get("model"), payload.get("prompt_format")
        if model and prompt_format and prompt_format not in chat_formats.get(model, []):
            chat_formats.setdefault(model, []).append(prompt_format)
    return Shown(replies=replies, chat_formats=chat_formats)


def truncated_table(shown: Shown) -> pd.DataFrame:
    """Return, per model, the replies shown and how many were truncated (columns ``model``,
    ``replies``, ``truncated``, ``truncated_share``); empty without model replies."""
    if not shown.replies:
        return pd.DataFrame(columns=TRUNCATED_COLUMNS)
    cut = generations_truncated(models=shown.models)
    rows = [(m, own or (m, t) in cut) for m, t, own in shown.replies]
    frame = pd.DataFrame(rows, columns=["model", "cut"])
    table = frame.groupby("model", sort=True)["cut"].agg(replies="size", truncated="sum")
    table = table.reset_index().astype({"replies": int, "truncated": int})
    table["truncated_share"] = table["truncated"] / table["replies"]
    return table[TRUNCATED_COLUMNS]


def prompt_formats(shown: Shown) -> dict[str, list[str]]:
    """Return, per model shown, the prompt formats of its replies: those of its stored
    generations, then those of the campaign's live-chat bot turns."""
    formats = generations_prompt_formats(models=shown.models)
    for model, chat in shown.chat_formats.items():
        known = formats.setdefault(model, [])
        known.extend(f for f in chat if f not in known)
    return {model: found for model, found in formats.items() if found}


def campaign_replies_notes(report: Report, campaign: Campaign) -> None:
    """Add to the report what the campaign's model replies say of themselves: the truncated
    ones (a table and a note, when any) and the prompt formats (a note)."""
    shown = campaign_shown_replies(campaign)
    truncation_note(report, truncated_table(shown))
    prompt_formats_note(report, prompt_formats(shown))


def prompt_formats_note(report: Report, formats: Mapping[str, list[str]]) -> None:
    """Add a note naming each model's prompt format(s), and warn when one model's replies
    were produced by several (a template or conversation format changed mid-study)."""
    if not formats:
        return
    listed = "; ".join(f"{m}: {', '.join(f)}" for m, f in sorted(formats.items()))
    mixed = sorted(m for m, f in formats.items() if len(f) > 1)
    report.notes.append(
        f"Prompt formats of the models' replies: {listed}."
        + (f" Mixed formats for {', '.join(mixed)}: compare with care." if mixed else "")
    )


def truncation_note(report: Report, table: pd.DataFrame) -> None:
    """Add the ``truncated`` table and a note to the report when any reply was cut."""
    cut = table[table["truncated"] > 0]
    if cut.empty:
        return
    report.tables["truncated"] = table
    counts = "; ".join(f"{r.model}: {r.truncated} of {r.replies}" for r in cut.itertuples())
    report.notes.append(
        f"Truncated replies (cut at max_new_tokens, finish_reason=length), rated as shown: "
        f"{counts}. Raise the model's max_new_tokens and generate again, or leave those items "
        "out (the export's `truncated` column says which)."
    )
