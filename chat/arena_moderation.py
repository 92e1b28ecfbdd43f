"""The arena's optional moderation hook: it may refuse a worker's message before either model
sees it (docs/chat.md, "Arena").

The site configures its hooks by name in ``EVALSITE_MODERATION`` (``name=target`` pairs
separated by ``;``, read by ``evalsite.env.read_hooks``); a study names one of them in its
``moderation`` parameter, so a study's settings can never make the server import code or
call an address the operator did not list. A target is either a Python callable,
``package.module:function``, called with the message's text and returning None to let it
through or the reason to refuse it; or an ``http(s)://`` address, sent ``{"text": ...}`` as
a JSON POST and answering ``{"allowed": bool, "reason": str}``. A hook that fails or does
not answer within ``TIMEOUT_S`` refuses the message (fail closed: a moderated study never
lets an unchecked message through); the worker is asked to try again.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

import httpx
from django.conf import settings
from django.utils.translation import gettext

from evalsite.errors import InvalidAnswer

logger = logging.getLogger(__name__)
TIMEOUT_S = 5.0


def _callable(target: str) -> Callable[[str], Any]:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _verdict(target: str, text: str) -> str | None:
    """Return the hook's reason to refuse ``text``, or None to let it through."""
    if target.startswith(("http://", "https://")):
        response = httpx.post(target, json={"text": text}, timeout=TIMEOUT_S)
        response.raise_for_status()
        answer = response.json()
        if not isinstance(answer, dict) or not isinstance(answer.get("allowed"), bool):
            raise ValueError("the moderation endpoint must answer {'allowed': bool, 'reason': str}")
        return None if answer["allowed"] else str(answer.get("reason") or "")
    reason = _callable(target)(text)
    return None if reason is None else str(reason)


def message_moderate(hook: str, text: str) -> None:
    """Refuse ``text`` (InvalidAnswer, nothing stored) if the study's hook says so or fails."""
    if not hook:
        return
    target = settings.EVALSITE_MODERATION.get(hook)
    try:
        if target is None:
            raise LookupError(f"no moderation hook {hook!r} is configured")
        reason = _verdict(target, text)
    except Exception as exc:  # a failing hook refuses: the message is never sent unchecked
        logger.warning("moderation hook %s failed: %s", hook, exc)
        raise InvalidAnswer(
            gettext("Your message could not be checked just now; please try again."),
            fields={"text": gettext("Not checked.")},
        ) from None
    if reason is not None:
        shown = reason[:200] or gettext("it breaks the study's rules")
        raise InvalidAnswer(
            gettext("This message cannot be sent: %(reason)s.") % {"reason": shown},
            fields={"text": gettext("Refused by moderation.")},
        )
