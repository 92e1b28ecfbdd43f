"""Live chats: a worker's seat in a chat campaign and the pairs the ED lobby makes.

The conversations themselves are ``Dialogue`` and ``Utterance`` rows (``annotation.models``); these
tables hold what the live chat needs around them: where each worker is (writing their
situation, waiting in the lobby, chatting, done), whom they were paired with, which bot they
talk to (the two an arena conversation drew), and whether their websocket is alive.
"""

from django.db import models
from django.db.models import Q
from django.utils import timezone

from annotation.models import Assignment, Campaign, Dialogue, Situation, Worker

# The tables kept the names they had when these models were annotation's (chat's migration 0001
# moved the models without touching the database).


class ChatPair(models.Model):
    """Two workers the ED lobby paired; they hold two conversations with the roles swapped.

    The conversations are the campaign's dialogues keyed ``pair-<id>-1`` and ``pair-<id>-2``
    (unique per campaign, so a round can never be created twice).
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="chat_pairs")
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "annotation_chatpair"

    def __str__(self) -> str:
        return f"pair {self.pk}"


class ChatSeat(models.Model):
    """One worker's place in a live chat campaign: one per assignment.

    ``channel_name`` is the Channels name of the worker's live websocket ("" when none is
    open) and ``last_seen_at`` the last frame received from it; the partner's consumer reads
    both to tell a reload (back within the grace time) from a closed tab. ``closed_by_page``
    says the last socket was closed by the page itself (the tab closed or navigated away),
    not lost with the network: the partner is told sooner.
    """

    class Stage(models.TextChoices):
        SITUATION = "situation", "Writing the situation"
        WAITING = "waiting", "Waiting for a partner"
        CHATTING = "chatting", "Chatting"
        PARTNER_LEFT = "partner_left", "Partner left"
        LEFT = "left", "Left the chat"
        RELEASED = "released", "Released from the lobby"
        FAILED = "failed", "Ended: the bot failed"
        # Interactive SSA with end ratings on: the conversation is complete, the closing
        # questions about the bot are not answered yet (the seat is not done, nor paid).
        RATING = "rating", "Rating the conversation"
        DONE = "done", "Done"

    # A seat that ended in one of these stages is paid (docs/chat.md, "Payment policy"): a
    # worker who dropped out of a pair ("left") wrote a situation, waited and chatted.
    PAID_STAGES = ("done", "partner_left", "left", "released", "failed")

    assignment = models.OneToOneField(
        Assignment, on_delete=models.CASCADE, related_name="chat_seat"
    )
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="chat_seats")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="chat_seats")
    stage = models.CharField(max_length=16, choices=Stage.choices)
    offered = models.JSONField(
        default=list, blank=True, help_text="The emotion labels offered (ED), fixed at arrival."
    )
    situation = models.ForeignKey(
        Situation, on_delete=models.PROTECT, null=True, blank=True, related_name="seats"
    )
    pair = models.ForeignKey(
        ChatPair, on_delete=models.PROTECT, null=True, blank=True, related_name="seats"
    )
    slot = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="0: Speaker in the first conversation; 1: in the second."
    )
    endpoint = models.CharField(
        max_length=64, blank=True, help_text="The bot (interactive SSA); the arena's model A."
    )
    endpoint_b = models.CharField(max_length=64, blank=True, help_text="The arena's model B.")
    dialogue = models.ForeignKey(
        Dialogue, on_delete=models.PROTECT, null=True, blank=True, related_name="seats"
    )
    waiting_since = models.DateTimeField(null=True, blank=True)
    channel_name = models.CharField(max_length=200, blank=True)
    last_seen_at = models.DateTimeField(default=timezone.now)
    closed_by_page = models.BooleanField(default=False)
    ended_reason = models.CharField(max_length=32, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_chatseat"
        constraints = [
            models.UniqueConstraint(
                fields=["pair", "slot"], condition=Q(pair__isnull=False), name="chatseat_pair_slot"
            ),
        ]
        indexes = [models.Index(fields=["campaign", "stage", "waiting_since"])]

    def __str__(self) -> str:
        return f"seat {self.pk} ({self.stage})"

    @property
    def is_open(self) -> bool:
        return self.stage in (
            self.Stage.SITUATION,
            self.Stage.WAITING,
            self.Stage.CHATTING,
            self.Stage.RATING,
        )
