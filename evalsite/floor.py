"""The floor page: the least a database page costs on this stack, for ``bench/hot_path.py``.

``/bench/floor/<slug>/`` reads one campaign by its slug (one indexed SELECT), renders a small
template and passes the whole middleware chain, as every page does. The worker pages are
measured against it: what a page costs above it is the page's own work, what it costs below
it no page can save. Off (404) unless ``EVALSITE_BENCH_FLOOR=1`` is in the server's
environment or ``DEBUG`` is on, so a production site answers it as any unknown address.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.template import engines

from annotation.models import Campaign

_PAGE = engines["django"].from_string(
    "<!doctype html><meta charset=utf-8><title>{{ name }}</title><p>{{ name }}: {{ status }}</p>"
)


def floor_enabled() -> bool:
    """Whether the floor page answers: ``EVALSITE_BENCH_FLOOR=1`` or ``DEBUG``."""
    return settings.DEBUG or os.environ.get("EVALSITE_BENCH_FLOOR") == "1"


def floor(request: HttpRequest, slug: str) -> HttpResponse:
    """Answer a campaign's name and status: one indexed SELECT, a small template."""
    if not floor_enabled():
        raise Http404
    row = Campaign.objects.filter(slug=slug).values("name", "status").first()
    if row is None:
        raise Http404
    return HttpResponse(_PAGE.render(dict(row), request))
