"""What MTurk's requester API expects and returns, apart from the calls (``mturk``).

The requester endpoint (sandbox unless told otherwise), the ExternalQuestion that shows our
page in MTurk's iframe, where a finished page may post, the QualificationRequirements of a
HIT type, and the names and timestamps MTurk answers with. No request is made here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape

from django.conf import settings

from providers.base import Eligibility, RemoteStatus

DEFAULT_SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
# MTurk's system qualification types.
QUAL_LOCALE = "00000000000000000071"
QUAL_PERCENT_APPROVED = "000000000000000000L0"
QUAL_NUMBER_APPROVED = "00000000000000000040"
EXTERNAL_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/"
    "ExternalQuestion.xsd"
)
# MTurk's AssignmentStatus values, as the provider interface names them.
STATUSES: dict[str, RemoteStatus] = {
    "Submitted": "submitted",
    "Approved": "approved",
    "Rejected": "rejected",
}
PAST = datetime(2015, 1, 1, tzinfo=UTC)  # ExpireAt in the past expires a HIT at once


def submit_hosts() -> tuple[str, ...]:
    """Return the hosts that MTurk completions may be posted to."""
    return tuple(getattr(settings, "MTURK_SUBMIT_HOSTS", DEFAULT_SUBMIT_HOSTS))


def external_submit_url(submit_to: str) -> str:
    """Return where the finished page posts the assignment."""
    return f"{submit_to.rstrip('/')}/mturk/externalSubmit"


def external_question(url: str, frame_height: int) -> str:
    """Return the ExternalQuestion XML that shows ``url`` in MTurk's iframe."""
    return (
        f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}">'
        f"<ExternalURL>{escape(url)}</ExternalURL>"
        f"<FrameHeight>{int(frame_height)}</FrameHeight></ExternalQuestion>"
    )


def endpoint_for(config: Mapping[str, Any]) -> str:
    """Return the requester endpoint: explicit ``endpoint_url``, else sandbox unless told not."""
    explicit = config.get("endpoint_url") or getattr(settings, "MTURK_ENDPOINT_URL", "")
    if explicit:
        return str(explicit)
    return SANDBOX_ENDPOINT if config.get("sandbox", True) else PRODUCTION_ENDPOINT


def qualification_requirements(
    eligibility: Eligibility, *, limit_qual: str, allow_qual: str = ""
) -> list[dict[str, Any]]:
    """Return the HIT type's QualificationRequirements for ``eligibility``.

    ``limit_qual`` is a custom qualification granted to workers who reached their cap or are
    soft-blocked; a worker who holds it can neither discover, preview nor accept our HITs.
    """
    guard = {"ActionsGuarded": "DiscoverPreviewAndAccept"}
    reqs: list[dict[str, Any]] = [
        {"QualificationTypeId": limit_qual, "Comparator": "DoesNotExist", **guard}
    ]
    if eligibility.locales:
        reqs.append(
            {
                "QualificationTypeId": QUAL_LOCALE,
                "Comparator": "In",
                "LocaleValues": [{"Country": c} for c in eligibility.locales],
                **guard,
            }
        )
    for qual, value in (
        (QUAL_PERCENT_APPROVED, eligibility.min_percent_approved),
        (QUAL_NUMBER_APPROVED, eligibility.min_number_approved),
    ):
        if value is not None:
            reqs.append(
                {
                    "QualificationTypeId": qual,
                    "Comparator": "GreaterThanOrEqualTo",
                    "IntegerValues": [int(value)],
                    **guard,
                }
            )
    if allow_qual:
        reqs.append({"QualificationTypeId": allow_qual, "Comparator": "Exists", **guard})
    return reqs


def epoch(value: Any) -> float | None:
    """Return a timestamp MTurk sent (a datetime) as seconds since the epoch, else None."""
    if isinstance(value, datetime):
        return value.timestamp()
    return None
