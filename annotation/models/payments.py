"""Crowd providers: publications, HITs, the payment ledger and the audit trail."""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.campaigns import Assignment, Campaign, Worker


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
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="payment_amount_gt_0"),
            models.CheckConstraint(condition=Q(fee__gte=0), name="payment_fee_gte_0"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} → {self.worker_id} ({self.status})"


class AuditLog(models.Model):
    """Who did what to whom, when, and for how much: every provider and payment action."""

    class Action(models.TextChoices):
        PUBLISH = "publish", "Publish"
        EXTEND = "extend", "Add assignments"
        PAUSE = "pause", "Pause"
        RESUME = "resume", "Resume"
        STOP = "stop", "Stop"
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        BONUS = "bonus", "Bonus"
        BLOCK = "block", "Block"
        SOFT_BLOCK = "soft_block", "Soft block (one campaign)"
        UNBLOCK = "unblock", "Unblock"
        NOTIFY = "notify", "Notify"
        SYNC = "sync", "Sync"
        REFUSED = "refused", "Refused"
        FORGET = "forget", "Forget (withdrawal, erasure)"

    campaign = models.ForeignKey(
        Campaign, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_log"
    )
    provider = models.CharField(max_length=16, blank=True)
    action = models.CharField(max_length=16, choices=Action.choices)
    actor = models.CharField(max_length=150)
    worker = models.ForeignKey(
        Worker, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_log"
    )
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_log"
    )
    amount = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["campaign", "created_at"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action}"


class WorkerBlock(models.Model):
    """A worker blocked from all our studies, mirrored to the provider's own block list."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="blocks")
    reason = models.TextField()
    actor = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["worker"], condition=Q(lifted_at=None), name="workerblock_one_active"
            )
        ]

    def __str__(self) -> str:
        return f"block {self.worker_id}"

    @property
    def is_active(self) -> bool:
        return self.lifted_at is None
