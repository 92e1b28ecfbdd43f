"""Writes of the crowd side: campaigns, items, workers, assignments and judgments.

One module per entity, each that entity's one write path: views, commands, consumers, tasks
and the simulated crowd call these functions and nothing else writes these models. Each
checks first (raising an ``AnnotationError`` with a message for the person) and then changes
the database in one transaction.
"""

from annotation.services.assignments import (
    assignment_complete,
    assignment_from_token,
    assignment_has_work,
    assignment_of_arrival,
    assignment_set_status,
    assignment_start,
    assignment_token,
    assignment_touch,
    assignments_abandon_stale,
)
from annotation.services.campaigns import (
    campaign_create,
    campaign_set_status,
    campaign_settings_update,
)
from annotation.services.items import items_add
from annotation.services.judgments import (
    Answered,
    SubmitResult,
    judgment_label,
    judgment_submit,
    presentation_seed,
)
from annotation.services.visits import Visit, worker_get_or_create, worker_visit

__all__ = [
    "Answered",
    "SubmitResult",
    "Visit",
    "assignment_complete",
    "assignment_from_token",
    "assignment_has_work",
    "assignment_of_arrival",
    "assignment_set_status",
    "assignment_start",
    "assignment_token",
    "assignment_touch",
    "assignments_abandon_stale",
    "campaign_create",
    "campaign_set_status",
    "campaign_settings_update",
    "items_add",
    "judgment_label",
    "judgment_submit",
    "presentation_seed",
    "worker_get_or_create",
    "worker_visit",
]
