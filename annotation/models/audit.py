"""The audit trail of money and actions on workers, and researchers' blocks of workers."""

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
