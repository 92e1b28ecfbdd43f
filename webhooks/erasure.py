"""A forgotten worker leaves the webhook payloads stored (docs/api.md, "Webhooks"): a
receiver of the core's ``worker_forgotten`` signal, connected in ``WebhooksConfig.ready``.

Payloads name a worker by pseudonym only, never by provider id; the pseudonym outlives the
forget (it is what the marker is made of), but the stored payloads that name the worker, and
the provider's assignment id that a provider could tie back to them, are redacted: a
delivery still pending or redelivered sends the redacted body. The delivery rows stay (their
status and attempts are the endpoint's history).
"""

from __future__ import annotations

from typing import Any

from annotation.models import Worker
from annotation.services import WITHDRAWN
from webhooks.models import WebhookDelivery


def worker_forgotten(*, worker: Worker, campaigns: list[int], **_: Any) -> None:
    """Redact the stored payloads of ``campaigns``' endpoints that name ``worker``."""
    rows = WebhookDelivery.objects.filter(
        endpoint__campaign_id__in=campaigns, payload__data__worker=worker.pseudonym
    )
    for row in rows.order_by("pk"):
        data = {**row.payload["data"], "worker": WITHDRAWN}
        if "provider_assignment_id" in data:
            data["provider_assignment_id"] = WITHDRAWN
        WebhookDelivery.objects.filter(pk=row.pk).update(payload={**row.payload, "data": data})
