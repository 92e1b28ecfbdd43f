"""Writes of the crowd side: campaigns, items, workers, assignments and judgments.

One module per entity, each that entity's one write path: views, commands, consumers, tasks
and the simulated crowd call these functions and nothing else writes these models. Each
checks first (raising an ``AnnotationError`` with a message for the person) and then changes
the database in one transaction.
"""

from annotation.services.assignments import (
    arrival_admit,
    assignment_authorise,
    assignment_complete,
    assignment_from_token,
    assignment_has_work,
    assignment_of_arrival,
    assignment_set_status,
    assignment_start,
    assignment_token,
    assignment_touch,
    assignment_work_kind_add,
    assignments_abandon_stale,
)
from annotation.services.audit import audit_add
from annotation.services.campaigns import (
    BudgetBelowCommitted,
    campaign_budget_check,
    campaign_budget_set,
    campaign_committed_add,
    campaign_create,
    campaign_set_status,
    campaign_settings_update,
)
from annotation.services.consents import consent_give, consent_pending
from annotation.services.items import items_add
from annotation.services.judgments import (
    Answered,
    SubmitResult,
    judgment_label,
    judgment_submit,
    presentation_seed,
)
from annotation.services.training import (
    training_answer,
    training_items_add,
    training_items_clean,
    training_pending,
    training_presentation,
    training_state,
)
from annotation.services.visits import Visit, worker_get_or_create, worker_visit
from annotation.services.workers import (
    WITHDRAWN,
    Forgotten,
    worker_forget,
    worker_is_forgotten,
)

__all__ = [
    "BudgetBelowCommitted",
    "campaign_budget_check",
    "campaign_budget_set",
    "campaign_committed_add",
    "WITHDRAWN",
    "Answered",
    "Forgotten",
    "SubmitResult",
    "Visit",
    "assignment_complete",
    "audit_add",
    "arrival_admit",
    "assignment_authorise",
    "assignment_from_token",
    "assignment_has_work",
    "assignment_work_kind_add",
    "assignment_of_arrival",
    "assignment_set_status",
    "assignment_start",
    "assignment_token",
    "assignment_touch",
    "assignments_abandon_stale",
    "campaign_create",
    "campaign_set_status",
    "campaign_settings_update",
    "consent_give",
    "consent_pending",
    "training_answer",
    "training_items_add",
    "training_items_clean",
    "training_pending",
    "training_presentation",
    "training_state",
    "items_add",
    "judgment_label",
    "judgment_submit",
    "presentation_seed",
    "worker_forget",
    "worker_get_or_create",
    "worker_is_forgotten",
    "worker_visit",
]

# Judgments collected elsewhere (import_judgments).
from annotation.services.imports import Imported, judgments_import  # noqa: E402

__all__ += ["Imported", "judgments_import"]
