"""The local provider: lab studies, volunteers and in-house raters reached by a plain link.

Arrival: ``/task/<campaign>/?workerId=…``. Completion: a code shown on the end screen.
"""

from collections.abc import Mapping

from annotation.providers.base import Arrival, clean_id

NAME = "local"


def parse_arrival(params: Mapping[str, str]) -> Arrival | None:
    """Recognise ``?workerId=…``."""
    worker_id = params.get("workerId", "").strip()
    if not worker_id:
        return None
    return Arrival(provider=NAME, worker_id=clean_id(worker_id, "worker id"))


def arrival_query(arrival: Arrival) -> dict[str, str]:
    """Return the URL parameters of a local arrival."""
    return {"workerId": arrival.worker_id}
