"""Items as a researcher reads them: the item browser (search and pages), one item previewed
as its worker sees it, and payloads and answers in words (the browser and the spot-check).

Reads only: nothing here creates an assignment, a lease or a judgment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils.safestring import mark_safe

from annotation.models import Campaign, Item
from annotation.protocols import LiveChat, Question, registry
from annotation.study_pages import markdown_safe

PAGE_SIZE = 50
QUERY_MAX = 200  # characters of a search; a longer one is cut (and said so)


@dataclass(frozen=True)
class Field:
    """One field of an item's payload in words: its name and its lines (a list's entries)."""

    label: str
    lines: list[str]


def _text(value: Any) -> str:
    """Return a JSON value as a reader writes it: no quotes, brackets or braces."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, Mapping):
        if {"speaker", "text"} <= set(value):  # an utterance of a dialogue
            return f"{value['speaker']}: {value['text']}"
        return "; ".join(f"{k}: {_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value)
    return json.dumps(value, ensure_ascii=False)


def payload_fields(payload: Any) -> list[Field]:
    """Return an item's payload field by field; a list (turns, utterances) one line each."""
    if not isinstance(payload, Mapping):
        return [Field("item", [_text(payload)])]
    fields = []
    for key, value in payload.items():
        label = str(key).replace("_", " ")
        if isinstance(value, list | tuple):
            fields.append(Field(label, [_text(v) for v in value] or ["—"]))
        else:
            fields.append(Field(label, [_text(value)]))
    return fields


def answer_lines(questions: list[Question], answers: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return (question as asked, answer with its label) for each answer, in the questions'
    order; an answer to a question the protocol no longer asks keeps its key."""
    asked = {q.key: q for q in questions}
    order = [q.key for q in questions if q.key in answers]
    order += [k for k in answers if k not in asked]
    lines = []
    for key in order:
        value, question = answers[key], asked.get(key)
        if question is None:
            lines.append((key, _text(value)))
            continue
        label = dict(question.choices).get(str(value), "")
        shown = f"{value} ({label})" if label and label != str(value) else _text(value)
        lines.append((question.text, shown))
    return lines


def campaign_questions(campaign: Campaign) -> list[Question]:
    """Return the questions the campaign's workers answer (its protocol with its parameters)."""
    protocol = registry.get(campaign.protocol)
    return protocol.questions(protocol.clean_parameters(campaign.parameters))


@dataclass(frozen=True)
class ItemsPage:
    """One page of a campaign's items, the search that chose them and what it matched."""

    page: Page
    query: str
    matched: int
    total: int
    cut: bool  # the query was longer than QUERY_MAX and was cut


def items_page(campaign: Campaign, *, query: str = "", page: str | int = 1) -> ItemsPage:
    """Return a page of the campaign's items (gold checks included), by key; ``query``
    keeps those whose key or payload text contains it (any case). A page number that is not
    one goes to the first page, one past the end to the last."""
    query = query.strip()
    cut = len(query) > QUERY_MAX
    query = query[:QUERY_MAX]
    items = campaign.items.order_by("key")
    total = items.count()
    if query:
        # JSON text: PostgreSQL keeps non-ASCII letters as they are; SQLite stores them as
        # \\u escapes, so there a search for them matches keys only.
        items = items.annotate(text=Cast("payload", TextField())).filter(
            Q(key__icontains=query) | Q(text__icontains=query)
        )
    paginator = Paginator(items.only("pk", "key", "payload", "gold"), PAGE_SIZE)
    return ItemsPage(
        page=paginator.get_page(page),
        query=query,
        matched=paginator.count,
        total=total,
        cut=cut,
    )


def item_previewable(campaign: Campaign) -> bool:
    """Tell whether the campaign's items have a worker page (live chats make theirs)."""
    return not isinstance(registry.get(campaign.protocol), LiveChat)


def item_preview_context(campaign: Campaign, item: Item) -> dict[str, Any]:
    """Return the worker task page's context for ``item`` in preview: the answers disabled,
    no token, no submission (``templates/annotation/task.html``, as ``workerpages.views``
    renders a preview)."""
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    return {
        "campaign": campaign,
        "preview": True,
        "protocol_template": protocol.template_name,
        # the researcher's instructions, sanitised by markdown_safe (as the worker page)
        "instructions_card": (
            mark_safe(markdown_safe(campaign.instructions)) if campaign.instructions.strip() else ""
        ),
        "payload": item.payload,
        "shown": protocol.presentation(parameters, item.payload, "preview"),
        "fields": [{"q": q, "error": "", "answer": ""} for q in protocol.questions(parameters)],
        "total": campaign.items_per_assignment,
        "visit": {"position": 1, "item": None},
        "script_strings": {},
    }
