"""Judge prompts: a versioned template per protocol (the common head here, the protocol's own
part in its folder: ``Judged.judge_prompt``), the item as the workers read it, and the
questions each item asks.

A template is a text with three placeholders, ``{instructions}`` (what the campaign's workers
read: its own instructions, else the protocol's published wording, ``study_pages``),
``{item}`` (the conversation and response(s), in the order the judge is shown them) and
``{questions}`` (each question with its allowed answers). How the judge answers is added by
the caller: a JSON object (``json`` mode) or one option scored per question (``choice``
mode, ``judges.parse``). The defaults state the published instructions; a
researcher's own template (``judge --template``) must carry a version of its own, which
names the rater (a changed text under an old version would mix two raters' answers).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils import translation

from annotation.protocols import Judged, Protocol, Question, registry
from annotation.study_pages import instructions_shown
from evalsite.errors import InvalidParameters

PLACEHOLDERS = ("instructions", "item", "questions")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")
MAX_TEMPLATE_CHARS = 20_000

_HEAD = (
    "You are one of the raters of a study of dialogue systems. You read exactly what the human "
    "raters read and answer the same questions.\n\nInstructions given to the raters:\n"
    "{instructions}\n\n{item}\n\n"
)


@dataclass(frozen=True)
class JudgeTemplate:
    """A prompt template and the version that names it (part of the judge's rater id)."""

    version: str
    text: str


def template_default(protocol: Protocol) -> JudgeTemplate:
    """Return the protocol's default template: the common head, then the protocol's own
    prompt (``Judged.judge_prompt``) under its version; raise InvalidParameters for a protocol
    that has none (live chats: their items are made while workers chat)."""
    if not isinstance(protocol, Judged):
        judged = sorted(p.name for p in registry.all() if isinstance(p, Judged))
        raise InvalidParameters(
            f"{protocol.title} has no judge template: judges answer {', '.join(judged)}."
        )
    return JudgeTemplate(version=protocol.judge_prompt_version, text=_HEAD + protocol.judge_prompt)


def template_clean(protocol: Protocol, data: Any) -> JudgeTemplate:
    """Return a researcher's template ({version, text}) checked: known placeholders only,
    {item} and {questions} present, and a version of its own when the text differs from
    the default's."""
    default = template_default(protocol)
    if not isinstance(data, Mapping) or set(data) - {"version", "text"}:
        raise InvalidParameters("A judge template is an object with 'version' and 'text' only.")
    version, text = data.get("version"), data.get("text")
    if not isinstance(version, str) or not _VERSION.match(version):
        raise InvalidParameters(
            "The template's 'version' must be 1-40 letters, digits, '.', '_' or '-'."
        )
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEMPLATE_CHARS:
        raise InvalidParameters(
            f"The template's 'text' must be non-empty, at most {MAX_TEMPLATE_CHARS} characters."
        )
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as exc:
        raise InvalidParameters(
            f"The template's text is malformed ({exc}); write a literal brace as {{{{ or }}}}."
        ) from None
    unknown = sorted(names - set(PLACEHOLDERS))
    if unknown:
        raise InvalidParameters(
            f"Unknown placeholder(s) {', '.join('{' + n + '}' for n in unknown)}; "
            f"use {', '.join('{' + n + '}' for n in PLACEHOLDERS)}."
        )
    missing = [n for n in ("item", "questions") if n not in names]
    if missing:
        raise InvalidParameters(
            f"The template must show {' and '.join('{' + n + '}' for n in missing)}."
        )
    if version == default.version and text != default.text:
        raise InvalidParameters(
            f"The text differs from the default template {default.version!r}: give it a "
            "version of its own (the version names the judge)."
        )
    return JudgeTemplate(version=version, text=text)


def item_questions(
    protocol: Protocol, parameters: Mapping[str, Any], payload: Mapping[str, Any]
) -> list[Question]:
    """Return the questions asked about this item: the protocol's, or, for a protocol whose
    questions are the item's lines (EmotionLines: ``u0``, ``u1``, …), one per line with the
    campaign's labels."""
    questions = protocol.questions(parameters)
    if questions:
        return questions
    utterances = payload.get("utterances")
    labels = parameters.get("labels")
    if isinstance(utterances, list) and isinstance(labels, list):
        choices = tuple((str(label), str(label)) for label in labels)
        return [
            Question(key=f"u{i}", text=f"The emotion of line [u{i}].", choices=choices)
            for i in range(len(utterances))
        ]
    raise InvalidParameters(f"{protocol.title} asks no question a judge could answer.")


def _turns(turns: Sequence[Any]) -> str:
    return "\n".join(f"[{i + 1}] {str(t).strip()}" for i, t in enumerate(turns))


def item_text(payload: Mapping[str, Any], presentation: Mapping[str, Any]) -> str:
    """Return the item as the workers see it, in plain text: the conversation, then the
    response, the two responses in the order shown, the lines to label, or the text."""
    parts: list[str] = []
    if isinstance(payload.get("context"), list):
        parts.append("Conversation:\n" + _turns(payload["context"]))
    if isinstance(payload.get("turns"), list):
        parts.append("Conversation:\n" + _turns(payload["turns"]))
    if isinstance(payload.get("utterances"), list):
        lines = [
            f"[u{i}] {(u.get('speaker') or 'Speaker') + ': ' if isinstance(u, Mapping) else ''}"
            f"{u.get('text', '') if isinstance(u, Mapping) else u}"
            for i, u in enumerate(payload["utterances"])
        ]
        parts.append("Conversation (one label per line):\n" + "\n".join(lines))
    if isinstance(payload.get("text"), str):
        parts.append("Text:\n" + payload["text"])
    if isinstance(payload.get("response"), str):
        parts.append("Response:\n" + payload["response"])
    if isinstance(payload.get("response_a"), str):
        order = presentation.get("order") or ["a", "b"]
        for position, side in zip(("First", "Second"), order, strict=False):
            parts.append(f"{position} response:\n{payload.get(f'response_{side}', '')}")
    return "\n\n".join(parts)


def questions_text(questions: Sequence[Question]) -> str:
    """Return the questions, each with its key and allowed answers (value: label)."""
    lines = []
    for q in questions:
        answers = "; ".join(
            f'"{value}"' + (f" ({label})" if label != value else "") for value, label in q.choices
        )
        condition = f' Answer only if "{q.only_if[0]}" is "{q.only_if[1]}".' if q.only_if else ""
        lines.append(f'- "{q.key}": {q.text}{condition} Answers: {answers}.')
    return "Questions:\n" + "\n".join(lines)


def prompt_render(
    template: JudgeTemplate,
    *,
    campaign_instructions: str,
    protocol: Protocol,
    parameters: Mapping[str, Any],
    payload: Mapping[str, Any],
    presentation: Mapping[str, Any],
    questions: Sequence[Question],
) -> str:
    """Return the prompt for one item as shown (the workers' instructions, in English)."""
    with translation.override("en"):
        instructions = instructions_shown(protocol.name, parameters, campaign_instructions)
        question_list = questions_text(questions)
    return template.text.format(
        instructions=instructions.strip() or "(none)",
        item=item_text(payload, presentation),
        questions=question_list,
    )


def json_request(questions: Sequence[Question]) -> str:
    """Return the closing request of ``json`` mode: one JSON object, its keys and values."""
    example = ", ".join(f'"{q.key}": "{q.choices[0][0]}"' for q in questions if q.choices)
    return (
        "\n\nAnswer with one JSON object and nothing else: a key for each question and one of "
        f"its allowed answers as the value, for example {{{example}}}."
    )


def choice_request(question: Question) -> str:
    """Return the closing cue of ``choice`` mode for one question (the option follows it).

    Short on purpose: the prompt lists every question with its text, and a small model's
    choice depends most on the tokens just before it, which should be the item's."""
    return f'\nAnswer to "{question.key}":'
