"""What every provider's arrival parser returns, and the checks they share."""

import re
from dataclasses import dataclass

from annotation.exceptions import InvalidParameters

_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


@dataclass(frozen=True)
class Arrival:
    """A worker's arrival on the task page, as the provider's URL parameters describe it."""

    provider: str
    worker_id: str
    assignment_id: str = ""
    hit_id: str = ""
    submit_to: str = ""
    preview: bool = False


def clean_id(value: str, what: str) -> str:
    """Return ``value`` if it is a plausible provider identifier; raise otherwise."""
    if not _ID.match(value):
        raise InvalidParameters(
            f"The {what} in this link is not valid: use 1–128 letters, digits, '_', '-', '.', ':'."
        )
    return value
