"""Registered models and the responses they generated (stored once per model, context and
decoding parameters, so re-running generation never duplicates or re-pays for work)."""

from django.db import models

from modelhub.backends import BACKENDS


def backend_choices() -> list[tuple[str, str]]:
    """List the backends (a callable, so adding one needs no migration)."""
    return [(name, name) for name in sorted(BACKENDS)]


class ModelEndpoint(models.Model):
    """A model under test and how to reach it."""

    name = models.SlugField(max_length=64, unique=True)
    backend = models.CharField(max_length=32, choices=backend_choices)
    config = models.JSONField(default=dict, blank=True)
    decoding = models.JSONField(default=dict, blank=True)
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Generation(models.Model):
    """One response of one model to one context under one set of decoding parameters."""

    endpoint = models.ForeignKey(
        ModelEndpoint, on_delete=models.PROTECT, related_name="generations"
    )
    context_hash = models.CharField(max_length=64)
    decoding_hash = models.CharField(max_length=64)
    context = models.JSONField()
    decoding = models.JSONField(default=dict, blank=True)  # the validated parameters, hashed
    response = models.TextField()
    finish_reason = models.CharField(
        max_length=32,
        blank=True,
        help_text="Why the reply ended: stop (the model ended it) or length (cut at "
        "max_new_tokens: truncated). Blank for replies stored before it was recorded.",
    )
    prompt_format = models.CharField(
        max_length=200,
        blank=True,
        help_text="The format the context was rendered in (chat template hash, roles).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "context_hash", "decoding_hash"],
                name="generation_unique_per_model_context_decoding",
            )
        ]

    def __str__(self) -> str:
        return f"{self.endpoint_id}:{self.context_hash[:8]}"

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class GenerationJob(models.Model):
    """A batch of examples an endpoint must answer, worked through by modelhub's job task on
    the ``inference`` queue with the runner of its ``kind`` (``modelhub.jobs``); ``done``
    counts the examples settled."""

    class Kind(models.TextChoices):
        GENERATION = "generation"  # store the endpoint's response to each example
        JUDGE = "judge"  # an LLM judge rates a campaign's items (judges)

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="jobs")
    kind = models.CharField(
        max_length=16,
        choices=Kind.choices,
        default=Kind.GENERATION,
        help_text="Which runner works through the job (the app that owns the kind registers it).",
    )
    examples = models.JSONField(
        help_text="The distinct examples: {turns, reference} each, and what the kind's runner "
        "needs besides."
    )
    label = models.CharField(max_length=200, blank=True, help_text="What the job is for.")
    batch_size = models.PositiveIntegerField(
        default=32, help_text="Examples per backend call and per transaction."
    )
    total = models.PositiveIntegerField()
    done = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Task runs that worked on it.")
    created_at = models.DateTimeField(auto_now_add=True)
    # When its task was handed to the broker; null while the broker could not take it
    # (``evalsite.outbox``: the sweep sends it).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(done__lte=models.F("total")), name="generationjob_done_le_total"
            )
        ]

    def __str__(self) -> str:
        return f"job {self.pk}: {self.endpoint_id} {self.done}/{self.total} {self.status}"

    @property
    def progress(self) -> float:
        """Return the fraction of examples answered (1.0 for an empty job)."""
        return self.done / self.total if self.total else 1.0
