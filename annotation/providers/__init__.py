"""Crowd providers: how a worker arrives, and (with the providers issue) how they get paid.

Each provider is one module with ``parse_arrival(params) -> Arrival | None``; the first
provider that recognises the query parameters wins. MTurk before local: an MTurk URL also
carries ``workerId``.
"""

from collections.abc import Mapping

from annotation.exceptions import InvalidParameters
from annotation.providers import local, mturk
from annotation.providers.base import Arrival

PROVIDERS = (mturk, local)
_BY_NAME = {p.NAME: p for p in PROVIDERS}


def arrival_parse(params: Mapping[str, str]) -> Arrival:
    """Return who arrived and through which provider; raise InvalidParameters if unclear."""
    for provider in PROVIDERS:
        arrival = provider.parse_arrival(params)
        if arrival is not None:
            return arrival
    raise InvalidParameters(
        "This link is missing the worker's identity: it needs ?workerId=… (or the "
        "assignmentId, hitId, workerId and turkSubmitTo parameters that MTurk adds)."
    )


def arrival_query(arrival: Arrival) -> dict[str, str]:
    """Return the URL parameters that reproduce ``arrival`` (kept across the worker's pages)."""
    return _BY_NAME[arrival.provider].arrival_query(arrival)


__all__ = ["Arrival", "arrival_parse", "arrival_query"]
