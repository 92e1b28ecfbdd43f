"""The arena's checks: its parameters, and the payload of a voted exchange."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

from annotation.protocols.base import context_clean
from annotation.protocols.empathetic_chat import _ranges_check
from evalsite.errors import InvalidParameters

MAX_REASON = 2000
MAX_MODELS = 64
# A side's style features, summed over its replies so far (``evalstats.style.style_features``).
STYLE_KEYS = ("chars", "headers", "lists", "bold")
STYLE_SIDES = ("style_a", "style_b")
_RANGES: dict[str, tuple[int, int]] = {
    "conversations": (1, 1_000_000),
    "min_turns": (1, 50),
    "max_turns": (1, 50),
    "min_seconds": (0, 3600),
    "reply_deadline_s": (5, 600),
    "utterance_max_chars": (20, 5000),
    "heartbeat_s": (1, 120),
    "messages_per_minute": (1, 120),
    "max_pair_per_worker": (1, 1000),
    "min_exposure": (0, 100_000),
    "n_boot": (0, 100_000),
}


def arena_parameters_check(cleaned: Mapping[str, Any]) -> dict[str, str]:
    """Return an error per invalid arena parameter (``cleaned``: merged with the defaults)."""
    errors = _ranges_check(cleaned, _RANGES)
    models = cleaned["models"]
    if (
        not isinstance(models, list)
        or not 2 <= len(models) <= MAX_MODELS
        or not all(isinstance(m, str) and m.strip() and len(m) <= 64 for m in models)
        or len({m.strip() for m in models}) != len(models)
    ):
        errors["models"] = (
            f"Name 2–{MAX_MODELS} different registered models (a list of names): each "
            "conversation draws two of them."
        )
    if not isinstance(cleaned["question"], str) or not cleaned["question"].strip():
        errors["question"] = "Give the question the worker answers."
    if cleaned["vote"] not in ("each", "end"):
        errors["vote"] = "Must be 'each' (a vote after every exchange) or 'end' (one at the end)."
    for key in ("reveal", "reason", "style_control"):
        if not isinstance(cleaned[key], bool):
            errors[key] = "Must be true or false."
    if not errors and cleaned["min_turns"] > cleaned["max_turns"]:
        errors["min_turns"] = "Must not exceed max_turns."
    errors.update(_attention_check(cleaned))
    hook = cleaned["moderation"]
    hooks = getattr(settings, "EVALSITE_MODERATION", {}) or {}
    if not isinstance(hook, str) or (hook and hook not in hooks):
        known = ", ".join(sorted(hooks)) or "none is configured"
        errors["moderation"] = (
            f"Name a moderation hook of the site's EVALSITE_MODERATION ({known}), or '' for none."
        )
    return errors


def _attention_check(cleaned: Mapping[str, Any]) -> dict[str, str]:
    """Return an error per invalid attention-check parameter."""
    errors: dict[str, str] = {}
    rate = cleaned["attention_rate"]
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 0.5:
        errors["attention_rate"] = "Must be a share of exchanges from 0 to 0.5."
    elif rate and cleaned["vote"] != "each":
        errors["attention_rate"] = (
            "Attention checks need a vote after every exchange (vote 'each'): with one vote "
            "at the end, a check on an earlier exchange would never be answered."
        )
    text = cleaned["attention_text"]
    if not isinstance(text, str) or "%(side)s" not in text or not 10 <= len(text) <= 500:
        errors["attention_text"] = (
            "Give the check's text (10–500 characters) with %(side)s where the side's label goes."
        )
    else:
        try:
            text % {"side": "A"}
        except (KeyError, ValueError, TypeError):
            errors["attention_text"] = "Use %(side)s for the label and %% for a percent sign."
    return errors


def _conversation_clean(value: Any, field: str) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise InvalidParameters(f"'{field}' must be a non-empty list of turns.")
    turns = []
    for n, turn in enumerate(value, start=1):
        role = turn.get("role") if isinstance(turn, Mapping) else None
        content = turn.get("content") if isinstance(turn, Mapping) else None
        if role not in ("user", "assistant") or not isinstance(content, str):
            raise InvalidParameters(
                f"'{field}' turn {n}: give a 'role' (user or assistant) and a 'content' text."
            )
        turns.append({"role": role, "content": content})
    return turns


def _style_clean(value: Any, field: str) -> dict[str, int]:
    if not isinstance(value, Mapping) or set(value) != set(STYLE_KEYS):
        raise InvalidParameters(f"'{field}' must give {', '.join(STYLE_KEYS)}.")
    for key in STYLE_KEYS:
        number = value[key]
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise InvalidParameters(f"'{field}.{key}' must be a whole number, 0 or more.")
    return {key: int(value[key]) for key in STYLE_KEYS}


def arena_payload_clean(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Return a voted exchange's payload, checked; raise InvalidParameters naming the fault."""
    context = context_clean(payload)
    for key in ("model_a", "model_b", "response_a", "response_b", "example"):
        if not isinstance(payload.get(key), str) or not payload[key].strip():
            raise InvalidParameters(f"'{key}' must be a non-empty string.")
    if payload["model_a"].strip() == payload["model_b"].strip():
        raise InvalidParameters("The two models of an arena exchange must differ.")
    turn = payload.get("turn")
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise InvalidParameters("'turn' must be the exchange's number (1 or more).")
    cleaned: dict[str, Any] = {
        "context": context,
        **{k: payload[k].strip() for k in ("model_a", "model_b", "example")},
        "response_a": payload["response_a"],
        "response_b": payload["response_b"],
        "turn": turn,
    }
    for side in ("a", "b"):
        cleaned[f"conversation_{side}"] = _conversation_clean(
            payload.get(f"conversation_{side}"), f"conversation_{side}"
        )
        cleaned[f"style_{side}"] = _style_clean(payload.get(f"style_{side}"), f"style_{side}")
        finish = payload.get(f"finish_{side}", "stop")
        if not isinstance(finish, str) or not finish.strip() or len(finish) > 32:
            raise InvalidParameters(f"'finish_{side}' must say why the reply ended (stop, length).")
        cleaned[f"finish_{side}"] = finish.strip()
    language = payload.get("language", "")
    if not isinstance(language, str) or len(language) > 16:
        raise InvalidParameters("'language' must be a language code.")
    cleaned["language"] = language
    return cleaned
