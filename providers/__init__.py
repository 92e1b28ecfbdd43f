"""Crowd providers: how workers arrive, and how work is published, reviewed and paid.

One module per provider (``local``, ``mturk``, ``prolific``), each with a ``PROVIDER`` that
implements ``base.Provider``. The first provider that recognises a URL's parameters wins:
MTurk before Prolific before local, because an MTurk URL also carries ``workerId``. The
services that decide, check budgets and keep the ledger are in ``recruitment``.
"""

from collections.abc import Mapping

from evalsite.errors import InvalidParameters
from providers import local, mturk, prolific
from providers.base import Arrival, Provider, ProviderError

PROVIDERS: tuple[Provider, ...] = (mturk.PROVIDER, prolific.PROVIDER, local.PROVIDER)
_BY_NAME = {p.name: p for p in PROVIDERS}
# Worker.provider values that name a provider here (the simulated crowd has none).
PROVIDER_NAMES = frozenset(_BY_NAME)


def provider_get(name: str) -> Provider:
    """Return the provider called ``name``; raise InvalidParameters naming the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InvalidParameters(
            f"Unknown provider {name!r}; use one of: {', '.join(sorted(_BY_NAME))}."
        ) from None


def arrival_parse(params: Mapping[str, str]) -> Arrival:
    """Return who arrived and through which provider; raise InvalidParameters if unclear."""
    for provider in PROVIDERS:
        arrival = provider.parse_arrival(params)
        if arrival is not None:
            return arrival
    raise InvalidParameters(
        "This link is missing the worker's identity: it needs ?workerId=… (or the "
        "assignmentId, hitId, workerId and turkSubmitTo parameters that MTurk adds, or "
        "Prolific's PROLIFIC_PID, STUDY_ID and SESSION_ID)."
    )


def arrival_query(arrival: Arrival) -> dict[str, str]:
    """Return the URL parameters that reproduce ``arrival`` (kept across the worker's pages)."""
    return provider_get(arrival.provider).arrival_query(arrival)


__all__ = [
    "Arrival",
    "Provider",
    "ProviderError",
    "arrival_parse",
    "arrival_query",
    "provider_get",
    "PROVIDERS",
    "PROVIDER_NAMES",
]
