"""Consent: a worker's agreement to the current version of a campaign's consent text."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotation.models import Campaign, Consent, Worker
from annotation.services.visits import worker_get_or_create
from evalsite.errors import NotAllowed
from providers import Arrival


def consent_pending(*, campaign: Campaign, arrival: Arrival) -> bool:
    """Whether the arriving worker must still consent before seeing any item: the campaign
    has consent text and they have not agreed to its current version. Reads only."""
    if not campaign.consent_text.strip() or arrival.preview:
        return False
    return not Consent.objects.filter(
        campaign=campaign,
        version=campaign.consent_version,
        worker__in=Worker.objects.filter(provider=arrival.provider, external_id=arrival.worker_id),
    ).exists()


@transaction.atomic
def consent_give(*, campaign: Campaign, arrival: Arrival, now: datetime | None = None) -> Consent:
    """Record that the arriving worker consents to the campaign's current consent version
    (once: agreeing again returns the stored row). The caller has verified the arrival."""
    if arrival.preview:
        raise NotAllowed(gettext("This is a preview: accept the HIT to start."))
    if not campaign.consent_text.strip():
        raise NotAllowed(gettext("This study asks for no consent."))
    worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
    consent, _ = Consent.objects.get_or_create(
        campaign=campaign,
        worker=worker,
        version=campaign.consent_version,
        defaults={"given_at": now or timezone.now()},
    )
    return consent
