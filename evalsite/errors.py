"""Errors that services raise on bad input or a forbidden action; views map them to 4xx."""

from collections.abc import Mapping


class AnnotationError(Exception):
    """A request that cannot be carried out; ``message`` is shown to the person as it is."""

    status_code = 400

    def __init__(self, message: str, *, fields: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields: dict[str, str] = dict(fields or {})


class InvalidAnswer(AnnotationError):
    """The answers do not fit the protocol's questions (missing, out of range, wrong type)."""


class InvalidParameters(AnnotationError):
    """Campaign parameters or an item payload that the protocol refuses."""


class NotAllowed(AnnotationError):
    """The person may not do this (another worker's assignment, a preview, a closed campaign)."""

    status_code = 403


class NotFound(AnnotationError):
    """The campaign or item does not exist (or not in this campaign)."""

    status_code = 404


class Conflict(AnnotationError):
    """The state has moved on (item already answered differently, item given to others)."""

    status_code = 409


class TooMany(AnnotationError):
    """Too many requests of this kind from one source: wait ``retry_after`` seconds."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: int = 60) -> None:
        super().__init__(message)
        self.retry_after = retry_after
