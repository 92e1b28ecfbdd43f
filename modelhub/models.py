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
    response = models.TextField()
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
