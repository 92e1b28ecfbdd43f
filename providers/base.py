"""The one Provider interface, the plain data it speaks, and the checks providers share.

A provider module holds no study logic and no database writes: it turns a launch plan into
HITs or a study, and speaks the provider's API (boto3 for MTurk, HTTP for Prolific). The
services in ``recruitment`` decide, check budgets, write the ledger and call it.
``config`` is the publication's JSON settings (``Publication.config``): ids on the provider's
side, sandbox or endpoint, the eligibility and pay plan.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar, Literal

from django.utils.translation import gettext

from evalsite.errors import AnnotationError, InvalidParameters

_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
CENT = Decimal("0.01")

# A submission's state on the provider's side, in one vocabulary for every provider.
RemoteStatus = Literal["accepted", "submitted", "approved", "rejected", "returned", "expired"]


class ProviderError(AnnotationError):
    """The provider refused a request or could not be reached; the message says which."""

    status_code = 502
    # Set when a write may have reached the provider although no answer came back.
    uncertain = False


@dataclass(frozen=True)
class Arrival:
    """A worker's arrival on the task page, as the provider's URL parameters describe it."""

    provider: str
    worker_id: str
    # The provider's session of this worker's task (MTurk assignmentId, Prolific SESSION_ID):
    # an assignment is bound to it, and another session cannot act on it.
    assignment_id: str = ""
    hit_id: str = ""
    submit_to: str = ""
    preview: bool = False
    # What the link carries to prove the worker id (a local link's signature).
    signature: str = ""
    # The network address the request came from (set by the view, never by the URL).
    address: str = ""


def clean_id(value: str, what: str) -> str:
    """Return ``value`` if it is a plausible provider identifier; raise otherwise."""
    if not _ID.match(value):
        raise InvalidParameters(
            gettext(
                "The %(what)s in this link is not valid: use 1–128 letters, digits, '_', '-', "
                "'.', ':'."
            )
            % {"what": gettext(what)}
        )
    return value


def money(value: Decimal | int | str) -> Decimal:
    """Return ``value`` as a Decimal rounded to the cent (half up)."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Eligibility:
    """Who may take part: provider filters and allow/block lists.

    The per-worker cap (ED's 100 conversations) and soft blocks are quality control's
    (``Campaign.max_items_per_worker``, ``Participation``); sync passes the workers they stop
    to ``Provider.mark_ineligible``.
    """

    locales: tuple[str, ...] = ()  # ISO 3166 country codes, e.g. ("US", "GB")
    min_percent_approved: int | None = None
    min_number_approved: int | None = None
    allow_workers: tuple[str, ...] = ()  # provider worker ids; empty = everyone
    block_workers: tuple[str, ...] = ()
    extra_filters: tuple[tuple[str, str], ...] = ()  # provider-specific (Prolific filter ids)

    def as_config(self) -> dict[str, Any]:
        """Return the JSON form stored in ``Publication.config['eligibility']``."""
        return {
            "locales": list(self.locales),
            "min_percent_approved": self.min_percent_approved,
            "min_number_approved": self.min_number_approved,
            "allow_workers": list(self.allow_workers),
            "block_workers": list(self.block_workers),
            "extra_filters": [list(f) for f in self.extra_filters],
        }

    @classmethod
    def from_config(cls, data: Mapping[str, Any] | None) -> Eligibility:
        """Return the eligibility stored by ``as_config``."""
        data = data or {}
        return cls(
            locales=tuple(data.get("locales") or ()),
            min_percent_approved=data.get("min_percent_approved"),
            min_number_approved=data.get("min_number_approved"),
            allow_workers=tuple(data.get("allow_workers") or ()),
            block_workers=tuple(data.get("block_workers") or ()),
            extra_filters=tuple((str(k), str(v)) for k, v in data.get("extra_filters") or ()),
        )

    def describe(self) -> list[str]:
        """Return one human-readable line per rule (for the dry run)."""
        lines = []
        if self.locales:
            lines.append("locale in " + ", ".join(self.locales))
        if self.min_percent_approved is not None:
            lines.append(f"approval rate ≥ {self.min_percent_approved}%")
        if self.min_number_approved is not None:
            lines.append(f"approved HITs ≥ {self.min_number_approved}")
        if self.allow_workers:
            lines.append(f"only {len(self.allow_workers)} allowed worker(s)")
        if self.block_workers:
            lines.append(f"{len(self.block_workers)} worker(s) blocked")
        lines += [f"filter {k} = {v}" for k, v in self.extra_filters]
        return lines or ["anyone"]


@dataclass(frozen=True)
class HitSpec:
    """One unit to publish: how many workers may take it and what it pays each."""

    assignments: int
    reward: Decimal
    label: str = ""


@dataclass(frozen=True)
class LaunchPlan:
    """Everything a provider needs to publish a campaign."""

    slug: str
    title: str
    description: str
    url: str  # the worker URL, /task/<slug>/ made absolute
    hits: tuple[HitSpec, ...]
    eligibility: Eligibility = field(default_factory=Eligibility)
    keywords: str = "dialogue, chatbot, evaluation"
    minutes: int = 10  # estimated minutes per assignment
    assignment_seconds: int = 3600  # how long a worker may hold one assignment
    lifetime_seconds: int = 7 * 24 * 3600  # how long the HITs stay on the market
    auto_approve_seconds: int = 3 * 24 * 3600
    frame_height: int = 800

    @property
    def places(self) -> int:
        """Return how many assignments the plan publishes in total."""
        return sum(h.assignments for h in self.hits)


@dataclass(frozen=True)
class CostLine:
    """The cost of one HIT spec: rewards plus the provider's fees."""

    spec: HitSpec
    fee_per_assignment: Decimal

    @property
    def total(self) -> Decimal:
        return money((self.spec.reward + self.fee_per_assignment) * self.spec.assignments)


@dataclass(frozen=True)
class Estimate:
    """What a launch plan costs at most, line by line."""

    lines: tuple[CostLine, ...]

    @property
    def rewards(self) -> Decimal:
        return money(
            sum((line.spec.reward * line.spec.assignments for line in self.lines), Decimal(0))
        )

    @property
    def fees(self) -> Decimal:
        return money(
            sum(
                (line.fee_per_assignment * line.spec.assignments for line in self.lines), Decimal(0)
            )
        )

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees


@dataclass(frozen=True)
class PublishedHit:
    """A HIT (or study) that the provider created, as ``Hit`` records it."""

    external_id: str
    spec: HitSpec
    fee_per_assignment: Decimal
    expires_at: float | None = None  # epoch seconds


@dataclass(frozen=True)
class HitState:
    """A HIT's (or study's) state on the provider's side."""

    status: str
    expires_at: float | None = None  # epoch seconds
    assignment_seconds: int | None = None


@dataclass(frozen=True)
class RemoteSubmission:
    """One worker's assignment/submission as the provider lists it."""

    external_id: str
    worker_id: str
    hit_id: str
    status: RemoteStatus
    raw_status: str = ""


@dataclass(frozen=True)
class PaymentLookup:
    """What the provider says of one payment the ledger could not confirm (``payment_lookup``).

    ``state``: "paid" (``reference`` names it there), "absent" (it certainly was not paid, so
    sending it again pays once), or "unknown" (the provider cannot tell; ``reason`` says why
    and what a person can check instead).
    """

    state: Literal["paid", "absent", "unknown"]
    reference: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Completion:
    """How the end screen hands the worker back: a form post, a redirect or a code to copy."""

    kind: Literal["post", "redirect", "code"]
    url: str = ""
    fields: tuple[tuple[str, str], ...] = ()
    code: str = ""


class Provider(ABC):
    """A crowd provider: how workers arrive, and how work is published, reviewed and paid."""

    name: ClassVar[str]
    title: ClassVar[str]
    # True where the provider holds the money and the submissions (MTurk, Prolific).
    remote: ClassVar[bool] = True
    # True where repeating a payment request can never pay twice (MTurk's request tokens).
    idempotent_payments: ClassVar[bool] = False
    # True where an accepted assignment the provider no longer lists may have run out of time
    # unsubmitted (MTurk drops those); sync then marks it abandoned once its time is up.
    drops_expired_assignments: ClassVar[bool] = False
    # True where the provider's rules let a requester reject for low agreement with subjective
    # gold answers or a soft block (MTurk); Prolific allows rejections only for failed explicit
    # attention checks. Review never does it unless asked: those are hints (payments/review.py).
    rejects_for_agreement: ClassVar[bool] = True
    # The ISO 4217 code rewards, fees and bonuses are paid in; "" where the researcher's
    # account decides (a local study's ledger, a Prolific workspace): settings' EVALSITE_CURRENCY.
    currency: ClassVar[str] = ""

    def unavailable(self) -> str:
        """Return why this site cannot reach the provider now (credentials missing), or ""."""
        return ""

    # --- arrival and completion ---------------------------------------------------------

    @abstractmethod
    def parse_arrival(self, params: Mapping[str, str]) -> Arrival | None:
        """Recognise this provider's URL parameters; None if they are not its own."""

    @abstractmethod
    def arrival_query(self, arrival: Arrival) -> dict[str, str]:
        """Return the URL parameters that reproduce ``arrival``."""

    def verify_arrival(  # noqa: B027 (optional hook: most providers have nothing to ask)
        self, *, config: Mapping[str, Any], arrival: Arrival, first: bool
    ) -> None:
        """Raise NotAllowed if the provider does not vouch for ``arrival`` (``first`` visit)."""

    def identity_check(  # noqa: B027 (optional hook: remote providers vouch by their sessions)
        self, *, campaign: str, open_links: bool, arrival: Arrival
    ) -> None:
        """Raise NotAllowed unless the link proves the worker id, for a campaign (slug) that
        does or does not allow open links. Remote providers' workers arrive from the
        provider's own site with its session ids, checked by ``verify_arrival``."""

    @abstractmethod
    def completion(
        self, *, config: Mapping[str, Any], assignment_id: str, submit_to: str, code: str
    ) -> Completion:
        """Return how a finished worker is handed back to the provider."""

    # --- publishing ----------------------------------------------------------------------

    def endpoint(self, config: Mapping[str, Any]) -> str:
        """Name where a publication with ``config`` lives (an API URL; ours: the name)."""
        return self.name

    def hit_specs(self, *, units: int, redundancy: int, reward: Decimal) -> tuple[HitSpec, ...]:
        """Split ``units`` assignments' worth of work, each done by ``redundancy`` workers,
        into HITs: one study with every place by default."""
        return (HitSpec(units * redundancy, reward),)

    def extend_check(  # noqa: B027 (optional hook: most providers take any number)
        self, *, hit_id: str, assignments: int, extra: int
    ) -> None:
        """Raise InvalidParameters if a HIT of ``assignments`` cannot grow by ``extra``."""

    @abstractmethod
    def fee(self, *, reward: Decimal, assignments: int, bonus: bool = False) -> Decimal:
        """Return the provider's fee on one payment of ``reward`` (per assignment)."""

    def estimate(self, plan: LaunchPlan) -> Estimate:
        """Return the most ``plan`` can cost, fees included."""
        return Estimate(
            tuple(
                CostLine(h, self.fee(reward=h.reward, assignments=h.assignments)) for h in plan.hits
            )
        )

    @abstractmethod
    def publish(
        self, *, config: dict[str, Any], plan: LaunchPlan, on_hit: Any = None
    ) -> list[PublishedHit]:
        """Create and publish the plan's HITs or study; fill ``config`` with the ids made.

        ``on_hit(published)`` is called after each HIT is made, so the caller records it even
        if a later one fails.
        """

    @abstractmethod
    def hit_extend(self, *, config: Mapping[str, Any], hit_id: str, extra: int, token: str) -> None:
        """Add ``extra`` assignments (places) to a published HIT or study."""

    @abstractmethod
    def hit_states(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> dict[str, HitState]:
        """Return the provider's state of each HIT/study."""

    @abstractmethod
    def pause(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Stop new workers from starting, for now."""

    @abstractmethod
    def resume(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Let new workers start again."""

    @abstractmethod
    def stop(self, *, config: Mapping[str, Any], hit_ids: Sequence[str]) -> None:
        """Expire the HITs / stop the study for good; submitted work can still be reviewed."""

    # --- review and money ----------------------------------------------------------------

    def attention_rejects(self, *, failed: int, minutes: float) -> bool:
        """Return whether ``failed`` explicit attention checks, in a submission that took
        ``minutes`` of work, justify a rejection under the provider's rules."""
        return failed >= 1

    @abstractmethod
    def submissions(
        self, *, config: Mapping[str, Any], hit_ids: Sequence[str]
    ) -> list[RemoteSubmission]:
        """List the workers' assignments/submissions the provider knows of."""

    @abstractmethod
    def approve(self, *, config: Mapping[str, Any], submission_id: str, feedback: str) -> None:
        """Approve a submission (pays its reward); approving it again changes nothing."""

    @abstractmethod
    def reject(
        self,
        *,
        config: Mapping[str, Any],
        submission_id: str,
        feedback: str,
        category: str = "",
    ) -> None:
        """Reject a submission with feedback the worker sees; nothing is paid.

        ``category`` is a reason code where the provider wants one (Prolific's
        rejection_category, e.g. ``NO_DATA``, ``FAILED_CHECK``).
        """

    @abstractmethod
    def bonus(
        self,
        *,
        config: Mapping[str, Any],
        worker_id: str,
        submission_id: str,
        amount: Decimal,
        reason: str,
        token: str,
    ) -> str:
        """Pay ``amount`` once (``token`` is the idempotency key); return the provider's id."""

    def payment_lookup(
        self,
        *,
        config: Mapping[str, Any],
        kind: str,
        worker_id: str,
        submission_id: str,
        amount: Decimal,
        reason: str,
        token: str,
    ) -> PaymentLookup:
        """Ask the provider whether a payment whose send was cut off went through.

        ``kind`` is "reward" (the submission's approval) or a bonus ("bonus", "topup"). Raises
        ProviderError when the provider cannot be reached; never guesses.
        """
        return PaymentLookup("unknown", reason=f"{self.title} cannot be asked about payments.")

    # --- workers ---------------------------------------------------------------------------

    @abstractmethod
    def block(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """Keep the worker out of our HITs/studies."""

    @abstractmethod
    def unblock(self, *, config: Mapping[str, Any], worker_id: str, reason: str) -> None:
        """Lift a block."""

    @abstractmethod
    def notify(
        self, *, config: Mapping[str, Any], worker_ids: Sequence[str], subject: str, message: str
    ) -> None:
        """Send workers a message through the provider."""

    def mark_ineligible(  # noqa: B027 (optional hook: local arrivals are checked here)
        self, *, config: Mapping[str, Any], worker_ids: Sequence[str]
    ) -> None:
        """Keep workers who reached their cap (or are soft-blocked) out of this publication."""
