"""Judgments: one worker's validated answers to one item, stored exactly once; and a model
rater's (an LLM judge's), stored apart from every crowd counter."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from annotation import quality
from annotation.allocation import (
    LEASE_GONE,
    item_claims,
    item_judged_unleased,
    lease_fulfil,
    leases_release,
)
from annotation.locks import assignment_lock, item_lock, item_lock_in
from annotation.models import Assignment, Campaign, Item, Judgment, Lease, Worker
from annotation.protocols import Protocol, registry
from annotation.services.assignments import _transition
from annotation.tallies import tally_add, tally_key, tally_upsert_sql
from evalsite.errors import Conflict, NotAllowed, NotFound


@dataclass(frozen=True)
class SubmitResult:
    """The outcome of a submission: the stored judgments and whether this call stored them."""

    judgments: list[Judgment]
    created: bool
    assignment_done: bool


# An assignment no longer open (submitted, reviewed, returned or abandoned) takes no answer.
CLOSED = gettext_noop(
    "This task is no longer open (it was finished, returned or timed out); your answers so far "
    "are saved."
)


def judgment_submit(
    *,
    assignment: Assignment,
    item_id: Any,
    answers: Mapping[str, Any],
    now: datetime | None = None,
) -> SubmitResult:
    """Validate and store one worker's answers to one item, in one transaction.

    Idempotent: the same answers sent again store nothing and succeed. Different answers to an
    item already answered are refused. The item's row lock serialises this with allocation,
    so an item never gets more judgments than the campaign's redundancy.
    """
    now = now or timezone.now()
    campaign = assignment.campaign
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    cleaned = protocol.clean_answers(parameters, answers)
    answered = Answered(protocol=protocol, parameters=parameters, values=cleaned, sent=answers)
    item_pk = _item_pk(item_id)
    if item_pk is None:
        raise NotFound(gettext("This item is not part of this study."))

    try:
        return _judgment_store(assignment, item_pk, answered, now)
    except IntegrityError:
        # Only a concurrent identical submission can get here; it stored the rows.
        return _judgment_store(assignment, item_pk, answered, now)


@dataclass(frozen=True)
class Answered:
    """Validated answers with the protocol and cleaned parameters that validated them."""

    protocol: Protocol
    parameters: dict[str, Any]
    values: dict[str, Any]
    sent: Mapping[str, Any]  # the answers as sent, for the protocol's checks against the item


def presentation_seed(*, item: Item, worker: Worker) -> str:
    """Return the seed of what this worker is shown of this item (stable, not guessable)."""
    return hashlib.sha256(f"{settings.SECRET_KEY}:{item.pk}:{worker.pk}".encode()).hexdigest()


def _item_pk(value: Any) -> int | None:
    """Return an item id sent as an integer or a string of digits; None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value > 0 else None
    text = value.strip() if isinstance(value, str) else ""
    if text.isascii() and text.isdigit() and len(text) <= 18:
        return int(text)
    return None


@transaction.atomic
def _judgment_store(
    assignment: Assignment, item_pk: int, answered: Answered, now: datetime
) -> SubmitResult:
    worker = assignment.worker
    locked_item = item_lock_in(assignment.campaign, item_pk, worker)
    if locked_item is None:
        raise NotFound(gettext("This item is not part of this study."))
    # A worker holding a lease on the item has not judged it (lease_fulfil deletes the lease
    # in the transaction that stores the judgments), so only a missing lease can mean that
    # the same answers were sent again.
    item, lease = locked_item
    if lease is None:
        existing = list(Judgment.objects.filter(item=item, worker=worker))
        if not existing:
            raise NotAllowed(
                gettext(
                    "This item is not held for you: it was not given to you, or your time for "
                    "it ran out and it went back to the pool. Please continue with the next item."
                )
            )
        if {j.question: j.value for j in existing} != answered.values:
            raise Conflict(gettext("You already answered this item; answers cannot be changed."))
        done = not Assignment.objects.filter(pk=assignment.pk, status="accepted").exists()
        return SubmitResult(judgments=existing, created=False, assignment_done=done)

    locked = _assignment_answering(assignment)
    if (
        lease.expires_at <= now
        and item_claims(item=item, now=now, exclude_worker=worker) >= locked.campaign.redundancy
    ):
        leases_release(Lease.objects.filter(pk=lease.pk))
        raise Conflict(
            gettext(
                "Your time for this item ran out and other workers have judged it; "
                "please continue with the next item."
            )
        )
    spent = max(0, int((now - lease.created_at).total_seconds() * 1000))
    judgments = _write(item, locked, answered, spent, lease, now)
    done = locked.items_done >= locked.items_target
    if done:
        _transition(locked, Assignment.Status.SUBMITTED, now)
    for field in ("status", "last_activity_at", "items_done", "submitted_at", "completion_code"):
        setattr(assignment, field, getattr(locked, field))
    return SubmitResult(judgments=judgments, created=True, assignment_done=done)


def _assignment_answering(assignment: Assignment) -> Assignment:
    """Lock the assignment an answer is stored under (after its item) and refuse the answer
    if the assignment is closed, the study not live, or a block or a soft block covers the
    worker here (``quality.exclusion_sql``, read with the lock in one statement)."""
    locked = assignment_lock(
        assignment, excluded=quality.exclusion_sql(assignment.campaign, "a.worker_id")
    )
    locked.campaign, locked.worker = assignment.campaign, assignment.worker  # already loaded
    if locked.status != Assignment.Status.ACCEPTED:
        raise NotAllowed(gettext(CLOSED))
    if not locked.campaign.is_live:
        raise NotAllowed(gettext("This study is not open at the moment."))
    if locked.excluded:  # type: ignore[attr-defined]
        raise NotAllowed(gettext("There are no more items for you in this study."))
    return locked


def _write(
    item: Item,
    assignment: Assignment,
    answered: Answered,
    spent: int,
    lease: Lease | None,
    now: datetime,
) -> list[Judgment]:
    """Check and store one worker's answers to ``item``: the one place judgments are written.

    The caller holds the item's and the open assignment's row locks (``_assignment_answering``:
    the worker is not blocked) and checked that the worker has not answered the item. Every
    answer passes the same checks: the worker took the campaign's minimum time, and the
    protocol accepts the answers for this item. The item's counters and the campaign's
    tallies change in the same transaction; an answer under a ``lease`` (a submission) ends
    the lease and counts the item in the assignment (``items_done``, ``last_activity_at``),
    a label in a chat (no lease) does not.
    """
    campaign, worker = assignment.campaign, assignment.worker
    quality.answer_time_check(campaign=campaign, spent_ms=spent)
    answered.protocol.check_item_answers(
        answered.parameters, item.payload, answered.sent, spent_ms=spent
    )
    shown = answered.protocol.presentation(
        answered.parameters, item.payload, presentation_seed(item=item, worker=worker)
    )
    judgments = [
        Judgment(
            item=item,
            worker=worker,
            assignment=assignment,
            question=question,
            value=value,
            presentation=shown,
            time_spent_ms=spent,
        )
        for question, value in answered.values.items()
    ]
    if lease is not None and _stored_in_one_statement(item, campaign):
        _answer_store(judgments, lease, now)
    else:
        _answer_write(judgments, lease, now)
    return judgments


def _answer_write(judgments: list[Judgment], lease: Lease | None, now: datetime) -> None:
    """Store an answer's ``judgments`` and count them, one write at a time (the general path
    of ``_write``; ``_answer_store`` is the same in one statement)."""
    Judgment.objects.bulk_create(judgments)
    first = judgments[0]
    item, assignment, worker = first.item, first.assignment, first.worker
    campaign = assignment.campaign
    stored_at = first.created_at  # the stored time, as a scan of the rows would see
    if lease is not None:
        lease_fulfil(lease=lease, item=item)
    else:
        item_judged_unleased(item=item)
    if item.is_gold:
        quality.gold_record(campaign=campaign, worker=worker)
    else:
        tally_add(
            campaign_id=campaign.pk,
            worker_id=worker.pk,
            level=_level(item, campaign),
            judgments=len(judgments),
            now=stored_at,
        )
    if lease is not None:
        assignment.last_activity_at = now
        assignment.items_done += 1
        assignment.save(update_fields=["last_activity_at", "items_done"])


def _stored_in_one_statement(item: Item, campaign: Campaign) -> bool:
    """Whether an answer takes ``_ANSWER_STORE``'s one statement: on PostgreSQL, for a
    non-gold item (a gold answer goes to ``quality.gold_record``) of a campaign that never
    re-opened items (whose tally level is then a count, ``_level``)."""
    return connection.vendor == "postgresql" and not item.is_gold and not campaign.topup_reopened


# An answer's writes in one statement (PostgreSQL), as the general path of ``_write`` makes
# them one by one: the lease's end and the item's ``judged + 1`` (``allocation.lease_fulfil``),
# the judgments (the unique constraint on item, worker and question still refuses a second
# copy: IntegrityError, as from ``bulk_create``), the pair's tally at the item's new level
# (``tallies.tally_add``), the assignment's ``items_done + 1``. Nothing is written if the
# lease is gone (swept): no row comes back, and the caller rolls the answer back.
_ANSWER_STORE = """
WITH gone AS (DELETE FROM {lease} WHERE id = %s RETURNING id),
stored AS (
    INSERT INTO {judgment} (item_id, worker_id, assignment_id, question, value, presentation,
                            time_spent_ms, created_at)
    SELECT %s, %s, %s, q.question, q.value, %s::jsonb, %s, %s
    FROM unnest(%s::varchar[], %s::jsonb[]) AS q(question, value)
    WHERE EXISTS (SELECT 1 FROM gone)
    RETURNING id, question
),
judged AS (
    UPDATE {item} SET judged = judged + 1 WHERE id = %s AND EXISTS (SELECT 1 FROM gone)
    RETURNING judged
),
tallied AS ({tally}),
counted AS (
    UPDATE {assignment} SET items_done = items_done + 1, last_activity_at = %s
    WHERE id = %s AND EXISTS (SELECT 1 FROM gone) RETURNING items_done
)
SELECT judged.judged, counted.items_done,
       ARRAY(SELECT question FROM stored), ARRAY(SELECT id FROM stored)
FROM judged, counted
"""


def _answer_store(judgments: list[Judgment], lease: Lease, now: datetime) -> None:
    """Store an answer's ``judgments`` (unsaved, of one item, worker and assignment) under
    ``lease`` in ``_ANSWER_STORE``'s one statement, setting their ids and the item's and the
    assignment's counts; raise Conflict if the lease was released meanwhile, as
    ``lease_fulfil`` does."""
    first, stored_at = judgments[0], timezone.now()
    item, assignment = first.item, first.assignment
    sql = _ANSWER_STORE.format(
        lease=Lease._meta.db_table,
        judgment=Judgment._meta.db_table,
        item=Item._meta.db_table,
        assignment=Assignment._meta.db_table,
        tally=tally_upsert_sql("SELECT %s, %s, %s, judged, 1, %s, %s, %s FROM judged"),
    )
    adapt = connection.ops.adapt_datetimefield_value
    at = adapt(stored_at)
    hour, shard = tally_key(first.worker_id, stored_at)
    params: list[Any] = [lease.pk, item.pk, first.worker_id, assignment.pk]
    params += [json.dumps(first.presentation), first.time_spent_ms, at]
    params += [[j.question for j in judgments], [json.dumps(j.value) for j in judgments]]
    params += [item.pk, assignment.campaign_id, hour, shard, len(judgments), at, at]
    params += [adapt(now), assignment.pk]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        raise Conflict(LEASE_GONE)
    item.judged, assignment.items_done, assignment.last_activity_at = row[0], row[1], now
    ids = dict(zip(row[2], row[3], strict=True))
    for judgment in judgments:
        judgment.pk = ids[judgment.question]
        judgment.created_at = stored_at
        judgment._state.adding = False


def _level(item: Item, campaign: Campaign) -> int:
    """How many workers have judged the item, for the tallies. ``judged`` counts the workers
    who still count; after a top-up re-opened items the tallies' level is every worker's, as
    a scan of the rows counts them (one query, only in a campaign that has re-opened items)."""
    if not campaign.topup_reopened:
        return item.judged
    return (
        Judgment.objects.filter(item=item)
        .exclude(worker__provider=Worker.Provider.MODEL)  # LLM judges are no level
        .values("worker")
        .distinct()
        .count()
    )


def judgment_label(
    *,
    assignment: Assignment,
    item: Item,
    answers: Mapping[str, Any],
    shown_at: datetime,
    now: datetime | None = None,
) -> SubmitResult:
    """Store a worker's answers to an item they were shown outside allocation (a live chat's
    bot turn, labeled as the chat goes on); idempotent like ``judgment_submit``.

    The caller checked that the worker may label this item now (their chat); the answers pass
    every check a submitted answer passes. The time spent counts from ``shown_at``.
    """
    now = now or timezone.now()
    protocol = registry.get(assignment.campaign.protocol)
    parameters = protocol.clean_parameters(assignment.campaign.parameters)
    cleaned = protocol.clean_answers(parameters, answers)
    answered = Answered(protocol=protocol, parameters=parameters, values=cleaned, sent=answers)
    with transaction.atomic():
        locked_item = item_lock(item)
        existing = list(Judgment.objects.filter(item=locked_item, worker=assignment.worker))
        if existing:
            if {j.question: j.value for j in existing} != cleaned:
                raise Conflict(gettext("You already labeled this turn; labels cannot be changed."))
            return SubmitResult(judgments=existing, created=False, assignment_done=False)
        locked = _assignment_answering(assignment)
        spent = max(0, int((now - shown_at).total_seconds() * 1000))
        judgments = _write(locked_item, locked, answered, spent, None, now)
    return SubmitResult(judgments=judgments, created=True, assignment_done=False)


@dataclass(frozen=True)
class ModelAnswer:
    """A model rater's answers to one item, as it was shown the item, under the rater's
    assignment (``assignment_model_rater_get``)."""

    assignment: Assignment
    item: Item
    values: Mapping[str, Any]  # cleaned by the protocol's clean_answers, as a worker's are
    presentation: Mapping[str, Any]
    time_spent_ms: int


@transaction.atomic
def judgments_store_model(*, answers: Sequence[ModelAnswer]) -> None:
    """Store model raters' answers (an LLM judge's) as judgments, all or nothing, in the
    order given.

    Idempotent under the unique (item, worker, question) constraint: a row already stored is
    kept (the first answer wins), so a re-run or a redelivered task stores nothing twice.
    Nothing of the crowd's moves: no lease, no item counter, no tally, no quality check, no
    payment (docs/modelhub.md, "Judges"). Raise NotAllowed for an assignment that is not a
    model rater's and NotFound for an item outside its assignment's campaign.
    """
    for answer in answers:
        if answer.assignment.worker.provider != Worker.Provider.MODEL:
            raise NotAllowed(
                gettext("Assignment %(assignment)s is not a model rater's.")
                % {"assignment": answer.assignment.pk}
            )
        if answer.item.campaign_id != answer.assignment.campaign_id:
            raise NotFound(
                gettext("Item '%(item)s' is not in its assignment's campaign.")
                % {"item": answer.item.key}
            )
    Judgment.objects.bulk_create(
        [
            Judgment(
                item=answer.item,
                worker=answer.assignment.worker,
                assignment=answer.assignment,
                question=question,
                value=value,
                presentation=dict(answer.presentation),
                time_spent_ms=answer.time_spent_ms,
            )
            for answer in answers
            for question, value in answer.values.items()
        ],
        ignore_conflicts=True,
    )
