"""Study data model: a Campaign has Items; Workers take Assignments and leave Judgments.

Models hold fields, constraints and small properties; the logic lives in services.py and
allocation.py. The database constraints are what make a duplicate judgment impossible.
"""

import secrets
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.querysets import CampaignQuerySet


def protocol_choices() -> list[tuple[str, str]]:
    """List the registered protocols (a callable, so adding one needs no migration)."""
    from annotation.protocols import registry

    return [(p.name, p.title) for p in registry.all()]


def shuffle_new() -> int:
    """Return an item's fixed random rank; allocation draws among equals from a random one."""
    return secrets.randbelow(2**31)


def pseudonym_new() -> str:
    """Return a fresh random pseudonym; it is stored, so it stays stable for ever."""
    return "W" + secrets.token_hex(6).upper()


class Campaign(models.Model):
    """One study: a protocol with its parameters, run on a pool of items."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        LIVE = "live", "Live"
        PAUSED = "paused", "Paused"
        FINISHED = "finished", "Finished"

    class Withdrawal(models.TextChoices):
        KEEP = "keep", "Keep their judgments"
        DROP = "drop", "Drop their judgments"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    protocol = models.CharField(max_length=32, choices=protocol_choices)
    parameters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    redundancy = models.PositiveSmallIntegerField(
        default=1, help_text="How many different workers judge each item."
    )
    items_per_assignment = models.PositiveSmallIntegerField(
        default=10, help_text="Items in one assignment (one HIT / one paid unit of work)."
    )
    lease_seconds = models.PositiveIntegerField(
        default=15 * 60, help_text="How long a worker holds an item before it returns to the pool."
    )
    reward = models.DecimalField(
        max_digits=8,
        decimal_places=2,
        default=Decimal("0.00"),
        help_text="Pay per assignment, in the provider's currency.",
    )
    budget = models.DecimalField(max_digits=10, decimal_places=2, default=Decimal("0.00"))
    # Quality control, for every protocol; all of it may change while the campaign is live.
    gold_rate = models.FloatField(
        default=0.0,
        help_text="Share of a worker's items that are hidden gold checks with known answers "
        "(0 to 0.5).",
    )
    gold_min_accuracy = models.FloatField(
        default=0.7,
        help_text="A worker whose accuracy on gold items falls below this is soft-blocked.",
    )
    gold_min_answered = models.PositiveSmallIntegerField(
        default=3, help_text="Gold items a worker answers before their accuracy is judged."
    )
    min_seconds_per_item = models.FloatField(
        default=0.0,
        help_text="Answers sent sooner than this after the item was shown are refused.",
    )
    max_items_per_worker = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Most items (conversations, for chat protocols) one worker may do; "
        "empty for no cap. Gold checks do not count.",
    )
    # Who may arrive through a local link (docs/providers.md, "Identity"): only holders of
    # their own signed link, or, with open links, anyone under any workerId.
    open_links = models.BooleanField(
        default=False,
        help_text="Anyone with the task link may take part under any workerId (demo, "
        "classroom). Off: each local worker needs the signed link issued for them.",
    )
    open_arrivals_per_address = models.PositiveIntegerField(
        default=20,
        help_text="With open links: new participants one network address may start per hour.",
    )
    # Rate limits (annotation.ratelimits); empty: the site's defaults (EVALSITE_RATE_*).
    rate_per_ip = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Arrivals (and, counted apart, answers) a minute one network address may "
        "send to this study; empty for the site's default (EVALSITE_RATE_PER_IP).",
    )
    rate_per_worker = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The same for one worker at one address; empty for the site's default "
        "(EVALSITE_RATE_PER_WORKER).",
    )
    chat_frames_per_second = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Frames a second one chat socket may send, on average; empty for the "
        "site's default (EVALSITE_CHAT_FRAMES_PER_SECOND).",
    )
    # Withdrawal and top-up (docs/protocols.md, "Withdrawal"): what happens to the judgments
    # of a worker who withdraws, and how many excluded judgments may be replaced.
    withdrawal = models.CharField(
        max_length=8,
        choices=Withdrawal.choices,
        default=Withdrawal.KEEP,
        help_text="When a worker withdraws, their texts and provider id are erased; their "
        "judgments are kept (anonymous) or dropped from reports and exports.",
    )
    topup_max = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Most judgments of excluded workers (soft-blocked, or withdrawn with "
        "judgments dropped) replaced by re-opening their items; empty: a tenth of the item "
        "slots (items × redundancy), rounded up; 0: none.",
    )
    topup_reopened = models.PositiveIntegerField(
        default=0, editable=False, help_text="Item slots re-opened so far (allocation.py)."
    )
    # Study pages (docs/protocols.md, "Study pages and consent"): Markdown, rendered through
    # a sanitizer; with consent text, workers see the intro and consent before any item.
    description = models.TextField(
        blank=True,
        help_text="What the study is for, how long it takes, the pay and the researcher's "
        "contact (Markdown), shown on the intro page.",
    )
    instructions = models.TextField(
        blank=True,
        help_text="Instructions (Markdown); empty: the protocol's published wording.",
    )
    consent_text = models.TextField(
        blank=True,
        help_text="Consent form (Markdown); empty: no intro or consent step.",
    )
    consent_version = models.CharField(
        max_length=32,
        default="1",
        blank=True,
        help_text="Change it when the consent text changes: every worker is asked again "
        "(empty: 1).",
    )
    # Training (docs/protocols.md, "Training"): with training items, a worker must pass them
    # (feedback after each answer) before any item; passing is remembered as a qualification.
    training_pass_mark = models.FloatField(
        default=0.8,
        help_text="Share of training items answered as expected to pass (0.5 to 1).",
    )
    training_attempts = models.PositiveSmallIntegerField(
        default=2, help_text="Attempts at the training a worker has (2 to 10)."
    )
    training_qualification = models.CharField(
        max_length=64,
        blank=True,
        help_text="The qualification passing grants, shared by the owner's campaigns that name "
        "it; empty: the protocol's name.",
    )
    language = models.CharField(
        max_length=8,
        default="en",
        choices=settings.LANGUAGES,
        help_text='The language of the worker pages (docs/protocols.md, "Languages").',
    )
    training_size = models.PositiveIntegerField(
        default=0, editable=False, help_text="Training items (services.training_items_add)."
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="campaigns",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = CampaignQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(redundancy__gte=1), name="campaign_redundancy_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(items_per_assignment__gte=1), name="campaign_items_per_assignment_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(lease_seconds__gte=10), name="campaign_lease_gte_10s"
            ),
            models.CheckConstraint(condition=Q(budget__gte=0), name="campaign_budget_gte_0"),
            models.CheckConstraint(condition=Q(reward__gte=0), name="campaign_reward_gte_0"),
            models.CheckConstraint(
                condition=Q(gold_rate__gte=0, gold_rate__lte=0.5), name="campaign_gold_rate_range"
            ),
            models.CheckConstraint(
                condition=Q(gold_min_accuracy__gte=0, gold_min_accuracy__lte=1),
                name="campaign_gold_min_accuracy_range",
            ),
            models.CheckConstraint(
                condition=Q(min_seconds_per_item__gte=0), name="campaign_min_seconds_gte_0"
            ),
            models.CheckConstraint(
                condition=Q(gold_min_answered__gte=1), name="campaign_gold_min_answered_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(max_items_per_worker__isnull=True) | Q(max_items_per_worker__gte=1),
                name="campaign_max_items_per_worker_gte_1",
            ),
            models.CheckConstraint(
                condition=Q(training_pass_mark__gte=0.5, training_pass_mark__lte=1),
                name="campaign_training_pass_mark_range",
            ),
            models.CheckConstraint(
                condition=Q(training_attempts__gte=2, training_attempts__lte=10),
                name="campaign_training_attempts_range",
            ),
            models.CheckConstraint(
                condition=Q(open_arrivals_per_address__gte=1),
                name="campaign_open_arrivals_per_address_gte_1",
            ),
            *(
                models.CheckConstraint(
                    condition=Q(**{f"{name}__isnull": True}) | Q(**{f"{name}__gte": 1}),
                    name=f"campaign_{name}_gte_1",
                )
                for name in ("rate_per_ip", "rate_per_worker", "chat_frames_per_second")
            ),
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_live(self) -> bool:
        return self.status == self.Status.LIVE

    @property
    def qualification(self) -> str:
        """The name of the qualification this campaign's training grants."""
        return self.training_qualification or self.protocol


class Item(models.Model):
    """One unit to judge (a context and a response, a dialogue, a pair...); payload per protocol."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=200, help_text="Stable identifier within the campaign.")
    payload = models.JSONField()
    gold = models.JSONField(
        null=True,
        blank=True,
        help_text="For a hidden gold check: the accepted answers, {question: [values]}. "
        "Gold items never count in reports.",
    )
    attention = models.BooleanField(
        default=False,
        help_text="An explicit attention check (a gold item whose text tells the worker what to "
        "answer, e.g. \"select 'Yes' for this item\"): objective, so failing it may justify a "
        "rejection where the provider allows it. Other gold items are subjective agreement "
        "checks: soft blocks and review hints only (docs/protocols.md, quality control).",
    )
    # Kept by allocation.py under the item's row lock (docs/architecture.md, "Allocation"):
    # ``judged`` counts the workers who judged the item, ``claims`` those plus its lease rows.
    judged = models.PositiveIntegerField(default=0, editable=False)
    claims = models.PositiveIntegerField(default=0, editable=False)
    shuffle = models.IntegerField(default=shuffle_new, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "key"], name="item_unique_key_per_campaign"
            ),
            models.CheckConstraint(
                condition=Q(claims__gte=models.F("judged")), name="item_claims_gte_judged"
            ),
            models.CheckConstraint(
                condition=Q(attention=False) | Q(gold__isnull=False),
                name="item_attention_is_gold",
            ),
        ]
        indexes = [
            # The open items of a campaign, fewest claims first, in a random order among equals.
            models.Index(
                fields=["campaign", "claims", "shuffle"],
                condition=Q(gold__isnull=True),
                name="item_open_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}:{self.key}"

    @property
    def is_gold(self) -> bool:
        return self.gold is not None


class Worker(models.Model):
    """A person (or a simulated worker) as a crowd provider identifies them."""

    class Provider(models.TextChoices):
        LOCAL = "local", "Local"
        MTURK = "mturk", "Amazon Mechanical Turk"
        PROLIFIC = "prolific", "Prolific"
        SIMULATED = "simulated", "Simulated"
        # An LLM judge (judges): a model rater, kept apart from the crowd.
        MODEL = "model", "Model (LLM judge)"

    provider = models.CharField(max_length=16, choices=Provider.choices)
    external_id = models.CharField(max_length=128)
    pseudonym = models.CharField(
        max_length=16,
        unique=True,
        default=pseudonym_new,
        editable=False,
        help_text="The only identity that appears in exports.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "external_id"], name="worker_unique_per_provider"
            )
        ]

    def __str__(self) -> str:
        return self.pseudonym


class Participation(models.Model):
    """A worker's standing in one campaign; quality control's soft blocks live here.

    A soft-blocked worker gets no more items; their judgments are kept, flagged, and left out
    of reports unless asked for.
    """

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="participations")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="participations")
    soft_blocked = models.BooleanField(default=False)
    reason = models.CharField(max_length=300, blank=True)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "worker"], name="participation_unique_campaign_worker"
            )
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}/{self.worker_id}{' (blocked)' if self.soft_blocked else ''}"


class Consent(models.Model):
    """A worker's consent to one version of a campaign's consent text (when and to what)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="consents")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="consents")
    version = models.CharField(max_length=32)
    given_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "worker", "version"], name="consent_unique_per_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.campaign_id}/{self.worker_id} v{self.version}"


class Assignment(models.Model):
    """One worker's paid unit of work in a campaign (an MTurk assignment, a Prolific submission)."""

    class Status(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        RETURNED = "returned", "Returned"
        ABANDONED = "abandoned", "Abandoned"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="assignments")
    provider_assignment_id = models.CharField(max_length=128, blank=True)
    provider_hit_id = models.CharField(max_length=128, blank=True)
    submit_to = models.URLField(blank=True, help_text="MTurk's turkSubmitTo host.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACCEPTED)
    items_target = models.PositiveSmallIntegerField()
    # Items judged in this assignment; kept by judgment_submit under the assignment's row lock.
    items_done = models.PositiveSmallIntegerField(default=0, editable=False)
    completion_code = models.CharField(max_length=32, blank=True)
    accepted_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    review_feedback = models.TextField(blank=True)

    class Meta:
        ordering = ["-accepted_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "worker"],
                condition=Q(status="accepted"),
                name="assignment_one_open_per_worker",
            ),
            models.UniqueConstraint(
                fields=["campaign", "provider_assignment_id"],
                condition=~Q(provider_assignment_id=""),
                name="assignment_unique_provider_id",
            ),
        ]
        indexes = [models.Index(fields=["status", "last_activity_at"])]

    def __str__(self) -> str:
        return f"{self.campaign_id}/{self.worker_id}/{self.pk}"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.ACCEPTED


class Lease(models.Model):
    """An item shown to a worker and reserved for them until ``expires_at``."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="leases")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="leases")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="leases")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "worker"], name="lease_unique_item_worker")
        ]
        indexes = [models.Index(fields=["item", "expires_at"]), models.Index(fields=["expires_at"])]

    def __str__(self) -> str:
        return f"lease {self.item_id} → {self.worker_id}"


class Judgment(models.Model):
    """One worker's answer to one question about one item."""

    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="judgments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="judgments")
    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="judgments")
    question = models.CharField(max_length=64)
    value = models.JSONField()
    presentation = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the worker was shown that the item does not fix, e.g. the order of "
        "two responses.",
    )
    time_spent_ms = models.PositiveIntegerField(
        help_text="From the item being shown to the answer arriving, measured by the server."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "worker", "question"], name="judgment_unique_item_worker_question"
            )
        ]
        indexes = [models.Index(fields=["assignment"])]

    def __str__(self) -> str:
        return f"{self.item_id}/{self.worker_id}/{self.question}={self.value!r}"
