"""The researcher's API keys in the dashboard: list, create (the key shown once), revoke.

Thin views over ``api.keys``, the services the ``api_key`` command calls. A new key is put
in the page that answers the POST, never in a message or the session, and that page is
not cached.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from api.keys import api_key_create, api_key_revoke, api_keys_of
from dashboard.access import staff_required
from evalsite.errors import AnnotationError


def _page(request: HttpRequest, new_key: str = "") -> HttpResponse:
    context = {"keys": api_keys_of(request.user), "new_key": new_key}
    response = render(request, "dashboard/api_keys.html", context)
    add_never_cache_headers(response)
    return response


@require_GET
@staff_required
def api_keys(request: HttpRequest) -> HttpResponse:
    return _page(request)


@require_POST
@staff_required
def api_key_new(request: HttpRequest) -> HttpResponse:
    try:
        _, key = api_key_create(user=request.user, name=request.POST.get("name", ""))
    except AnnotationError as exc:
        messages.error(request, exc.message)
        return redirect("apikeys:list")
    return _page(request, new_key=key)


@require_POST
@staff_required
def api_key_revoke_view(request: HttpRequest) -> HttpResponse:
    try:
        row = api_key_revoke(user=request.user, prefix=request.POST.get("prefix", ""))
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Revoked {row.prefix}…; it no longer opens the API.")
    return redirect("apikeys:list")
