"""The dashboard's access rule, for the API: a key sees what its user sees there."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from annotation.models import Campaign
from dashboard.access import campaign_for


def campaign_of(request: HttpRequest, slug: str) -> Campaign:
    """The campaign ``slug`` if the key's user may see it (``dashboard.access.campaign_for``:
    their own, or any for a superuser); 404 otherwise, as in the dashboard."""
    return campaign_for(user_of(request), slug)


def user_of(request: HttpRequest) -> Any:
    """The user whose key authenticated the request (``auth.KeyAuth``)."""
    return request.auth  # type: ignore[attr-defined]


def actor(request: HttpRequest) -> str:
    """Who the audit log names: the key's user, as the dashboard names them."""
    return str(user_of(request).get_username())
