"""The crowd side's data model, one module per area; import models from here."""

from annotation.models.audit import AuditLog, WorkerBlock
from annotation.models.campaigns import (
    Assignment,
    Campaign,
    Consent,
    Item,
    Judgment,
    Lease,
    Participation,
    Worker,
    protocol_choices,
    pseudonym_new,
)
from annotation.models.dialogues import Dataset, Dialogue, Situation, Utterance
from annotation.models.tallies import CampaignTally
from annotation.models.training import (
    Qualification,
    TrainingAnswer,
    TrainingAttempt,
    TrainingItem,
)

__all__ = [
    "Assignment",
    "AuditLog",
    "Campaign",
    "CampaignTally",
    "Consent",
    "Dataset",
    "Dialogue",
    "Item",
    "Judgment",
    "Lease",
    "Participation",
    "Qualification",
    "Situation",
    "TrainingAnswer",
    "TrainingAttempt",
    "TrainingItem",
    "Utterance",
    "Worker",
    "WorkerBlock",
    "protocol_choices",
    "pseudonym_new",
]
