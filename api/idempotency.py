"""``Idempotency-Key``: a request sent again with the same key gets the first answer back.

Only the request that inserts the (user, key) row acts; the row is committed before the
action starts, so a concurrent replay meets the unique constraint, waits for the first
request's answer and returns it; nothing is spent twice. The answer is stored whatever its
status (a refusal too: send a new key to try again after fixing the cause), except an
unexpected server error, which deletes the row so the same key may retry. Keys are kept for
``KEEP_SECONDS`` (a day, as Stripe keeps them); the API's housekeeping forgets older ones.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from ninja import Header

from api.errors import ApiError, error_body
from api.models import IdempotencyKey
from evalsite.errors import AnnotationError

KEY_PATTERN = r"^[\x21-\x7e]{1,200}$"
_KEY = re.compile(KEY_PATTERN)
# The header as an operation declares it (every POST that must not act twice).
IdempotencyHeader = Header(
    None,
    alias="Idempotency-Key",
    pattern=KEY_PATTERN,
    description="Send the same key again to get the first answer back: nothing twice.",
)
# How long a replay waits for the first request's answer before answering 409.
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.05
# How long a key is remembered: a retry within a day replays; later, the key is new again.
KEEP_SECONDS = 24 * 60 * 60

Action = Callable[[], tuple[int, dict[str, Any]]]


def _fingerprint(request: HttpRequest) -> str:
    digest = hashlib.sha256()
    for part in (request.method or "", request.path, request.body):
        digest.update(part if isinstance(part, bytes) else part.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


def _replay(user: Any, key: str, fingerprint: str) -> JsonResponse:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        row = IdempotencyKey.objects.filter(user=user, key=key).first()
        if row is not None and row.fingerprint != fingerprint:
            raise ApiError(
                422,
                "This Idempotency-Key was used for another request; use a new key.",
                code="idempotency_key_reused",
                field="Idempotency-Key",
            )
        if row is not None and row.status_code is not None:
            response = JsonResponse(row.response, status=row.status_code)
            response["Idempotent-Replayed"] = "true"
            return response
        if row is None or time.monotonic() > deadline:  # deleted: the first request failed
            raise ApiError(
                409,
                "A request with this Idempotency-Key is still running; retry later.",
                code="idempotency_in_progress",
                field="Idempotency-Key",
            )
        time.sleep(POLL_SECONDS)


def idempotent(request: HttpRequest, key: str | None, action: Action) -> JsonResponse:
    """Run ``action`` (which returns status and body) once per (user, key); without a key,
    just run it. Service refusals become the error body and are stored like successes."""
    if not key:
        status, body = _run(action)
        return JsonResponse(body, status=status)
    if not _KEY.match(key):
        raise ApiError(
            422,
            "The Idempotency-Key must be 1–200 printable ASCII characters.",
            field="Idempotency-Key",
        )
    user, fingerprint = request.auth, _fingerprint(request)  # type: ignore[attr-defined]
    try:
        with transaction.atomic():
            row = IdempotencyKey.objects.create(user=user, key=key, fingerprint=fingerprint)
    except IntegrityError:
        return _replay(user, key, fingerprint)
    try:
        status, body = _run(action)
    except BaseException:
        row.delete()
        raise
    IdempotencyKey.objects.filter(pk=row.pk).update(status_code=status, response=body)
    return JsonResponse(body, status=status)


def _run(action: Action) -> tuple[int, dict[str, Any]]:
    try:
        return action()
    except AnnotationError as exc:
        field = next(iter(exc.fields), None)
        return exc.status_code, error_body(exc.status_code, exc.message, field=field)
    except ApiError as exc:
        return exc.status, error_body(exc.status, exc.message, code=exc.code, field=exc.field)


def idempotency_keys_expire(*, now: datetime | None = None) -> int:
    """Forget the keys older than ``KEEP_SECONDS``; return how many (the API's housekeeping).

    Also ends a key whose request died before answering (its row would answer 409 forever).
    """
    cutoff = (now or timezone.now()) - timedelta(seconds=KEEP_SECONDS)
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted
