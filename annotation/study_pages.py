"""Study pages: a campaign's description, instructions and consent text (docs/protocols.md,
"Study pages and consent").

The texts are Markdown written by researchers and shown to workers, so they are rendered by
``markdown`` and then cleaned by ``nh3`` (the maintained Rust sanitizer): scripts, event
handlers, styles and ``javascript:`` links never reach a worker's page. Django only for
its translations (the texts below are shown in the campaign's language) and the site's
``LANGUAGES``. Each protocol's published instructions live in its folder
(``Protocol.instructions``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import markdown
import nh3
from django.conf import settings
from django.utils import translation
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.protocols import registry
from evalsite.errors import InvalidParameters

# The study texts and their longest lengths (characters).
STUDY_FIELDS: dict[str, int] = {
    "description": 20_000,
    "instructions": 20_000,
    "consent_text": 50_000,
    "consent_version": 32,
    "training_qualification": 64,  # a name, not shown: letters, digits, "-", "_", "."
    "language": 8,  # of the worker pages: a code of settings.LANGUAGES
}

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "dl", "dt", "em", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "strong", "sub", "sup", "table",
    "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_NAME = re.compile(r"[A-Za-z0-9_.-]*")
_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}}

# What a worker who declines consent is asked to do, per provider: nothing was stored.
DECLINED: dict[str, Promise] = {
    "mturk": _(
        "You did not consent, so you will not take part and nothing about you was "
        "stored. Please return this HIT on Mechanical Turk (the “Return” button) so that "
        "someone else can take it; returning does not affect your approval rating."
    ),
    "prolific": _(
        "You did not consent, so you will not take part and nothing about you was "
        "stored. Please return the study on Prolific (“Stop without completing” / return "
        "your submission): you will not be penalised, and your place goes to someone else."
    ),
    "local": _(
        "You did not consent, so you will not take part and nothing about you was "
        "stored. Thank you for your interest; you may close this page."
    ),
}


# What a worker who used every training attempt is asked to do, per provider: nothing is held
# against them (no rejection), and the place goes back to the pool.
TRAINING_FAILED: dict[str, Promise] = {
    "mturk": _(
        "Thank you for trying. Your training answers did not reach this study's pass "
        "mark, so it cannot go on. Please return this HIT on Mechanical Turk (the “Return” "
        "button); returning does not affect your approval rating and nothing is rejected."
    ),
    "prolific": _(
        "Thank you for trying. Your training answers did not reach this study's pass "
        "mark, so it cannot go on. Please return the study on Prolific (“Stop without "
        "completing” / return your submission): you will not be rejected or penalised."
    ),
    "local": _(
        "Thank you for trying. Your training answers did not reach this study's pass "
        "mark, so it cannot go on. You may close this page."
    ),
}


def markdown_safe(text: str) -> str:
    """Return ``text`` (Markdown) as HTML that is safe to put in a worker's page."""
    if not text.strip():
        return ""
    html = markdown.markdown(text, extensions=["tables", "sane_lists"])
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def instructions_default(protocol: str, parameters: Mapping[str, Any]) -> str:
    """Return the published instructions (Markdown) of the protocol called ``protocol`` for
    these parameters, in the active language (``Protocol.default_instructions``)."""
    return registry.get(protocol).default_instructions(parameters)


def instructions_shown(protocol: str, parameters: Mapping[str, Any], own: str) -> str:
    """Return the instructions a worker reads: the campaign's own, or else the published
    wording in the active language (also when ``own`` is that wording copied in English)."""
    if own.strip():
        with translation.override("en"):
            published = instructions_default(protocol, parameters)
        if own.strip() != published.strip():
            return own
    return instructions_default(protocol, parameters)


def study_clean(values: Mapping[str, Any]) -> dict[str, str]:
    """Return the cleaned study texts; raise InvalidParameters naming every bad or unknown one.

    The consent version is any short label ("1", "2026-11-a"); empty, it is "1".
    """
    errors: dict[str, str] = {}
    cleaned: dict[str, str] = {}
    for name, value in values.items():
        if name not in STUDY_FIELDS:
            errors[str(name)[:64]] = f"Unknown study text; known: {', '.join(STUDY_FIELDS)}."
            continue
        text = "" if value is None else value
        if not isinstance(text, str):
            errors[name] = "Must be text."
            continue
        text = text.strip() if name == "consent_version" else text.replace("\r\n", "\n")
        if name == "training_qualification":
            text = text.strip()
        if name == "language":
            text = text.strip()
            if text not in [c for c, _name in settings.LANGUAGES]:
                known = ", ".join(c for c, _name in settings.LANGUAGES)
                errors[name] = f"Unknown language {text[:16]!r}; use one of {known}."
                continue
        if "\x00" in text:
            errors[name] = "Must not contain NUL characters."
        elif name == "training_qualification" and not _NAME.fullmatch(text):
            errors[name] = "Letters, digits, '-', '_' and '.' only (empty: the protocol's name)."
        elif len(text) > STUDY_FIELDS[name]:
            errors[name] = f"At most {STUDY_FIELDS[name]:,} characters."
        else:
            cleaned[name] = text
    if cleaned.get("consent_version") == "":
        cleaned["consent_version"] = "1"
    if errors:
        first = next(iter(errors.values()))
        raise InvalidParameters(
            first if len(errors) == 1 else "Invalid study texts.", fields=errors
        )
    return cleaned
