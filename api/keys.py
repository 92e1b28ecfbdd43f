"""API keys: create (the full key is returned once), list, revoke, and authenticate."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from api.models import ApiKey
from evalsite.errors import InvalidParameters, NotFound

PREFIX = "evs_"
# A key's first characters (``evs_`` and 8 more) name it in lists; they are not secret.
SHOWN = len(PREFIX) + 8
# ``last_used_at`` is written at most this often per key, not on every request.
TOUCH_EVERY = timedelta(minutes=1)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_key_may_hold(user: Any) -> bool:
    """Whether ``user`` may hold a key: the dashboard's rule (active staff accounts)."""
    return bool(user.is_active and user.is_staff)


def api_key_create(*, user: Any, name: str = "") -> tuple[ApiKey, str]:
    """Create a key for ``user``; return its row and the full key, which is never stored."""
    if not api_key_may_hold(user):
        raise InvalidParameters(
            f"{user.get_username()} is not an active staff account: only researchers who may "
            "use the dashboard get API keys."
        )
    name = name.strip()
    if len(name) > 100:
        raise InvalidParameters("The key's name must be at most 100 characters.")
    key = PREFIX + secrets.token_urlsafe(32)
    row = ApiKey.objects.create(user=user, name=name, prefix=key[:SHOWN], digest=_digest(key))
    return row, key


def api_keys_of(user: Any) -> QuerySet[ApiKey]:
    """Return the user's keys, newest first, revoked ones included."""
    return ApiKey.objects.filter(user=user).order_by("-created_at", "-pk")


def api_key_revoke(*, user: Any, prefix: str) -> ApiKey:
    """Revoke the user's key whose prefix is ``prefix``; a revoked key stays revoked."""
    row = ApiKey.objects.filter(user=user, prefix=prefix.strip()).first()
    if row is None:
        raise NotFound(f"{user.get_username()} has no key {prefix.strip()[:20]!r}.")
    if row.revoked_at is None:
        ApiKey.objects.filter(pk=row.pk, revoked_at=None).update(revoked_at=timezone.now())
        row.refresh_from_db(fields=["revoked_at"])
    return row


def api_key_user(key: str) -> Any | None:
    """Return the user of an active key, or None (unknown, revoked, or its user may not hold
    one any more). Notes when the key was used, at most once a minute."""
    if not key.startswith(PREFIX) or len(key) > 200:
        return None
    row = ApiKey.objects.select_related("user").filter(digest=_digest(key)).first()
    if row is None or row.revoked_at is not None:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > TOUCH_EVERY:
        ApiKey.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user
