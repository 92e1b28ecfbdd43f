"""Input that no field accepts is refused at the edge, before any view sees it.

A NUL character cannot be stored in PostgreSQL text or ``jsonb`` (the driver raises, and
the request became a 500), and no person types one: a URL parameter, a form field or a form
field's name containing one is answered 400 with a plain message, JSON for JSON clients, and
the API's own error body under ``/api/`` (docs/api.md, "Errors"). Uploaded files are not
read here: their readers check their content.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict

MESSAGE = "The request contains a NUL character, which no field accepts."
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def _has_nul(data: QueryDict) -> bool:
    return any("\x00" in key or any("\x00" in v for v in data.getlist(key)) for key in data)


# The error body of a part of the site with its own (the API's, registered in its
# AppConfig.ready), by path prefix: the middleware imports no app.
_BODIES: dict[str, Callable[[str], HttpResponse]] = {}


def error_body_register(prefix: str, respond: Callable[[str], HttpResponse]) -> None:
    """Answer a refused request under ``prefix`` with ``respond(message)``."""
    _BODIES[prefix] = respond


class InputMiddleware:
    """Refuse requests whose parameters or form fields contain a NUL character."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        form = request.method == "POST" and request.content_type in _FORMS
        if _has_nul(request.GET) or (form and _has_nul(request.POST)):
            for prefix, respond in _BODIES.items():
                if request.path.startswith(prefix):
                    return respond(MESSAGE)
            if "application/json" in request.headers.get("Accept", ""):
                return JsonResponse({"ok": False, "error": MESSAGE}, status=400)
            return HttpResponse(MESSAGE, status=400, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
