"""One error body for every 4xx of the API: ``{"error": {"code", "message", "field"}}``.

Services raise ``AnnotationError`` (its ``status_code`` and message carry over, and its
first field names ``field``); ninja raises its validation, authentication and parse errors;
each handler here turns one of them into the same body. A body holding a NUL character is
refused before any field is read (PostgreSQL cannot store one), as the site's input
middleware refuses one in a URL or form.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from evalsite.errors import AnnotationError, TooMany

if TYPE_CHECKING:
    from ninja import NinjaAPI

logger = logging.getLogger(__name__)

NUL_MESSAGE = "The request body contains a NUL character, which no field accepts."


class ErrorDetail(Schema):
    code: str
    message: str
    field: str | None = None


class ErrorOut(Schema):
    """Every 4xx answer of the API."""

    error: ErrorDetail


CODES = {
    400: "invalid",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    422: "invalid",
    429: "too_many_requests",
}


# The 4xx statuses every operation documents, all with ``ErrorOut``.
CLIENT_ERRORS = frozenset(CODES) - {405}


class ApiError(Exception):
    """An error the API itself answers (the idempotency checks, a missing file)."""

    def __init__(self, status: int, message: str, *, code: str = "", field: str | None = None):
        super().__init__(message)
        self.status, self.message, self.field = status, message, field
        self.code = code or CODES.get(status, "error")


def error_body(status: int, message: str, *, code: str = "", field: str | None = None) -> dict:
    return {
        "error": {"code": code or CODES.get(status, "error"), "message": message, "field": field}
    }


def error_response(
    status: int, message: str, *, code: str = "", field: str | None = None
) -> JsonResponse:
    return JsonResponse(error_body(status, message, code=code, field=field), status=status)


class _NulInBody(ValueError):
    pass


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


class StrictParser(Parser):
    """JSON bodies, refused when any key or text holds a NUL character."""

    def parse_body(self, request: HttpRequest) -> Any:
        data = json.loads(request.body)
        if _has_nul(data):
            raise _NulInBody(NUL_MESSAGE)
        return data


def query_check(request: HttpRequest, schema: type[Schema] | frozenset[str]) -> None:
    """Refuse query parameters ``schema`` (or the set of names) does not name (ninja would
    ignore them)."""
    names = schema if isinstance(schema, frozenset) else set(schema.model_fields)
    unknown = sorted(set(request.GET) - names)
    if unknown:
        name = unknown[0][:64]
        raise ApiError(422, f"Unknown query parameter {name!r}.", field=name)


def _union_tag(part: str) -> bool:
    """Whether a location part names a union's member (``list[constrained-str]``), not a field."""
    return "[" in part or part.startswith("constrained-") or part in ("str", "int", "float", "bool")


def _field(loc: Any) -> str | None:
    """The field a pydantic location names (``["body", "payload", "settings", "budget"]``)."""
    parts = [str(p) for p in (loc or ()) if p not in ("body", "query", "path", "header", "form")]
    # The envelope's names go; a setting or study text is named alone, as the services name it.
    envelope = ("payload", "data", "filters", "settings", "study")
    parts = [p for p in parts if p not in envelope and not _union_tag(p)] or parts
    return ".".join(parts) or None


# What a field refused by its pattern must look like, in words (pydantic prints the regex).
PATTERN_HINTS = {
    "slug": "use 1–64 lowercase letters, digits or '-', starting with a letter or digit",
    "url": "use an http:// or https:// address with a host name or IP address (port 1–65535)",
    "name": "use 1–64 letters, digits, '-' or '_'",
    "protocol": "use a protocol's name (lowercase letters, digits and '_'; docs/api.md)",
}


def _validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0] if exc.errors else {}
    message = str(first.get("msg") or "Invalid request.")
    field = _field(first.get("loc"))
    if first.get("type") == "string_pattern_mismatch" and field in PATTERN_HINTS:
        message = f"Not a valid {field}: {PATTERN_HINTS[field]}."
    elif field:
        message = f"{field}: {message}"
    if len(exc.errors) > 1:
        message += f" (and {len(exc.errors) - 1} more)"
    return error_response(422, message, field=field)


def _http(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, _NulInBody):
        return error_response(400, NUL_MESSAGE)
    if exc.__cause__ is not None and exc.status_code == 400:
        return error_response(400, "The body is not valid JSON.", code="invalid_json")
    return error_response(exc.status_code, exc.message)


def _annotation(request: HttpRequest, exc: AnnotationError) -> HttpResponse:
    field = next(iter(exc.fields), None)
    response = error_response(exc.status_code, exc.message, field=field)
    if isinstance(exc, TooMany):
        response["Retry-After"] = str(exc.retry_after)
    return response


def _api(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return error_response(exc.status, exc.message, code=exc.code, field=exc.field)


def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(404, str(exc) or "Not found.")


def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = error_response(
        401, "Send a valid API key: Authorization: Bearer <key> (python manage.py api_key)."
    )
    response["WWW-Authenticate"] = "Bearer"
    return response


def _server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    """A bug: logged with its traceback, answered with the error body and no detail."""
    logger.exception("API error on %s %s", request.method, request.path)
    return error_response(500, "Server error; it was logged.", code="server_error")


def handlers_install(api: NinjaAPI) -> None:
    """Answer every error the API can meet with the one body (most specific class wins)."""
    handlers: list[tuple[type[Exception], Any]] = [
        (ValidationError, _validation),
        (AuthenticationError, _unauthenticated),
        (HttpError, _http),
        (AnnotationError, _annotation),
        (ApiError, _api),
        (Http404, _not_found),
        (Exception, _server_error),
    ]
    for kind, handler in handlers:
        api.add_exception_handler(kind, handler)


def not_found_view(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /api/v1/: 404 with the error body, not the site's HTML page."""
    return error_response(404, f"No API endpoint at {request.path[:200]}; see /api/v1/docs.")
