"""The page of a login refused by the lockout (django-axes, ``AXES_LOCKOUT_CALLABLE``).

After ``EVALSITE_LOGIN_FAILURES`` wrong passwords for one username from one address, axes
refuses that pair until ``EVALSITE_LOGIN_COOLOFF_MINUTES`` have passed since the last
failure (a failure during the lockout starts the cool-off again). The admin's and the
dashboard's login are the same page, so both are covered. The answer is 429 with
``Retry-After`` and a plain message, JSON for a JSON client.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from evalsite.addresses import address_for_limits, client_address


def login_address(request: HttpRequest) -> str | None:
    """Return the address axes counts a login from (``AXES_CLIENT_IP_CALLABLE``): the one
    ``evalsite.addresses`` finds (behind the proxy, the one it appended, not what the client
    claimed), as limits count it (an IPv6 address by its network: ``address_for_limits``), or
    REMOTE_ADDR if that is not an IP address."""
    address = client_address(request)
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return request.META.get("REMOTE_ADDR") or None
    return address_for_limits(address)


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: Any = None
) -> HttpResponse:
    """Answer a locked-out login: 429, how long to wait, and what to do meanwhile."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    text = (
        f"Too many failed logins for this username from your address. Logins for it are "
        f"refused for {minutes} minutes after the last failed attempt; wait, then try again "
        f"with the right password. An administrator can lift the lockout sooner "
        f"(manage.py axes_reset_username)."
    )
    response: HttpResponse
    accept = request.headers.get("Accept", "")
    if request.content_type == "application/json" or "application/json" in accept:
        response = JsonResponse({"ok": False, "error": text, "locked_out": True}, status=429)
    else:
        context = {"title": "Login locked", "text": text}
        response = render(request, "annotation/message.html", context, status=429)
    response["Retry-After"] = str(minutes * 60)
    response["Cache-Control"] = "no-store"
    return response
