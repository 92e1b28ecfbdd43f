"""Recruitment's rows: publications on a provider, their HITs, and the payment ledger.

The tables kept the names they had when these models were annotation's (recruitment's
migration 0001 moved the models without touching the database).
"""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Assignment, Campaign, Worker


class Publication(models.Model):
    """A campaign published on one provider: an MTurk HIT type and its HITs, a Prolific study.

    ``config`` holds what the provider needs to reach it again (HIT type and qualification
    ids, study id and completion code, participant group ids, sandbox or endpoint) and the
    launch plan (eligibility, pay buckets). ``reserved`` is the most this publication can cost
    with the provider's fees included; budget checks add it up.
    """

    class Status(models.TextChoices):
        PUBLISHING = "publishing", "Publishing"
        LIVE = "live", "Live"
        PAUSED = "paused", "Paused"
        STOPPED = "stopped", "Stopped"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="publications")
    provider = models.CharField(max_length=16, choices=Worker.Provider.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PUBLISHING)
    sandbox = models.BooleanField(default=True)
    external_id = models.CharField(
        max_length=128, blank=True, help_text="HIT type id (MTurk) or study id (Prolific)."
    )
    config = models.JSONField(default=dict, blank=True)
    reserved = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        default=Decimal("0.00"),
        help_text="Most this publication can cost, rewards and provider fees included.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_publication"
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "provider"], name="publication_one_per_campaign_provider"
            ),
            models.CheckConstraint(condition=Q(reserved__gte=0), name="publication_reserved_gte_0"),
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}@{self.provider}"


class Hit(models.Model):
    """One published unit of paid work: an MTurk HIT, or a Prolific study's places."""

    publication = models.ForeignKey(Publication, on_delete=models.CASCADE, related_name="hits")
    external_id = models.CharField(max_length=128)
    max_assignments = models.PositiveIntegerField()
    reward = models.DecimalField(max_digits=8, decimal_places=2)
    fee_per_assignment = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal("0"))
    label = models.CharField(max_length=64, blank=True, help_text="Pay bucket, if any.")
    status = models.CharField(max_length=32, blank=True, help_text="As the provider says.")
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_hit"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["publication", "external_id"], name="hit_unique_per_publication"
            ),
            models.CheckConstraint(
                condition=Q(max_assignments__gte=1), name="hit_assignments_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id


class Payment(models.Model):
    """One money movement to a worker (an approved reward or a bonus), written before it is sent.

    ``idempotency_key`` is unique, so the same payment can never be recorded twice; it is
    also the provider's request token (MTurk's UniqueRequestToken) where there is one.
    Pending: recorded, never sent. Sending: a send began at ``sent_at`` and its outcome was
    not recorded (a crash, a timeout): the reconciliation sweep (``recruitment.reconcile``)
    asks the provider, ``checks`` times so far; what it cannot resolve needs attention, with
    ``error`` saying why, until a person retries it or marks it resolved.
    """

    class Kind(models.TextChoices):
        REWARD = "reward", "Reward"
        BONUS = "bonus", "Bonus"
        TOPUP = "topup", "Pay-bucket top-up"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        PAID = "paid", "Paid"
        FAILED = "failed", "Failed"
        UNCERTAIN = "uncertain", "Uncertain (check with the provider)"
        NEEDS_ATTENTION = "needs_attention", "Needs attention"

    campaign = models.ForeignKey(Campaign, on_delete=models.PROTECT, related_name="payments")
    provider = models.CharField(max_length=16, choices=Worker.Provider.choices)
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="payments")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.PROTECT, related_name="payments"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    fee = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal("0"))
    reason = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    provider_reference = models.CharField(max_length=128, blank=True)
    error = models.TextField(blank=True)
    actor = models.CharField(max_length=150, help_text="Who asked for it (user or process).")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True, help_text="When the last send began.")
    checks = models.PositiveSmallIntegerField(
        default=0, help_text="How often the sweep asked the provider about this payment."
    )
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_payment"
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="payment_amount_gt_0"),
            models.CheckConstraint(condition=Q(fee__gte=0), name="payment_fee_gte_0"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} → {self.worker_id} ({self.status})"


class LinkClaim(models.Model):
    """An open-link worker id that came back with its personal key: from then on the bare id
    opens nothing in this campaign, so whoever knows or guesses it cannot act as its worker
    (``arrival_verify``; docs/providers.md, Identity)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="link_claims")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="link_claims")
    claimed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "worker"], name="link_claim_unique")
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}/{self.worker_id}"
