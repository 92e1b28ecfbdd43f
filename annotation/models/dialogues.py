"""Dialogue data: situations, dialogues and their utterances.

One set of tables holds every dialogue the platform knows: imported from a data set file
(``Dataset``), collected live between two workers (ED), or held between a worker and a bot
(interactive SSA). Importers, exports, the emotion-labeling protocols, the chat consumers and
the dashboard all read and write these.
"""

from django.db import models
from django.db.models import Q

from annotation.models.campaigns import Campaign, Worker


class Dataset(models.Model):
    """A named collection of imported dialogues (one ``import_dataset`` run)."""

    name = models.SlugField(max_length=64, unique=True)
    source_format = models.CharField(
        max_length=32, help_text="The importer that read it: ed, emotionlines, meld, ..."
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Situation(models.Model):
    """An emotion label and the situation a person wrote for it (ED's prompt).

    Written by a worker in a campaign, or imported with its author's id from a data set;
    ``author`` is the stable id the 80/10/10 split groups by.
    """

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, null=True, blank=True, related_name="situations"
    )
    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, null=True, blank=True, related_name="situations"
    )
    worker = models.ForeignKey(
        Worker, on_delete=models.PROTECT, null=True, blank=True, related_name="situations"
    )
    author = models.CharField(
        max_length=128, blank=True, help_text="Author id from the source file, if imported."
    )
    emotion = models.CharField(max_length=32)
    text = models.TextField()
    signals = models.JSONField(
        default=dict, blank=True, help_text="Writing signals: typing time, paste events."
    )
    flagged = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["campaign", "emotion"])]

    def __str__(self) -> str:
        return f"{self.emotion}: {self.text[:40]}"


class Dialogue(models.Model):
    """A conversation: imported (``dataset``) or held in a campaign (``campaign``)."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        COMPLETE = "complete", "Complete"
        PARTIAL = "partial", "Partial (ended early)"

    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, null=True, blank=True, related_name="dialogues"
    )
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, null=True, blank=True, related_name="dialogues"
    )
    key = models.CharField(max_length=200, help_text="Stable id within its data set or campaign.")
    source = models.CharField(
        max_length=64, blank=True, help_text="Sub-source, e.g. Friends or EmotionPush."
    )
    split = models.CharField(max_length=16, blank=True, help_text="train, valid or test.")
    situation = models.ForeignKey(
        Situation, on_delete=models.PROTECT, null=True, blank=True, related_name="dialogues"
    )
    emotion = models.CharField(
        max_length=32, blank=True, help_text="Dialogue-level label (ED's emotion, EmoContext's)."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    flagged = models.BooleanField(default=False)
    flags = models.JSONField(
        default=list, blank=True, help_text="Why it is flagged: partner_left, paste, bot_failed."
    )
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(dataset__isnull=False) | Q(campaign__isnull=False),
                name="dialogue_has_dataset_or_campaign",
            ),
            models.UniqueConstraint(
                fields=["dataset", "key"],
                condition=Q(dataset__isnull=False),
                name="dialogue_unique_dataset_key",
            ),
            models.UniqueConstraint(
                fields=["campaign", "key"],
                condition=Q(campaign__isnull=False),
                name="dialogue_unique_campaign_key",
            ),
        ]
        indexes = [models.Index(fields=["campaign", "status"])]

    def __str__(self) -> str:
        return self.key


class Utterance(models.Model):
    """One turn of a dialogue, in order; ``client_id`` makes a resent message a no-op."""

    dialogue = models.ForeignKey(Dialogue, on_delete=models.CASCADE, related_name="utterances")
    index = models.PositiveIntegerField()
    speaker = models.CharField(
        max_length=64, help_text="Role (speaker, listener, user, bot) or the character's name."
    )
    worker = models.ForeignKey(
        Worker, on_delete=models.PROTECT, null=True, blank=True, related_name="utterances"
    )
    text = models.TextField()
    label = models.CharField(max_length=32, blank=True, help_text="Emotion label, if any.")
    annotations = models.JSONField(
        default=dict, blank=True, help_text="Source annotations: vote counts, sentiment, ..."
    )
    signals = models.JSONField(
        default=dict, blank=True, help_text="Writing signals: typing time, paste events."
    )
    client_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dialogue", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["dialogue", "index"], name="utterance_unique_dialogue_index"
            ),
            models.UniqueConstraint(
                fields=["dialogue", "client_id"],
                condition=~Q(client_id=""),
                name="utterance_unique_dialogue_client_id",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dialogue_id}#{self.index} {self.speaker}: {self.text[:40]}"
