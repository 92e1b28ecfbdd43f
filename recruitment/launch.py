"""Publishing a campaign on a provider: the plan, its cost, the budget check, the HITs.

Layout: one HIT per ``items_per_assignment`` items, each with ``redundancy`` assignments, so
a worker can take several HITs (up to the campaign's cap) and MTurk's lower fee applies while
redundancy stays under 10. A Prolific study gets the same number of places in one study.

Pay buckets (EmotionLines paid by dialogue length: 5–9, 10–14, 15–19, 20–24 utterances →
$0.10, 0.15, 0.20, 0.25) make an assignment's pay the sum of its items' buckets. Items are
allocated to workers as they arrive, not bound to HITs, so HITs are published at the lowest
bucket's rate and review pays the difference as a top-up bonus; the launch reserves the
top-ups in the budget.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.urls import reverse

from annotation.locks import campaign_lock
from annotation.models import AuditLog, Campaign, Item
from annotation.protocols import registry
from annotation.services import audit_add, campaign_set_status
from evalsite.errors import Conflict, InvalidParameters, NotAllowed
from providers import ProviderError, provider_get
from providers.base import (
    Eligibility,
    Estimate,
    LaunchPlan,
    PublishedHit,
    money,
)
from recruitment.ledger import budget_check, campaign_committed
from recruitment.models import Hit, Publication

PayBucket = tuple[int, int, Decimal]
EMOTIONLINES_BUCKETS: tuple[PayBucket, ...] = (
    (5, 9, Decimal("0.10")),
    (10, 14, Decimal("0.15")),
    (15, 19, Decimal("0.20")),
    (20, 24, Decimal("0.25")),
)
_BUCKET = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*:\s*([0-9]+(?:\.[0-9]{1,2})?)\s*$")
_LENGTH_KEYS = ("utterances", "dialogue", "turns")


def pay_buckets_parse(text: str) -> tuple[PayBucket, ...]:
    """Parse a protocol's name, for the pay buckets of its defaults (``emotionlines``: §4's),
    or ``LOW-HIGH:PAY,…`` (utterances → pay per item)."""
    named = {p.name: p for p in registry.all()}.get(text.strip().lower())
    preset = named.default_parameters().get("pay_buckets") if named is not None else None
    if preset:
        return tuple((int(lo), int(hi), money(pay)) for lo, hi, pay in preset)
    buckets: list[PayBucket] = []
    for part in text.split(","):
        match = _BUCKET.match(part)
        if not match:
            raise InvalidParameters(
                f"Pay bucket {part.strip()!r} is not LOW-HIGH:PAY (e.g. 5-9:0.10); or use "
                "'emotionlines'."
            )
        low, high, pay = int(match[1]), int(match[2]), money(match[3])
        if low > high or pay <= 0:
            raise InvalidParameters(f"Pay bucket {part.strip()!r}: need LOW ≤ HIGH and PAY > 0.")
        buckets.append((low, high, pay))
    buckets.sort()
    for (_, high, _), (low, _, _) in zip(buckets, buckets[1:], strict=False):
        if low <= high:
            raise InvalidParameters("Pay buckets overlap.")
    return tuple(buckets)


def dialogue_length(payload: Mapping[str, Any]) -> int:
    """Return an item's length in utterances (its dialogue, or context plus response)."""
    for key in _LENGTH_KEYS:
        if isinstance(payload.get(key), list):
            return len(payload[key])
    context = payload.get("context")
    return (len(context) if isinstance(context, list) else 0) + ("response" in payload)


def bucket_pay(length: int, buckets: Sequence[PayBucket]) -> Decimal | None:
    """Return the pay for an item of ``length`` utterances; None if no bucket covers it."""
    for low, high, pay in buckets:
        if low <= length <= high:
            return pay
    return None


@dataclass(frozen=True)
class LaunchOptions:
    """How to publish: provider, endpoint, eligibility, pay, timing."""

    provider: str
    production: bool = False
    endpoint_url: str = ""
    eligibility: Eligibility = field(default_factory=Eligibility)
    pay_buckets: tuple[PayBucket, ...] = ()
    places: int | None = None  # total assignments; default: enough for every item
    minutes: int = 10
    assignment_seconds: int = 3600
    lifetime_seconds: int = 7 * 24 * 3600
    description: str = ""


@dataclass(frozen=True)
class LaunchPreview:
    """A plan with its cost and the budget it meets (what the dry run prints)."""

    plan: LaunchPlan
    estimate: Estimate
    topup_reserve: Decimal  # top-ups the pay buckets may owe, fees included
    committed: Decimal
    budget: Decimal
    endpoint: str

    @property
    def total(self) -> Decimal:
        return self.estimate.total + self.topup_reserve


def worker_url(campaign: Campaign) -> str:
    """Return the absolute worker URL that HITs and studies point at."""
    base = settings.EVALSITE_PUBLIC_URL.rstrip("/")
    return base + reverse("annotation:task", args=[campaign.slug])


def _reward_and_topups(
    campaign: Campaign, options: LaunchOptions, items: list[Item]
) -> tuple[Decimal, Decimal]:
    """Return the reward per assignment and the top-ups (before fees) the buckets may owe."""
    if not options.pay_buckets:
        return money(campaign.reward), Decimal("0.00")
    pays = []
    for item in items:
        pay = bucket_pay(dialogue_length(item.payload), options.pay_buckets)
        if pay is None:
            raise InvalidParameters(
                f"Item {item.key!r} has {dialogue_length(item.payload)} utterances, which no "
                "pay bucket covers."
            )
        pays.append(pay)
    base = min(b[2] for b in options.pay_buckets) * campaign.items_per_assignment
    exact = sum(pays, Decimal(0)) * campaign.redundancy
    places = math.ceil(len(items) / campaign.items_per_assignment) * campaign.redundancy
    return money(base), money(max(exact - base * places, Decimal(0)))


def protocol_pay_buckets(campaign: Campaign) -> tuple[PayBucket, ...]:
    """Return the pay buckets the campaign's protocol sets (EmotionLines: §4's), or ()."""
    protocol = registry.get(campaign.protocol)
    raw = protocol.clean_parameters(campaign.parameters).get("pay_buckets") or []
    return tuple((int(lo), int(hi), money(pay)) for lo, hi, pay in raw)


def _with_protocol_buckets(campaign: Campaign, options: LaunchOptions) -> LaunchOptions:
    """Use the protocol's pay buckets when the launch names none."""
    if options.pay_buckets:
        return options
    return replace(options, pay_buckets=protocol_pay_buckets(campaign))


def launch_preview(*, campaign: Campaign, options: LaunchOptions) -> LaunchPreview:
    """Return the plan, its cost (fees included) and the budget; change nothing."""
    options = _with_protocol_buckets(campaign, options)
    provider = provider_get(options.provider)
    items = list(Item.objects.filter(campaign=campaign, gold__isnull=True).order_by("pk"))
    if not items:
        raise Conflict(f"The campaign '{campaign.slug}' has no items to publish.")
    reward, topups = _reward_and_topups(campaign, options, items)
    if provider.remote and reward <= 0:
        raise InvalidParameters(
            f"Set the campaign's reward (now {campaign.reward:.2f}) before publishing on "
            f"{provider.title}."
        )
    n_hits = math.ceil(len(items) / campaign.items_per_assignment)
    if options.places is not None:
        if options.places < 1:
            raise InvalidParameters("places must be at least 1.")
        n_hits = math.ceil(options.places / campaign.redundancy)
    hits = provider.hit_specs(units=n_hits, redundancy=campaign.redundancy, reward=reward)
    plan = LaunchPlan(
        slug=campaign.slug,
        title=campaign.name,
        description=options.description or f"Rate chatbot replies: {campaign.name}.",
        url=worker_url(campaign),
        hits=hits,
        eligibility=options.eligibility,
        minutes=options.minutes,
        assignment_seconds=options.assignment_seconds,
        lifetime_seconds=options.lifetime_seconds,
    )
    topup_fee = provider.fee(reward=topups, assignments=1, bonus=True) if topups else Decimal(0)
    config = _config(options)
    return LaunchPreview(
        plan=plan,
        estimate=provider.estimate(plan),
        topup_reserve=money(topups + topup_fee),
        committed=campaign_committed(campaign),
        budget=money(campaign.budget),
        endpoint=provider.endpoint(config),
    )


def _config(options: LaunchOptions) -> dict[str, Any]:
    config: dict[str, Any] = {
        "sandbox": not options.production,
        "eligibility": options.eligibility.as_config(),
        "pay_buckets": [[lo, hi, str(pay)] for lo, hi, pay in options.pay_buckets],
        "lifetime_seconds": options.lifetime_seconds,
    }
    if options.endpoint_url:
        config["endpoint_url"] = options.endpoint_url
    return config


def _reserve(
    *, campaign: Campaign, options: LaunchOptions, preview: LaunchPreview, actor: str
) -> Publication:
    """Check state and budget, and record the publication with its reservation."""
    with transaction.atomic():
        locked = campaign_lock(campaign)
        if locked.status == Campaign.Status.FINISHED:
            raise NotAllowed(f"The campaign '{campaign.slug}' is finished.")
        publication = Publication.objects.filter(campaign=locked, provider=options.provider).first()
        if publication is not None and publication.status != Publication.Status.FAILED:
            raise Conflict(
                f"'{campaign.slug}' is already published on {options.provider} "
                f"({publication.hits.count()} HIT(s)); add places with `launch --add N`."
            )
        budget_check(campaign=locked, extra=preview.total, what=f"publishing on {options.provider}")
        config = _config(options)
        config["topup_reserve"] = str(preview.topup_reserve)
        if publication is None:
            publication = Publication(campaign=locked, provider=options.provider)
        else:  # a failed launch: keep the ids it made (qualification types, groups)
            config = {**publication.config, **config}
        publication.status = Publication.Status.PUBLISHING
        publication.sandbox = not options.production
        publication.config = config
        publication.reserved = preview.total + _hits_cost(publication)
        publication.save()
        return publication


def _hits_cost(publication: Publication) -> Decimal:
    if publication.pk is None:
        return Decimal("0.00")
    return money(
        sum(
            ((h.reward + h.fee_per_assignment) * h.max_assignments for h in publication.hits.all()),
            Decimal(0),
        )
    )


def campaign_launch(
    *, campaign: Campaign, options: LaunchOptions, actor: str
) -> tuple[Publication, LaunchPreview]:
    """Publish the campaign on the provider within its budget, and set it live.

    Each HIT is recorded as soon as the provider made it; if a later one fails, the
    publication is marked failed, its reservation shrinks to what was made, and the error
    says so.
    """
    options = _with_protocol_buckets(campaign, options)
    preview = launch_preview(campaign=campaign, options=options)
    provider = provider_get(options.provider)
    publication = _reserve(campaign=campaign, options=options, preview=preview, actor=actor)
    config = dict(publication.config)

    def record(hit: PublishedHit) -> None:
        Hit.objects.create(
            publication=publication,
            external_id=hit.external_id,
            max_assignments=hit.spec.assignments,
            reward=hit.spec.reward,
            fee_per_assignment=hit.fee_per_assignment,
            label=hit.spec.label,
        )

    try:
        provider.publish(config=config, plan=preview.plan, on_hit=record)
    except (ProviderError, InvalidParameters) as exc:
        publication.status = Publication.Status.FAILED
        publication.config = config
        publication.reserved = _hits_cost(publication)
        publication.save()
        made = publication.hits.count()
        audit_add(
            action=AuditLog.Action.REFUSED,
            actor=actor,
            campaign=campaign,
            provider=provider.name,
            detail=f"publish failed after {made} HIT(s): {exc.message}",
        )
        raise type(exc)(
            f"{exc.message} ({made} of {len(preview.plan.hits)} HIT(s) were made and are "
            "recorded; stop them or launch again.)"
        ) from None
    publication.status = Publication.Status.LIVE
    publication.config = config
    publication.external_id = str(config.get("study_id") or config.get("hit_type_id") or "")
    publication.save()
    if campaign.status != Campaign.Status.LIVE:
        campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
    audit_add(
        action=AuditLog.Action.PUBLISH,
        actor=actor,
        campaign=campaign,
        provider=provider.name,
        amount=preview.total,
        detail=f"{len(preview.plan.hits)} HIT(s), {preview.plan.places} places, "
        f"endpoint {preview.endpoint}",
    )
    return publication, preview


def publication_extend(
    *, publication: Publication, extra: int, actor: str, hit_id: str = ""
) -> Decimal:
    """Add ``extra`` assignments to one HIT (or to each), within the budget; return the cost.

    MTurk keeps a HIT created with fewer than 10 assignments under 10 (its fee tier), so such
    an extension is refused with that reason.
    """
    if isinstance(extra, bool) or not isinstance(extra, int) or not 1 <= extra <= 1000:
        raise InvalidParameters("The number of extra assignments must be from 1 to 1000.")
    provider = provider_get(publication.provider)
    hits = list(publication.hits.all())
    if hit_id:
        hits = [h for h in hits if h.external_id == hit_id]
        if not hits:
            raise InvalidParameters(f"{hit_id!r} is not one of this publication's HITs.")
    if publication.status not in (Publication.Status.LIVE, Publication.Status.PAUSED):
        raise Conflict(f"The publication is {publication.get_status_display().lower()}.")
    for hit in hits:
        provider.extend_check(hit_id=hit.external_id, assignments=hit.max_assignments, extra=extra)
    cost = money(
        sum(
            (
                (h.reward + provider.fee(reward=h.reward, assignments=h.max_assignments + extra))
                * extra
                for h in hits
            ),
            Decimal(0),
        )
    )
    with transaction.atomic():
        locked = campaign_lock(publication.campaign)
        budget_check(campaign=locked, extra=cost, what=f"{extra} more assignment(s) per HIT")
        Publication.objects.filter(pk=publication.pk).update(reserved=F("reserved") + cost)
    done = Decimal(0)
    try:
        for hit in hits:
            token = f"extend-{hit.pk}-{hit.max_assignments}-{extra}"
            provider.hit_extend(
                config=publication.config, hit_id=hit.external_id, extra=extra, token=token
            )
            Hit.objects.filter(pk=hit.pk).update(max_assignments=F("max_assignments") + extra)
            done += (
                hit.reward
                + provider.fee(reward=hit.reward, assignments=hit.max_assignments + extra)
            ) * extra
    finally:
        unused = cost - money(done)
        if unused > 0:  # give back what the failed HITs did not use
            Publication.objects.filter(pk=publication.pk).update(reserved=F("reserved") - unused)
    audit_add(
        action=AuditLog.Action.EXTEND,
        actor=actor,
        campaign=publication.campaign,
        provider=provider.name,
        amount=cost,
        detail=f"+{extra} assignment(s) on {len(hits)} HIT(s)",
    )
    return cost


_STATE_ACTIONS = {
    "pause": (Publication.Status.PAUSED, AuditLog.Action.PAUSE),
    "resume": (Publication.Status.LIVE, AuditLog.Action.RESUME),
    "stop": (Publication.Status.STOPPED, AuditLog.Action.STOP),
}


def publication_set_state(*, publication: Publication, action: str, actor: str) -> Publication:
    """Pause, resume or stop the provider side (HITs expire; a Prolific study pauses/stops)."""
    if action not in _STATE_ACTIONS:
        raise InvalidParameters(f"Unknown action {action!r}; use pause, resume or stop.")
    status, audit = _STATE_ACTIONS[action]
    if publication.status == Publication.Status.STOPPED:
        raise Conflict("This publication is stopped for good.")
    if publication.status == status:
        return publication
    provider = provider_get(publication.provider)
    hit_ids = list(publication.hits.values_list("external_id", flat=True))
    getattr(provider, action)(config=publication.config, hit_ids=hit_ids)
    publication.status = status
    publication.save(update_fields=["status", "updated_at"])
    audit_add(action=audit, actor=actor, campaign=publication.campaign, provider=provider.name)
    return publication
