"""Training: the one write path of training items, attempts, answers and qualifications.

A campaign with training items asks each worker, after consent and before any item, to answer
them one at a time; after each answer the worker sees whether it was what was expected, the
expected answer and the researcher's explanation. An attempt ends after the last item: passed
when the share answered as expected reaches ``Campaign.training_pass_mark``. A worker has
``training_attempts`` attempts (at least 2); passing grants the campaign's qualification, which
every campaign of the same owner naming it honours (the worker skips its training). Failing
every attempt ends politely: no assignment, no rejection (docs/protocols.md, "Training").
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from annotation.locks import campaign_lock, worker_lock
from annotation.models import (
    Campaign,
    Qualification,
    TrainingAnswer,
    TrainingAttempt,
    TrainingItem,
    Worker,
)
from annotation.protocols import GoldChecks, LiveChat, registry
from annotation.protocols.base import Protocol
from annotation.services.visits import worker_get_or_create
from evalsite.errors import Conflict, InvalidAnswer, InvalidParameters, NotAllowed
from providers import Arrival

EXPLANATION_MAX = 5_000


def _trainable(campaign: Campaign) -> GoldChecks:
    protocol = registry.get(campaign.protocol)
    if isinstance(protocol, LiveChat) or not isinstance(protocol, GoldChecks):
        raise InvalidParameters(f"{protocol.title} has no training: its answers cannot be checked.")
    if not protocol.questions(protocol.clean_parameters(campaign.parameters)):
        raise InvalidParameters(
            f"{protocol.title} draws its own answer form; training is not offered for it yet."
        )
    return protocol


def training_items_clean(
    *,
    campaign: Campaign,
    items: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any], str]],
) -> dict[str, tuple[dict[str, Any], dict[str, list[Any]], str]]:
    """Return key → (payload, expected answers, explanation) as they would be stored; raise
    InvalidParameters naming the first bad training item (validated like gold items: the
    protocol cleans the payload and the expected answers). Reads nothing but the protocol."""
    protocol = _trainable(campaign)
    parameters = protocol.clean_parameters(campaign.parameters)
    batch: dict[str, tuple[dict[str, Any], dict[str, list[Any]], str]] = {}
    for n, (key, payload, expected, explanation) in enumerate(items, start=1):
        if not isinstance(key, str) or not 0 < len(key) <= 200:
            raise InvalidParameters(f"Training item {n}: the key must be 1–200 characters.")
        if key in batch:
            raise InvalidParameters(f"Training item {n}: the key {key!r} appears twice.")
        if not isinstance(explanation, str) or len(explanation) > EXPLANATION_MAX:
            raise InvalidParameters(
                f"Training item {n} ({key}): the explanation must be text of at most "
                f"{EXPLANATION_MAX:,} characters."
            )
        if "\x00" in explanation:
            raise InvalidParameters(f"Training item {n} ({key}): the explanation has a NUL.")
        try:
            answers: Any = expected  # clean_gold checks that it is a mapping
            batch[key] = (
                protocol.clean_item(payload),
                protocol.clean_gold(parameters, answers),
                explanation.replace("\r\n", "\n"),
            )
        except InvalidParameters as exc:
            raise InvalidParameters(f"Training item {n} ({key}): {exc.message}") from None
    return batch


@transaction.atomic
def training_items_add(
    *,
    campaign: Campaign,
    items: Iterable[tuple[str, Mapping[str, Any], Mapping[str, Any], str]],
) -> int:
    """Add training items (key, payload, expected answers, explanation); return how many are
    new. All or nothing, naming the bad item (``training_items_clean``); a repeated import
    adds nothing, the same key with other content is refused. Items keep the order given,
    after those already there."""
    batch = training_items_clean(campaign=campaign, items=items)
    locked = campaign_lock(campaign)
    existing = {
        key: (payload, expected, explanation)
        for key, payload, expected, explanation in TrainingItem.objects.filter(
            campaign=locked, key__in=list(batch)
        ).values_list("key", "payload", "expected", "explanation")
    }
    changed = sorted(k for k, v in existing.items() if v != batch[k])
    if changed:
        raise Conflict(
            f"{len(changed)} training key(s) already exist with other content, e.g. {changed[0]!r}."
        )
    last = TrainingItem.objects.filter(campaign=locked).aggregate(m=Max("position"))["m"] or 0
    new = [
        TrainingItem(
            campaign=locked, key=k, position=last + i, payload=p, expected=e, explanation=x
        )
        for i, (k, (p, e, x)) in enumerate(
            ((k, v) for k, v in batch.items() if k not in existing), start=1
        )
    ]
    TrainingItem.objects.bulk_create(new)
    locked.training_size = TrainingItem.objects.filter(campaign=locked).count()
    locked.save(update_fields=["training_size", "updated_at"])
    campaign.training_size = locked.training_size
    return len(new)


def _qualified(campaign: Campaign, workers: Any) -> bool:
    return Qualification.objects.filter(
        owner=campaign.owner_id, name=campaign.qualification, worker__in=workers
    ).exists()


def training_pending(*, campaign: Campaign, arrival: Arrival) -> bool:
    """Whether the arriving worker must still pass the training before any item (no query
    when the campaign has none). Reads only."""
    if not campaign.training_size or arrival.preview:
        return False
    workers = Worker.objects.filter(provider=arrival.provider, external_id=arrival.worker_id)
    return not _qualified(campaign, workers)


@dataclass(frozen=True)
class Feedback:
    """What the worker is told after a training answer."""

    item: TrainingItem
    correct: bool
    # Per checked question: (its short name, the answer's label, as expected, the expected
    # answers' labels joined by "or").
    rows: list[tuple[str, str, bool, str]]


@dataclass(frozen=True)
class TrainingState:
    """Where a worker is in a campaign's training."""

    item: TrainingItem | None  # the next item to answer; None between or after attempts
    attempt: int  # the attempt under way or, between attempts, the next one
    attempts: int  # attempts the campaign allows
    position: int  # the item's position in the attempt, from 1
    size: int
    passed: bool = False
    failed: bool = False  # every attempt used and none passed
    last: TrainingAttempt | None = None  # the last finished attempt
    shown: dict[str, Any] = field(default_factory=dict)


def _seed(item: TrainingItem, worker: Worker) -> str:
    return hashlib.sha256(f"{settings.SECRET_KEY}:t{item.pk}:{worker.pk}".encode()).hexdigest()


def training_presentation(*, item: TrainingItem, worker: Worker) -> dict[str, Any]:
    """Return what this worker is shown of this training item (e.g. the A/B order)."""
    protocol = registry.get(item.campaign.protocol)
    parameters = protocol.clean_parameters(item.campaign.parameters)
    return protocol.presentation(parameters, item.payload, _seed(item, worker))


def training_state(*, campaign: Campaign, worker: Worker, again: bool = False) -> TrainingState:
    """Return the worker's place in the training: the next item, or the outcome. Between
    attempts there is no item until the worker asks to start ``again``."""
    items = list(TrainingItem.objects.filter(campaign=campaign).order_by("position"))
    size, allowed = len(items), campaign.training_attempts
    if _qualified(campaign, [worker]):
        return TrainingState(None, 0, allowed, 0, size, passed=True)
    attempts = list(TrainingAttempt.objects.filter(campaign=campaign, worker=worker))
    attempts.sort(key=lambda a: a.number)
    finished = [a for a in attempts if a.passed is not None]
    last = finished[-1] if finished else None
    current = next((a for a in attempts if a.passed is None), None)
    if current is None:
        if len(attempts) >= allowed:
            return TrainingState(None, len(attempts), allowed, 0, size, failed=True, last=last)
        if last is not None and not again:  # between attempts: the worker starts the next
            return TrainingState(None, len(attempts) + 1, allowed, 0, size, last=last)
        number, done = len(attempts) + 1, set()
    else:
        number = current.number
        done = set(TrainingAnswer.objects.filter(attempt=current).values_list("item", flat=True))
    upcoming = [item for item in items if item.pk not in done]
    if not upcoming:
        return TrainingState(None, number, allowed, 0, size, last=last)
    item = upcoming[0]
    shown = training_presentation(item=item, worker=worker)
    return TrainingState(item, number, allowed, len(done) + 1, size, last=last, shown=shown)


# The short names feedback gives questions without one (from their keys), for translation.
QUESTION_NAMES = (
    gettext_noop("Sensible"),
    gettext_noop("Specific"),
    gettext_noop("Choice"),
    gettext_noop("Label"),
)


def _labels(protocol: Protocol, parameters: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    return {q.key: dict(q.choices) for q in protocol.questions(parameters)}


def _feedback(
    protocol: GoldChecks,
    parameters: Mapping[str, Any],
    item: TrainingItem,
    raw: Mapping[str, Any],
    cleaned: Mapping[str, Any],
    shown: Mapping[str, Any],
) -> Feedback:
    """Say, per question, what the worker answered, whether it was expected, and which of the
    form's answers are expected (found by checking each choice, as it would be stored)."""
    labels = _labels(protocol, parameters)
    questions = protocol.questions(parameters)
    rows = []
    for q in questions:
        if q.key not in item.expected:
            continue
        accepted = {q.key: item.expected[q.key]}
        answer = str(raw.get(q.key, ""))
        right = protocol.gold_correct(accepted, cleaned, shown)
        good = []
        for value, label in q.choices:
            trial = dict(raw) | {q.key: value}
            if q.only_if is not None:  # the question is asked only after that answer
                trial[q.only_if[0]] = q.only_if[1]
            for other in questions:  # and follow-ups not asked after this answer go
                if other.only_if is not None and trial.get(other.only_if[0]) != other.only_if[1]:
                    trial.pop(other.key, None)
            try:
                stored = protocol.clean_answers(parameters, trial)
            except InvalidAnswer:
                continue
            if protocol.gold_correct(accepted, stored, shown):
                good.append(label)
        # In the page's language: the published names and labels are translated.
        name = gettext(q.help) if q.help else gettext(q.key.replace("_", " ").capitalize())
        given = labels[q.key].get(answer)
        shown_label = gettext(given) if given is not None else gettext("no answer")
        expected = gettext(" or ").join(gettext(g) for g in good)
        rows.append((name, shown_label, right, expected))
    correct = protocol.gold_correct(item.expected, cleaned, shown)
    return Feedback(item=item, correct=correct, rows=rows)


@dataclass(frozen=True)
class TrainingResult:
    """The feedback on one answer and, after the attempt's last item, its outcome."""

    feedback: Feedback
    attempt: TrainingAttempt
    finished: bool  # this answer ended the attempt
    passed: bool
    attempts_left: int


@transaction.atomic
def training_answer(
    *,
    campaign: Campaign,
    arrival: Arrival,
    item_id: Any,
    answers: Mapping[str, Any],
    now: datetime | None = None,
) -> TrainingResult:
    """Store the worker's answer to the training item on their screen and return feedback.

    The caller has verified the arrival. Under the worker's row lock: the item must be the
    next of the attempt under way (a second send of the same answer returns the first one's
    feedback and stores nothing); a bad answer raises InvalidAnswer and stores nothing.
    """
    now = now or timezone.now()
    protocol = _trainable(campaign)
    parameters = protocol.clean_parameters(campaign.parameters)
    worker = worker_get_or_create(provider=arrival.provider, external_id=arrival.worker_id)
    worker = worker_lock(worker)
    if _qualified(campaign, [worker]):
        raise Conflict(gettext("You have passed the training already: go on to the study."))
    item = _training_item(campaign, item_id)
    attempts = list(TrainingAttempt.objects.filter(campaign=campaign, worker=worker))
    current = next((a for a in attempts if a.passed is None), None)
    if current is None:
        last = max(attempts, key=lambda a: a.number, default=None)
        repeat = TrainingAnswer.objects.filter(attempt=last, item=item).first() if last else None
        if last is not None and repeat is not None and item.position == _last_position(campaign):
            return _result(protocol, parameters, campaign, last, repeat, worker)
        if len(attempts) >= campaign.training_attempts:
            raise NotAllowed(gettext("You have used every attempt at the training."))
        current = TrainingAttempt.objects.create(
            campaign=campaign, worker=worker, number=len(attempts) + 1, started_at=now
        )
    repeat = TrainingAnswer.objects.filter(attempt=current, item=item).first()
    if repeat is not None:  # sent twice: the same feedback, nothing stored
        return _result(protocol, parameters, campaign, current, repeat, worker)
    done = set(TrainingAnswer.objects.filter(attempt=current).values_list("item", flat=True))
    upcoming = TrainingItem.objects.filter(campaign=campaign).exclude(pk__in=done)
    if upcoming.order_by("position").values_list("pk", flat=True).first() != item.pk:
        raise Conflict(
            gettext("This is not the training item on your screen now; reload the page.")
        )
    cleaned = protocol.clean_answers(parameters, answers)
    shown = training_presentation(item=item, worker=worker)
    feedback = _feedback(protocol, parameters, item, answers, cleaned, shown)
    TrainingAnswer.objects.create(
        attempt=current, item=item, answers=dict(answers), correct=feedback.correct, answered_at=now
    )
    _attempt_count(campaign, current, worker, correct=feedback.correct, now=now)
    return TrainingResult(
        feedback=feedback,
        attempt=current,
        finished=current.passed is not None,
        passed=bool(current.passed),
        attempts_left=campaign.training_attempts - current.number,
    )


def _training_item(campaign: Campaign, item_id: Any) -> TrainingItem:
    """Return the campaign's training item the page sent (its id as a number or text)."""
    item = TrainingItem.objects.filter(
        campaign=campaign, pk=item_id if isinstance(item_id, int) else _int(item_id)
    ).first()
    if item is None:
        raise InvalidAnswer(gettext("This is not one of the study's training items."))
    return item


def _attempt_count(
    campaign: Campaign, attempt: TrainingAttempt, worker: Worker, *, correct: bool, now: datetime
) -> None:
    """Count an answer in the attempt; after its last item, mark it passed or failed, and
    give the worker who passed the campaign's qualification. The caller holds the worker's
    row lock."""
    attempt.answered += 1
    attempt.correct += int(correct)
    if attempt.answered >= campaign.training_size:
        attempt.passed = attempt.correct >= campaign.training_pass_mark * attempt.answered - 1e-9
        attempt.finished_at = now
        if attempt.passed:
            Qualification.objects.get_or_create(
                owner=campaign.owner,
                name=campaign.qualification,
                worker=worker,
                defaults={"campaign": campaign, "granted_at": now},
            )
    attempt.save(update_fields=["answered", "correct", "passed", "finished_at"])


def _int(value: Any) -> int:
    text = value.strip() if isinstance(value, str) else ""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else 0


def _last_position(campaign: Campaign) -> int:
    return TrainingItem.objects.filter(campaign=campaign).aggregate(m=Max("position"))["m"] or 0


def _result(
    protocol: GoldChecks,
    parameters: Mapping[str, Any],
    campaign: Campaign,
    attempt: TrainingAttempt,
    answer: TrainingAnswer,
    worker: Worker,
) -> TrainingResult:
    """The result of an answer already stored (a repeated send)."""
    shown = training_presentation(item=answer.item, worker=worker)
    cleaned = protocol.clean_answers(parameters, answer.answers)
    feedback = _feedback(protocol, parameters, answer.item, answer.answers, cleaned, shown)
    return TrainingResult(
        feedback=feedback,
        attempt=attempt,
        finished=attempt.passed is not None and answer.item.position == _last_position(campaign),
        passed=bool(attempt.passed),
        attempts_left=campaign.training_attempts - attempt.number,
    )
