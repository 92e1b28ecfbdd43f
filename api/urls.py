"""/api/v1/: the ninja API, and the error body for any other path under it."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, re_path

from api.errors import error_response, not_found_view
from api.main import api


def _method_error_body(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer a method the path does not take (ninja's plain-text 405) with the error body."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code != 405:
            return response
        allowed = response.get("Allow", "")
        answer = error_response(405, f"{request.method} is not allowed here; use {allowed}.")
        answer["Allow"] = allowed
        return answer

    return wrapped


_patterns, _app, _namespace = api.urls  # not ``app_name``: include() would read it here
for _pattern in _patterns:
    if isinstance(_pattern, URLPattern):
        _pattern.callback = _method_error_body(_pattern.callback)

urlpatterns = [
    path("", (_patterns, _app, _namespace)),
    re_path(r"^(?P<rest>.*)$", not_found_view),
]
