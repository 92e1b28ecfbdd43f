"""Long dashboard work (report builds, exports) as jobs whose progress survives a reload."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Campaign


class Job(models.Model):
    """A report build or an export, run as a Celery task; the page polls its progress.

    A report job's ``result`` is the snapshot the campaign page shows (tables as records,
    figure file names, notes, the number of judgments it was built from), a judges report's
    the one the judges page shows (``dashboard.judges``); an export job's ``files`` are what
    the researcher downloads. ``files`` names them; they live in the storage every process
    shares (``dashboard.files``).
    """

    class Kind(models.TextChoices):
        REPORT = "report", "Report"
        EXPORT = "export", "Export"
        JUDGES = "judges", "LLM judges report"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=200, blank=True)
    result = models.JSONField(default=dict, blank=True)
    files = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # When its task was handed to the broker; null while the broker could not take it
    # (``evalsite.outbox``: the sweep sends it).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=1), name="job_progress_0_1"
            )
        ]
        indexes = [models.Index(fields=["campaign", "kind", "status"])]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} of {self.campaign_id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class Draft(models.Model):
    """What the launch wizard keeps of a draft campaign beyond the campaign row itself.

    The draft campaign (status DRAFT) holds the protocol, parameters and settings; this row
    holds the rest, so that any web process continues the wizard where another left it: an
    upload waiting for registered models to answer its contexts. ``state`` is small and read
    by every poll (``{"pending": {"jobs": [...], "contexts": n, "models": [...]}}``);
    ``upload`` is the upload's checked records as JSON text, read only when they are added.
    Writers hold the row lock (``dashboard.drafts.store.draft_locked``); rows untouched for
    ``DRAFT_KEPT_FOR`` and rows of campaigns no longer drafts are deleted by housekeeping.
    """

    campaign = models.OneToOneField(Campaign, on_delete=models.CASCADE, related_name="wizard_draft")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="wizard_drafts",
        help_text="The researcher who owns the draft campaign.",
    )
    state = models.JSONField(default=dict, blank=True)
    # Text, not jsonb: the records keep their order, and PostgreSQL's jsonb refuses a
    # "\u0000" that an uploaded file may hold.
    upload = models.TextField(
        blank=True, help_text="The checked records of the upload waiting for models (JSON)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    class Meta:
        ordering = ["-updated_at", "-pk"]

    def __str__(self) -> str:
        return f"wizard draft of {self.campaign_id}"
