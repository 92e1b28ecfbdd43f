"""The network address a request came from, for limits per address."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """Return the client's address: behind the one trusted proxy (``EVALSITE_BEHIND_PROXY``,
    which also sets ``SECURE_PROXY_SSL_HEADER``) the address that proxy appended last to
    X-Forwarded-For (earlier entries are whatever the client claimed), else REMOTE_ADDR."""
    if settings.SECURE_PROXY_SSL_HEADER is not None:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return str(request.META.get("REMOTE_ADDR", ""))[:64]
