"""Training (issue #18, item 2): items with expected answers and an explanation, each worker's
attempts and answers, and the qualification that passing grants across an owner's campaigns.

Training items are not ``Item`` rows: allocation, progress, reports and exports never see them.
The logic lives in ``services/training.py``, its one writer.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.campaigns import Campaign, Worker


class TrainingItem(models.Model):
    """One training item: shown like an item, then the expected answer and why."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="training_items")
    key = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    payload = models.JSONField()
    expected = models.JSONField(help_text="{question: [accepted stored values]}")
    explanation = models.TextField(blank=True, help_text="Why (Markdown), shown after answering.")

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "key"], name="training_item_unique_key"),
            models.UniqueConstraint(
                fields=["campaign", "position"], name="training_item_unique_position"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}/{self.key}"


class TrainingAttempt(models.Model):
    """One pass of a worker through a campaign's training items."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="attempts")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="attempts")
    number = models.PositiveSmallIntegerField()
    answered = models.PositiveIntegerField(default=0)
    correct = models.PositiveIntegerField(default=0)
    passed = models.BooleanField(null=True, help_text="Empty while the attempt is open.")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "worker", "number"], name="training_attempt_unique_number"
            ),
            models.CheckConstraint(
                condition=Q(correct__lte=models.F("answered")),
                name="training_attempt_correct_lte_answered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}/{self.worker_id} #{self.number}"


class TrainingAnswer(models.Model):
    """A worker's answer to one training item in one attempt (at most one)."""

    attempt = models.ForeignKey(TrainingAttempt, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(TrainingItem, on_delete=models.CASCADE, related_name="answers")
    answers = models.JSONField()
    correct = models.BooleanField()
    answered_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["attempt", "item"], name="training_answer_once")
        ]

    def __str__(self) -> str:
        return f"{self.attempt_id}/{self.item_id}{' ✓' if self.correct else ''}"


class Qualification(models.Model):
    """A worker passed training that grants ``name`` in ``owner``'s campaigns (like MTurk's
    qualifications); campaigns without an owner share the site-wide ones."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="qualifications",
    )
    name = models.CharField(max_length=64)
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="qualifications")
    campaign = models.ForeignKey(
        Campaign, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    granted_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name", "worker"],
                condition=Q(owner__isnull=False),
                name="qualification_unique",
            ),
            models.UniqueConstraint(
                fields=["name", "worker"],
                condition=Q(owner__isnull=True),
                name="qualification_unique_site",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}/{self.worker_id}"
