"""Amazon Mechanical Turk's worker URL contract (ExternalQuestion).

MTurk closed on 30 September 2026; its URL contract stays for MTurk-API-compatible endpoints
and replayed studies. ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` is a preview. On completion
the page posts ``assignmentId`` to ``<turkSubmitTo>/mturk/externalSubmit``; ``turkSubmitTo``
must be one of ``MTURK_SUBMIT_HOSTS`` so the page never posts work to a stranger's site.
"""

from collections.abc import Mapping

from django.conf import settings

from annotation.exceptions import InvalidParameters
from annotation.providers.base import Arrival, clean_id

NAME = "mturk"
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
DEFAULT_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")


def submit_hosts() -> tuple[str, ...]:
    """Return the hosts that MTurk completions may be posted to."""
    return tuple(getattr(settings, "MTURK_SUBMIT_HOSTS", DEFAULT_SUBMIT_HOSTS))


def parse_arrival(params: Mapping[str, str]) -> Arrival | None:
    """Recognise MTurk's ``assignmentId``/``hitId``/``workerId``/``turkSubmitTo``."""
    assignment_id = params.get("assignmentId", "").strip()
    if not assignment_id:
        return None
    hit_id = clean_id(params.get("hitId", "").strip(), "HIT id")
    if assignment_id == PREVIEW_ASSIGNMENT_ID:
        return Arrival(provider=NAME, worker_id="", hit_id=hit_id, preview=True)
    submit_to = params.get("turkSubmitTo", "").strip().rstrip("/")
    if submit_to not in submit_hosts():
        raise InvalidParameters("turkSubmitTo must be one of: " + ", ".join(submit_hosts()) + ".")
    return Arrival(
        provider=NAME,
        worker_id=clean_id(params.get("workerId", "").strip(), "worker id"),
        assignment_id=clean_id(assignment_id, "assignment id"),
        hit_id=hit_id,
        submit_to=submit_to,
    )


def arrival_query(arrival: Arrival) -> dict[str, str]:
    """Return the URL parameters of an MTurk arrival."""
    return {
        "assignmentId": arrival.assignment_id or PREVIEW_ASSIGNMENT_ID,
        "hitId": arrival.hit_id,
        "workerId": arrival.worker_id,
        "turkSubmitTo": arrival.submit_to,
    }


def external_submit_url(submit_to: str) -> str:
    """Return where the finished page posts the assignment."""
    return f"{submit_to.rstrip('/')}/mturk/externalSubmit"
