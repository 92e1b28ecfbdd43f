"""The Content-Security-Policy of every response: scripts from this site only.

Every page's scripts are static files (``static/js``, django-ninja's docs page its own, the
admin's Django's), never inline, so ``script-src 'self'`` costs nothing and turns an injected
``<script>`` or ``onclick`` into a refused one. Worker pages set their own ``frame-ancestors``
first (``workerpages.helpers.framed``, the 503 and 429 pages): the directive is added to
theirs. docs/deployment.md, "Content-Security-Policy".
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

SCRIPT_SRC = "script-src 'self'"


def csp_middleware(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable:
    """Add ``script-src 'self'`` to each response's policy (outermost but the probes, so that
    the overload middleware's 503 page has it too)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        policy = response.get("Content-Security-Policy", "")
        if "script-src" not in policy:
            response["Content-Security-Policy"] = "; ".join(filter(None, [policy, SCRIPT_SRC]))
        return response

    return middleware
