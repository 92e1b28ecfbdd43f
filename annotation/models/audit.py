"""The audit trail of money and actions on workers, and researchers' blocks of workers."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.campaigns import Assignment, Campaign, Worker


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
        SETTINGS = "settings", "Settings change"

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
    """A worker blocked from one researcher's studies (``owner``) or, without an owner, from
    all our studies (an admin's block), mirrored to the provider's own block list.

    A researcher's block goes with the researcher (CASCADE): it must never become a global
    one, as SET_NULL would make it."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="blocks")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="worker_blocks",
        help_text="The researcher whose studies the block covers; empty: every study (global).",
    )
    reason = models.TextField()
    actor = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)
    lifted_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One active block per worker and scope (NULLs are distinct in a unique index, so
            # the global scope needs its own).
            models.UniqueConstraint(
                fields=["worker", "owner"],
                condition=Q(lifted_at=None, owner__isnull=False),
                name="workerblock_one_active_per_owner",
            ),
            models.UniqueConstraint(
                fields=["worker"],
                condition=Q(lifted_at=None, owner=None),
                name="workerblock_one_active_global",
            ),
        ]

    def __str__(self) -> str:
        return f"block {self.worker_id} ({self.owner_id or 'global'})"

    @property
    def is_active(self) -> bool:
        return self.lifted_at is None
