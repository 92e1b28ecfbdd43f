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

from django.db import IntegrityError, transaction
from django.db.models import QuerySet, Value
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
    """What ``worker_forget`` did: texts scrubbed, campaigns whose judgments were dropped."""

    worker: Worker
    already: bool = False
    texts: int = 0
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    reopened: int = 0


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
def worker_forget(*, worker: Worker, actor: str, campaign: Campaign | None = None) -> Forgotten:
    """Erase a worker's provider id and every text they wrote; apply each campaign's policy.

    Idempotent: a forgotten worker is left as is (and nothing is logged again). Under the
    worker's row lock: their open assignments end as returned (leases released), their
    situations and utterances, and the item payloads quoting them, read ``WITHDRAWN``; the
    audit log's and payments' texts lose the provider id; in every campaign they judged
    whose policy is ``drop`` they are soft-blocked with reason "withdrawn", so their
    judgments leave reports and exports and their items re-open (``items_reopen``).
    ``campaign`` is where the withdrawal was asked for (the audit entry names it).
    """
    locked = worker_lock(worker)
    if worker_is_forgotten(locked):
        worker.external_id = locked.external_id
        return Forgotten(worker=worker, already=True)
    old_id = locked.external_id
    done = Forgotten(worker=worker)
    for assignment in Assignment.objects.filter(worker=locked, status=Assignment.Status.ACCEPTED):
        assignment_set_status(assignment=assignment, status=Assignment.Status.RETURNED)
    leases_release(Lease.objects.filter(worker=locked))
    done.texts = _texts_scrub(locked)
    marker = FORGOTTEN + locked.pseudonym
    Worker.objects.filter(pk=locked.pk).update(external_id=marker)
    worker.external_id = marker
    for model, column in (
        (AuditLog, "detail"),
        (WorkerBlock, "reason"),
    ):
        id_replace(model.objects.filter(worker=locked), column, old_id, marker)
    # The apps above erase it from their rows too (recruitment: the payments' texts).
    signals.worker_forgotten.send(Worker, worker=locked, old_id=old_id, marker=marker)
    done.reopened = _judgments_policy(locked, done)
    audit_add(
        action=AuditLog.Action.FORGET,
        actor=actor,
        campaign=campaign,
        provider=locked.provider,
        worker=locked,
        detail=(
            f"withdrawal: provider id and {done.texts} texts erased; judgments kept in "
            f"{', '.join(done.kept) or 'no campaign'}, dropped in "
            f"{', '.join(done.dropped) or 'no campaign'}; {done.reopened} item slots re-opened"
        ),
    )
    return done


def id_replace(rows: QuerySet[Any], column: str, old_id: str, marker: str) -> int:
    """Replace ``old_id`` with ``marker`` in the text ``column`` of ``rows`` (a forgotten
    worker's provider id in the texts that quote it); return how many rows changed."""
    return rows.filter(**{f"{column}__contains": old_id}).update(
        **{column: Replace(column, Value(old_id), Value(marker))}
    )


def _texts_scrub(worker: Worker) -> int:
    """Replace the worker's situations and utterances, and their quotes in item payloads of
    the dialogues they wrote in, their answers in their own words (a protocol's
    ``text_questions``) and the comment of their closing ratings of a chat, with
    ``WITHDRAWN``; return how many texts were replaced."""
    utterances = Utterance.objects.filter(worker=worker)
    situations = Situation.objects.filter(worker=worker)
    texts = set(utterances.values_list("text", flat=True)) | set(
        situations.values_list("text", flat=True)
    )
    texts.discard(WITHDRAWN)
    keys = set(
        Dialogue.objects.filter(utterances__worker=worker).values_list("key", flat=True)
    ) | set(Dialogue.objects.filter(situation__worker=worker).values_list("key", flat=True))
    count = utterances.exclude(text=WITHDRAWN).update(text=WITHDRAWN, signals={})
    count += situations.exclude(text=WITHDRAWN).update(text=WITHDRAWN, signals={}, author="")
    count += _answers_scrub(worker)
    if texts and keys:
        # Chat turns become items (a bot turn's context, human SSA's turns): the payload
        # names its conversation as ``example``.
        for item in Item.objects.filter(payload__example__in=sorted(keys)).order_by("pk"):
            payload = _scrubbed(item.payload, texts)
            if payload != item.payload:
                Item.objects.filter(pk=item.pk).update(payload=payload)
    return count


def _answers_scrub(worker: Worker) -> int:
    """Erase the worker's written answers: text questions' judgments, closing comments."""
    count = 0
    campaigns = Campaign.objects.filter(items__judgments__worker=worker).distinct()
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
    rated = Dialogue.objects.filter(seats__worker=worker).distinct()
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


def _judgments_policy(worker: Worker, done: Forgotten) -> int:
    """Keep or drop the worker's judgments in each campaign by its ``withdrawal`` policy;
    return the item slots re-opened. Dropping soft-blocks them there with the reason
    "withdrawn" (also when quality control had blocked them), which re-opens their items."""
    reopened = 0
    campaigns = Campaign.objects.filter(items__judgments__worker=worker).distinct().order_by("pk")
    for campaign in campaigns:
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


def worker_block_record(*, worker: Worker, reason: str, actor: str) -> tuple[WorkerBlock, bool]:
    """Record a researcher's block of the worker (recruitment's ``worker_block`` tells the
    provider first); return it and whether it is new (one active block per worker: a
    concurrent second one returns the first)."""
    try:
        with transaction.atomic():
            block = WorkerBlock.objects.create(worker=worker, reason=reason, actor=actor[:150])
    except IntegrityError:
        return WorkerBlock.objects.get(worker=worker, lifted_at=None), False
    return block, True


def worker_block_lift(*, block: WorkerBlock, actor: str) -> None:
    """Record that ``block`` was lifted, now, by ``actor``."""
    block.lifted_at = timezone.now()
    block.lifted_by = actor[:150]
    block.save(update_fields=["lifted_at", "lifted_by"])
