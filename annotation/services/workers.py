"""Workers: an LLM judge's model rater, and withdrawal and erasure (the right to be
forgotten).

A Worker row cannot be deleted (judgments, assignments, payments, seats, situations and
utterances PROTECT it), so erasure scrubs instead: the provider id becomes a marker no link
can carry, every text the worker wrote becomes ``WITHDRAWN``, and each campaign keeps or drops
their judgments by its stated policy (``Campaign.withdrawal``). Payment amounts and the audit
trail stay, with the provider id taken out of their texts. docs/protocols.md, "Withdrawal".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet, Value
from django.db.models.functions import Replace
from django.utils import timezone

from annotation import signals
from annotation.allocation import items_reopen, leases_release
from annotation.locks import worker_lock
from annotation.models import (
    Assignment,
    AuditLog,
    Campaign,
    Dialogue,
    Item,
    Judgment,
    Lease,
    Situation,
    Utterance,
    Worker,
    WorkerBlock,
)
from annotation.protocols import registry
from annotation.quality import worker_soft_block
from annotation.services.assignments import assignment_set_status
from annotation.services.audit import audit_add
from evalsite.errors import InvalidParameters

# What replaces every text a withdrawn worker wrote.
WITHDRAWN = "[withdrawn]"
# The provider id of a forgotten worker: "/" is refused in ids from links (providers'
# clean_id), so nobody can arrive as a forgotten worker.
FORGOTTEN = "forgotten/"


@dataclass
class Forgotten:
    """What ``worker_forget`` did: texts scrubbed, campaigns whose judgments were dropped,
    every campaign it reached or whose items quoted the worker (``campaigns``)."""

    worker: Worker
    already: bool = False
    texts: int = 0
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    reopened: int = 0
    campaigns: list[int] = field(default_factory=list)


def worker_model_rater_get(*, name: str) -> Worker:
    """Return the model rater called ``name`` (an LLM judge, ``Worker.Provider.MODEL``),
    created once: the same judge always rates as the same worker.

    A model rater arrives by no link and is seen by no crowd read, counter, tally, check or
    payment (docs/modelhub.md, "Judges")."""
    longest = Worker._meta.get_field("external_id").max_length or 0
    if not name or len(name) > longest:
        raise InvalidParameters(f"A model rater's name must be 1 to {longest} characters.")
    worker, _ = Worker.objects.get_or_create(provider=Worker.Provider.MODEL, external_id=name)
    return worker


def worker_is_forgotten(worker: Worker) -> bool:
    """Tell whether the worker was erased (their provider id is the marker)."""
    return worker.external_id.startswith(FORGOTTEN)


@transaction.atomic
def worker_forget(
    *,
    worker: Worker,
    actor: str,
    campaign: Campaign | None = None,
    scope: QuerySet[Campaign] | None = None,
) -> Forgotten:
    """Erase a worker's provider id and every text they wrote; apply each campaign's policy.

    ``scope``: the campaigns a researcher may act on (dashboard, API); None (the ``forget``
    command, the worker's own withdrawal) is every campaign. The provider id is erased only
    when every campaign the worker took part in is reached: others still know them by it.

    Idempotent: a forgotten worker is left as is (and nothing is logged again). Under the
    worker's row lock: their open assignments end as returned (leases released), their
    situations and utterances, and the item payloads quoting them (ACUTE-Eval's
    conversations too, in any campaign), read ``WITHDRAWN``; the audit log's and payments'
    texts lose the provider id; in every campaign they judged whose policy is ``drop`` they
    are soft-blocked with reason "withdrawn", so their judgments leave reports and exports
    and their items re-open (``items_reopen``). Every campaign reached gets an audit entry;
    ``campaign`` is where the withdrawal was asked for (the first entry names it).
    """
    locked = worker_lock(worker)
    if worker_is_forgotten(locked):
        worker.external_id = locked.external_id
        return Forgotten(worker=worker, already=True)
    old_id = locked.external_id
    done = Forgotten(worker=worker)
    taken = _campaigns_of(locked)
    reached = taken if scope is None else taken & set(scope.values_list("pk", flat=True))
    everywhere = reached == taken
    for assignment in Assignment.objects.filter(
        worker=locked, status=Assignment.Status.ACCEPTED, campaign__in=reached
    ):
        assignment_set_status(assignment=assignment, status=Assignment.Status.RETURNED)
    leases_release(Lease.objects.filter(worker=locked, item__campaign__in=reached))
    done.texts, quoting = _texts_scrub(locked, reached)
    marker = _id_erase(locked, worker) if everywhere else old_id
    done.reopened = _judgments_policy(locked, done, reached)
    done.campaigns = sorted(reached | quoting)
    # The apps above erase it from their rows too (recruitment: the payments' texts;
    # dashboard: the reports and exports of these campaigns; webhooks: the payloads sent).
    signals.worker_forgotten.send(
        Worker, worker=locked, old_id=old_id, marker=marker, campaigns=done.campaigns
    )
    detail = (
        f"withdrawal: {'provider id and ' if everywhere else ''}{done.texts} texts erased"
        f"{'' if everywhere else ' in ' + str(len(reached)) + ' campaigns of ' + actor}; "
        f"judgments kept in {', '.join(done.kept) or 'no campaign'}, dropped in "
        f"{', '.join(done.dropped) or 'no campaign'}; {done.reopened} item slots re-opened"
    )
    _forget_audit(
        locked,
        done,
        campaign if campaign and campaign.pk in reached else None,
        asked=campaign,
        actor=actor,
        detail=detail,
    )
    return done


def _id_erase(locked: Worker, worker: Worker) -> str:
    """Replace the worker's provider id with its marker, in their row and in the texts of the
    core's rows that quote it; return the marker."""
    old_id, marker = locked.external_id, FORGOTTEN + locked.pseudonym
    Worker.objects.filter(pk=locked.pk).update(external_id=marker)
    worker.external_id = marker
    for model, column in ((AuditLog, "detail"), (WorkerBlock, "reason")):
        id_replace(model.objects.filter(worker=locked), column, old_id, marker)
    return marker


def _forget_audit(
    locked: Worker,
    done: Forgotten,
    first: Campaign | None,
    *,
    asked: Campaign | None,
    actor: str,
    detail: str,
) -> None:
    """One FORGET entry in every campaign the forget reached, ``first`` (where it was asked)
    first; a worker who took part nowhere still gets one entry, where it was ``asked``."""
    head = [first] if first is not None else []
    others = Campaign.objects.filter(pk__in=done.campaigns).exclude(pk__in=[c.pk for c in head])
    targets: list[Campaign | None] = [*head, *others.order_by("pk")] or [asked]
    for affected in targets:
        audit_add(
            action=AuditLog.Action.FORGET,
            actor=actor,
            campaign=affected,
            provider=locked.provider,
            worker=locked,
            detail=detail,
        )


def id_replace(rows: QuerySet[Any], column: str, old_id: str, marker: str) -> int:
    """Replace ``old_id`` with ``marker`` in the text ``column`` of ``rows`` (a forgotten
    worker's provider id in the texts that quote it); return how many rows changed."""
    if old_id == marker:  # a forget that did not reach every campaign keeps the id
        return 0
    return rows.filter(**{f"{column}__contains": old_id}).update(
        **{column: Replace(column, Value(old_id), Value(marker))}
    )


def _campaigns_of(worker: Worker) -> set[int]:
    """The campaigns the worker took part in: assigned, judged, chatted or wrote in."""
    return (
        set(Assignment.objects.filter(worker=worker).values_list("campaign_id", flat=True))
        | set(Judgment.objects.filter(worker=worker).values_list("item__campaign_id", flat=True))
        | set(
            Utterance.objects.filter(worker=worker, dialogue__campaign__isnull=False).values_list(
                "dialogue__campaign_id", flat=True
            )
        )
        | set(
            Situation.objects.filter(worker=worker, campaign__isnull=False).values_list(
                "campaign_id", flat=True
            )
        )
    )


def _texts_scrub(worker: Worker, campaigns: set[int]) -> tuple[int, set[int]]:
    """Replace the worker's situations and utterances in ``campaigns``, and their quotes in
    item payloads (of any campaign) of the dialogues they wrote in, their answers in their
    own words (a protocol's ``text_questions``) and the comment of their closing ratings of
    a chat, with ``WITHDRAWN``; return how many texts were replaced, and the campaigns of the
    items that quoted them.

    The items are redacted, not retired: the judgments made on them stay valid (the
    comparison was made) and keep their item, only the worker's words leave."""
    utterances = Utterance.objects.filter(worker=worker, dialogue__campaign__in=campaigns)
    situations = Situation.objects.filter(worker=worker, campaign__in=campaigns)
    texts = set(utterances.values_list("text", flat=True)) | set(
        situations.values_list("text", flat=True)
    )
    texts.discard(WITHDRAWN)
    dialogues = Dialogue.objects.filter(campaign__in=campaigns).filter(
        Q(utterances__worker=worker) | Q(situation__worker=worker)
    )
    keys = set(dialogues.values_list("key", flat=True))
    # ACUTE-Eval names a conversation "<campaign slug>/<dialogue key>" (items_acute).
    names = {f"{slug}/{key}" for slug, key in dialogues.values_list("campaign__slug", "key")}
    count = utterances.exclude(text=WITHDRAWN).update(text=WITHDRAWN, signals={})
    count += situations.exclude(text=WITHDRAWN).update(text=WITHDRAWN, signals={}, author="")
    count += _answers_scrub(worker, campaigns)
    quoting: set[int] = set()
    if texts and keys:
        # Chat turns become items: a bot turn's context and human SSA's turns name their
        # conversation as ``example``, an ACUTE-Eval pair as ``dialogue_a``/``dialogue_b``.
        items = Item.objects.filter(
            Q(payload__example__in=sorted(keys))
            | Q(payload__dialogue_a__in=sorted(names))
            | Q(payload__dialogue_b__in=sorted(names))
        )
        for item in items.order_by("pk"):
            payload = _scrubbed(item.payload, texts)
            if payload != item.payload:
                Item.objects.filter(pk=item.pk).update(payload=payload)
                quoting.add(item.campaign_id)
    return count, quoting


def _answers_scrub(worker: Worker, reached: set[int]) -> int:
    """Erase the worker's written answers in ``reached``: text questions' judgments, closing
    comments."""
    count = 0
    campaigns = Campaign.objects.filter(pk__in=reached)
    for campaign_id, protocol in campaigns.values_list("pk", "protocol"):
        questions = registry.get(protocol).text_questions
        if questions:
            count += (
                Judgment.objects.filter(
                    worker=worker, item__campaign_id=campaign_id, question__in=questions
                )
                .exclude(value=WITHDRAWN)
                .update(value=WITHDRAWN)
            )
    # A bot chat's closing ratings are in its dialogue; its seats (chat's rows, reached by
    # their relation's name, never imported) say whose.
    rated = Dialogue.objects.filter(seats__worker=worker, campaign__in=reached).distinct()
    for dialogue in rated.order_by("pk"):
        ratings = dialogue.metadata.get("ratings")
        if isinstance(ratings, dict) and ratings.get("comment") not in (None, "", WITHDRAWN):
            dialogue.metadata = {**dialogue.metadata, "ratings": {**ratings, "comment": WITHDRAWN}}
            dialogue.save(update_fields=["metadata"])
            count += 1
    return count


def _scrubbed(value: Any, texts: set[str]) -> Any:
    """Return ``value`` (JSON) with every string that is one of ``texts`` replaced."""
    if isinstance(value, str):
        return WITHDRAWN if value in texts else value
    if isinstance(value, list):
        return [_scrubbed(v, texts) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v, texts) for k, v in value.items()}
    return value


def _judgments_policy(worker: Worker, done: Forgotten, reached: set[int]) -> int:
    """Keep or drop the worker's judgments in each campaign of ``reached`` by its
    ``withdrawal`` policy; return the item slots re-opened. Dropping soft-blocks them there
    with the reason "withdrawn" (also when quality control had blocked them), which re-opens
    their items."""
    reopened = 0
    campaigns = Campaign.objects.filter(pk__in=reached, items__judgments__worker=worker)
    for campaign in campaigns.distinct().order_by("pk"):
        if campaign.withdrawal != Campaign.Withdrawal.DROP:
            done.kept.append(campaign.slug)
            continue
        done.dropped.append(campaign.slug)
        before = Campaign.objects.values_list("topup_reopened", flat=True).get(pk=campaign.pk)
        worker_soft_block(
            campaign=campaign, worker=worker, reason=f"withdrawn {timezone.now():%Y-%m-%d}"
        )
        items_reopen(campaign=campaign, worker=worker)  # a recount: nothing twice
        after = Campaign.objects.values_list("topup_reopened", flat=True).get(pk=campaign.pk)
        reopened += after - before
    return reopened


def worker_block_record(
    *, worker: Worker, owner: User | None, reason: str, actor: str
) -> tuple[WorkerBlock, bool]:
    """Record a block of the worker from ``owner``'s studies (None: from every study, an
    admin's) and write it to each affected campaign's audit log (``block_campaigns``);
    return the block and whether it is new. Recruitment's ``worker_block`` tells the
    provider first. One active block per worker and scope: a concurrent second one returns
    the first."""
    try:
        with transaction.atomic():
            block = WorkerBlock.objects.create(
                worker=worker, owner=owner, reason=reason, actor=actor[:150]
            )
            _block_audit(block, AuditLog.Action.BLOCK, actor, reason)
    except IntegrityError:
        return WorkerBlock.objects.get(worker=worker, owner=owner, lifted_at=None), False
    return block, True


@transaction.atomic
def worker_block_lift(*, block: WorkerBlock, actor: str, reason: str = "") -> None:
    """Record that ``block`` was lifted, now, by ``actor``, in each affected campaign's
    audit log as its block was."""
    block.lifted_at = timezone.now()
    block.lifted_by = actor[:150]
    block.save(update_fields=["lifted_at", "lifted_by"])
    _block_audit(block, AuditLog.Action.UNBLOCK, actor, reason)


def block_campaigns(block: WorkerBlock) -> QuerySet[Campaign]:
    """Return the campaigns the block affects: those the worker took part in (an assignment
    or a participation), of the block's owner, or every owner's for a global block."""
    worker = block.worker
    campaigns = Campaign.objects.filter(
        Q(pk__in=Assignment.objects.filter(worker=worker).values("campaign_id"))
        | Q(pk__in=worker.participations.values("campaign_id"))
    )
    if block.owner_id is not None:
        campaigns = campaigns.filter(owner_id=block.owner_id)
    return campaigns.order_by("pk")


def _block_audit(block: WorkerBlock, action: str, actor: str, reason: str) -> None:
    """One audit line per affected campaign, so each researcher sees in their own log what
    changed for their studies; one without a campaign when none is affected (yet)."""
    scope = f"{block.owner.get_username()}'s studies" if block.owner else "every study"
    detail = f"{reason} ({scope})" if reason else f"({scope})"
    campaigns: list[Campaign | None] = [*block_campaigns(block)] or [None]
    for campaign in campaigns:
        audit_add(
            action=action,
            actor=actor,
            campaign=campaign,
            provider=block.worker.provider,
            worker=block.worker,
            detail=detail,
        )
