"""``Authorization: Bearer <key>``: the key's user, who must be allowed the dashboard."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from api.errors import ApiError
from api.keys import api_key_may_hold, api_key_user


class KeyAuth(HttpBearer):
    """Authenticate by API key; an unknown or revoked key is 401, a non-researcher 403."""

    def authenticate(self, request: HttpRequest, token: str) -> Any | None:
        user = api_key_user(token.strip())
        if user is None:
            return None
        if not api_key_may_hold(user):
            raise ApiError(403, "The key's account may not use the dashboard (staff only).")
        request.user = user
        return user
