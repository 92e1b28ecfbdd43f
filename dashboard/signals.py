"""What the dashboard tells the apps above it, sent inside the caller's transaction
(webhooks connects its ``job.done`` event: docs/api.md, "Webhooks")."""

from django.dispatch import Signal

# A report or export job finished and its files are ready: ``job``.
job_done = Signal()
