"""Webhook endpoints (a campaign's URL, its secret and events) and their deliveries."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Campaign


class Event(models.TextChoices):
    """What a campaign tells its endpoints about (docs/api.md, "Webhooks")."""

    ASSIGNMENT_SUBMITTED = "assignment.submitted", "Assignment submitted"
    CAMPAIGN_FINISHED = "campaign.finished", "Campaign finished"
    BUDGET_LOW = "budget.low", "Budget low (under 10% left)"
    JOB_DONE = "job.done", "Report or export done"
    WORKER_BLOCKED = "worker.blocked", "Worker blocked"
    # Sent only on request (the webhooks page's "Send a test event"), never subscribed to.
    TEST = "webhook.test", "Test event"


# The events an endpoint may subscribe to (all but the test event).
SUBSCRIBABLE: tuple[str, ...] = tuple(e for e in Event.values if e != Event.TEST)


class WebhookEndpoint(models.Model):
    """A researcher's URL that receives some of one campaign's events.

    ``secret`` signs every delivery (HMAC-SHA256); it is shown to the owner once, when the
    endpoint is made, and kept in clear because signing needs it. An endpoint that answered
    410 Gone is deactivated (``active`` false) and receives nothing more.

    ``sending_until`` is the lease of the one attempt in flight to this URL (no lock is held
    while the request runs): a receiver never gets two requests at once, so never the same
    delivery twice at once. It outlasts an attempt's deadline; one that expired belongs to an
    attempt that died, and the next sweep tries again.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=64)
    events = models.JSONField(default=list, help_text="The Event values it receives.")
    active = models.BooleanField(default=True)
    sending_until = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["campaign", "active"], name="webhook_campaign_active")]

    def __str__(self) -> str:
        return f"{self.url} ({self.campaign_id})"

    @property
    def secret_hint(self) -> str:
        """The secret's first characters, to tell secrets apart in lists."""
        return self.secret[:10]


class WebhookDelivery(models.Model):
    """One event sent to one endpoint: its body, its attempts and their outcome.

    ``delivery_id`` is sent as ``X-Evalsite-Delivery`` and in the body; it stays the same
    over retries and redeliveries, so receivers dedupe on it. An attempt runs under its
    endpoint's lease (``WebhookEndpoint.sending_until``).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    event = models.CharField(max_length=32, choices=Event.choices)
    payload = models.JSONField(help_text="The body sent: id, event, campaign, created_at, data.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    next_attempt_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "webhook deliveries"
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
            models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_log"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["pending", "delivered", "failed"]),
                name="webhook_delivery_status",
            ),
            models.CheckConstraint(
                condition=~Q(status="delivered") | Q(delivered_at__isnull=False),
                name="webhook_delivery_delivered_at",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.delivery_id} ({self.status})"
