"""LLM judges: a registered model answers a campaign's own questions, and its answers are stored
as the judgments of a model rater, apart from the crowd.

``judge_start`` checks the request, creates the judge's rater(s) and assignment(s) and a
``GenerationJob`` (progress: items settled of items to judge) whose task,
``annotation.judges.tasks.judge_job_run``, runs on the ``inference`` queue. The job's
examples are the prompts, each with what the runner needs (item, rater, presentation, mode,
attempts) under the key ``judge``. ``judge_job_run`` works through them in batches:

- ``json`` mode (any backend, e.g. ``openai_http``): the model is asked for one JSON object;
  its reply is stored as a Generation (``generations_ensure``: once per model, prompt and
  decoding, so a re-run calls the model for nothing it already answered). A reply that is not
  a valid answer is refused with its reason and asked again, the model seeing its reply and
  the reason, up to ``attempts`` times; then the item is recorded as a failure in the job's
  ``error``. Never guessed.
- ``choice`` mode (backends that score, e.g. ``hf_local``): for each question, each allowed
  answer is scored as the reply (its total log-likelihood given the prompt) and the best is
  taken (constrained choice); a tie at the top is a failure.

Answers are validated by the protocol's ``clean_answers`` like a worker's and stored as
``Judgment`` rows under the rater's own Assignment (unique per item, rater and question: a
re-run stores nothing twice). No crowd counter moves: items' ``judged``/``claims``, the
tallies, quality control and payments never see a model rater, and the crowd's reports and
exports leave them out (``selectors.model_raters``).

A/B items are asked in both orders by default (two raters, ``…/ab`` and ``…/ba``, each
storing the order it was shown as its presentation), so the report can measure position bias.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Value
from django.db.models.functions import Greatest
from django.utils import timezone, translation

from annotation.exceptions import InvalidParameters
from annotation.judges.parse import (
    Refused,
    answers_clean,
    choice_best,
    correction,
    reply_json,
)
from annotation.judges.prompts import (
    JudgeTemplate,
    choice_request,
    item_questions,
    json_request,
    prompt_render,
    template_default,
)
from annotation.models import Assignment, Campaign, Item, Judgment, Worker
from annotation.protocols import LiveChat, registry
from annotation.protocols.base import Protocol, Question
from modelhub.backends import Backend, Example
from modelhub.models import GenerationJob, ModelEndpoint
from modelhub.services import endpoint_backend, generations_ensure

MODES = ("json", "choice")
MAX_ATTEMPTS = 5
MAX_BATCH = 256
LABEL_PREFIX = "judge:"
# Assignment.items_target is a small integer; a judge's assignment is a record, not a HIT.
_MOST_ITEMS = 32_767
ORDERS = {"ab": ["a", "b"], "ba": ["b", "a"]}
_FAILURES_SHOWN = 50


def judge_name(*, endpoint: ModelEndpoint, template: JudgeTemplate, mode: str) -> str:
    """Return the judge's name (its rater id without the order): model, template version and
    mode, e.g. ``gpt-judge@likert-v1:json``."""
    return f"{endpoint.name}@{template.version}:{mode}"


def _rater(name: str, order: str | None) -> Worker:
    worker, _ = Worker.objects.get_or_create(
        provider=Worker.Provider.MODEL, external_id=name + (f"/{order}" if order else "")
    )
    return worker


def _assignment(campaign: Campaign, worker: Worker, n_items: int) -> Assignment:
    """Return the rater's one assignment in the campaign, made once (approved at once: a
    model's work is neither reviewed nor paid)."""
    now = timezone.now()
    assignment, _ = Assignment.objects.get_or_create(
        campaign=campaign,
        provider_assignment_id=f"judge-{worker.pk}",
        defaults={
            "worker": worker,
            "status": Assignment.Status.APPROVED,
            "items_target": max(1, min(n_items, _MOST_ITEMS)),
            "submitted_at": now,
            "reviewed_at": now,
            "review_feedback": "LLM judge: a model rater, never reviewed or paid.",
        },
    )
    return assignment


@dataclass(frozen=True)
class JudgeRequest:
    """What ``judge_check`` found: the protocol, parameters, template, mode and items."""

    protocol: Protocol
    parameters: dict[str, Any]
    template: JudgeTemplate
    mode: str
    attempts: int
    items: list[Item]


def judge_check(
    *,
    campaign: Campaign,
    endpoint: ModelEndpoint,
    template: JudgeTemplate | None,
    mode: str | None,
    attempts: int,
    batch_size: int,
) -> JudgeRequest:
    """Check a judge request; raise InvalidParameters saying what is wrong."""
    protocol = registry.get(campaign.protocol)
    if isinstance(protocol, LiveChat):
        raise InvalidParameters(f"{protocol.title}: a live chat's items are made by chatting.")
    template = template or template_default(protocol)
    backend = endpoint_backend(endpoint)
    mode = mode or ("choice" if backend.can_score else "json")
    if mode not in MODES:
        raise InvalidParameters(f"Unknown judge mode {mode!r}; use {' or '.join(MODES)}.")
    if mode == "choice" and not backend.can_score:
        raise InvalidParameters(
            f"The {endpoint.backend} backend cannot score answers; use mode 'json'."
        )
    if not 1 <= attempts <= MAX_ATTEMPTS:
        raise InvalidParameters(f"attempts must be from 1 to {MAX_ATTEMPTS}.")
    if not 1 <= batch_size <= MAX_BATCH:
        raise InvalidParameters(f"batch_size must be from 1 to {MAX_BATCH}.")
    items = list(Item.objects.filter(campaign=campaign, gold__isnull=True).order_by("pk"))
    if not items:
        raise InvalidParameters(f"Campaign '{campaign.slug}' has no items to judge.")
    parameters = protocol.clean_parameters(campaign.parameters)
    return JudgeRequest(protocol, parameters, template, mode, attempts, items)


def judge_start(
    *,
    campaign: Campaign,
    endpoint: ModelEndpoint,
    template: JudgeTemplate | None = None,
    mode: str | None = None,
    both_orders: bool = True,
    attempts: int = 3,
    batch_size: int = 16,
) -> GenerationJob:
    """Start judging every non-gold item of ``campaign`` with ``endpoint``; return the job.

    ``mode`` defaults to ``choice`` for a backend that scores and ``json`` otherwise. An
    unfinished job of the same judge and campaign is returned instead of a second one; a
    finished judge started again adds nothing (its runner skips items already judged).
    """
    request = judge_check(
        campaign=campaign,
        endpoint=endpoint,
        template=template,
        mode=mode,
        attempts=attempts,
        batch_size=batch_size,
    )
    name = judge_name(endpoint=endpoint, template=request.template, mode=request.mode)
    label = f"{LABEL_PREFIX}{campaign.slug}:{name}"
    with transaction.atomic():
        # The endpoint's row lock orders concurrent starts: the second sees the first's job.
        ModelEndpoint.objects.select_for_update().filter(pk=endpoint.pk).exists()
        running = (
            GenerationJob.objects.filter(endpoint=endpoint, label=label)
            .exclude(status__in=[GenerationJob.Status.DONE, GenerationJob.Status.FAILED])
            .first()
        )
        if running is not None:
            return running
        examples = _units(campaign, request, name, both_orders)
        job = GenerationJob.objects.create(
            endpoint=endpoint,
            examples=examples,
            label=label,
            total=len(examples),
            batch_size=batch_size,
        )
        transaction.on_commit(lambda: judge_job_enqueue(job.pk))
    return job


def judge_job_enqueue(job_id: int) -> None:
    """Queue a judge job's task (modelhub's ``generation_job_retry`` comes here for a judge's
    job: ``annotation.apps`` registers it for the label prefix)."""
    from annotation.judges.tasks import QUEUE
    from annotation.judges.tasks import judge_job_run as task

    task.apply_async(args=[job_id], queue=QUEUE)


def _units(
    campaign: Campaign, request: JudgeRequest, name: str, both_orders: bool
) -> list[dict[str, Any]]:
    """Return one example per item and order shown: its first prompt and its ``judge`` data."""
    protocol, parameters = request.protocol, request.parameters
    raters: dict[str | None, tuple[Worker, Assignment]] = {}

    def rater(order: str | None) -> tuple[Worker, Assignment]:
        if order not in raters:
            worker = _rater(name, order)
            raters[order] = (worker, _assignment(campaign, worker, len(request.items)))
        return raters[order]

    units = []
    with translation.override("en"):  # the judge reads the published (English) wording
        for item in request.items:
            shown = protocol.presentation(parameters, item.payload, f"{name}:{item.key}")
            orders: list[str | None] = [None]
            if both_orders and "order" in shown:
                orders = list(ORDERS)
            questions = item_questions(protocol, parameters, item.payload)
            for order in orders:
                presentation = shown | ({"order": ORDERS[order]} if order else {})
                worker, assignment = rater(order)
                prompt = prompt_render(
                    request.template,
                    campaign_instructions=campaign.instructions,
                    protocol=protocol,
                    parameters=parameters,
                    payload=item.payload,
                    presentation=presentation,
                    questions=questions,
                )
                if request.mode == "json":
                    prompt += json_request(questions)
                units.append(
                    {
                        "turns": [prompt],
                        "reference": None,
                        "judge": {
                            "item": item.pk,
                            "worker": worker.pk,
                            "assignment": assignment.pk,
                            "presentation": presentation,
                            "mode": request.mode,
                            "attempts": request.attempts,
                        },
                    }
                )
    return units


# -- running --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    """One item as one rater is shown it, and its first prompt."""

    index: int
    item: Item
    worker_id: int
    assignment_id: int
    presentation: dict[str, Any]
    prompt: str
    questions: list[Question]
    mode: str
    attempts: int


def _units_load(
    job: GenerationJob, protocol: Protocol, parameters: Mapping[str, Any]
) -> list[_Unit]:
    data = [e["judge"] for e in job.examples]
    items = Item.objects.in_bulk([d["item"] for d in data])
    units = []
    with translation.override("en"):
        for index, (example, d) in enumerate(zip(job.examples, data, strict=True)):
            item = items.get(d["item"])
            if item is None:
                continue  # items are never deleted while judged; nothing to judge if one was
            units.append(
                _Unit(
                    index=index,
                    item=item,
                    worker_id=int(d["worker"]),
                    assignment_id=int(d["assignment"]),
                    presentation=dict(d["presentation"]),
                    prompt=str(example["turns"][0]),
                    questions=item_questions(protocol, parameters, item.payload),
                    mode=str(d["mode"]),
                    attempts=int(d["attempts"]),
                )
            )
    return units


def judge_job_run(*, job_id: int, start: int = 0, budget_s: float = 240.0) -> int | None:
    """Judge the job's units from ``start`` on, a batch per transaction, until done or
    ``budget_s`` is used; return where the next run starts, or None when the job is finished.

    Idempotent: a unit whose rater already judged the item is skipped, replies already stored
    are not asked again, and judgments are unique per item, rater and question. Backend errors
    propagate to the task (which marks the job failed).
    """
    job = GenerationJob.objects.select_related("endpoint").filter(pk=job_id).first()
    if job is None or job.status in (GenerationJob.Status.DONE, GenerationJob.Status.FAILED):
        return None
    if not job.label.startswith(LABEL_PREFIX):
        raise ValueError(f"generation job {job_id} is not a judge's job")
    campaign = (
        Campaign.objects.filter(items__pk=job.examples[0]["judge"]["item"]).first()
        if job.examples
        else None
    )
    GenerationJob.objects.filter(pk=job.pk).update(
        status=GenerationJob.Status.RUNNING,
        started_at=job.started_at or timezone.now(),
        attempts=job.attempts + 1,
    )
    if campaign is None:
        _job_finish(job)
        return None
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    units = [u for u in _units_load(job, protocol, parameters) if u.index >= start]
    judged = set(
        Judgment.objects.filter(
            item__campaign=campaign, worker__in={u.worker_id for u in units}
        ).values_list("item", "worker")
    )
    deadline = time.monotonic() + budget_s
    backend = endpoint_backend(job.endpoint)
    for offset in range(0, len(units), job.batch_size):
        batch = units[offset : offset + job.batch_size]
        todo = [u for u in batch if (u.item.pk, u.worker_id) not in judged]
        began = time.monotonic()
        if todo and todo[0].mode == "json":
            answers, refused = _json_batch(job.endpoint, protocol, parameters, todo)
        elif todo:
            answers, refused = _choice_batch(backend, protocol, parameters, todo)
        else:
            answers, refused = {}, {}
        spent_ms = int((time.monotonic() - began) * 1000 / max(1, len(todo)))
        position = batch[-1].index + 1
        with transaction.atomic():
            _answers_store(todo, answers, spent_ms)
            GenerationJob.objects.filter(pk=job.pk).update(done=Greatest("done", Value(position)))
        failures = [
            f"{u.item.key}{_order(u)}: {refused[u.index]}" for u in todo if u.index in refused
        ]
        if failures:
            _failures_note(job, failures)
        if position < job.total and time.monotonic() > deadline:
            return position  # at least one batch per run, so every run makes progress
    _job_finish(job)
    return None


def _order(unit: _Unit) -> str:
    order = unit.presentation.get("order")
    return f" [{''.join(order)}]" if isinstance(order, list) else ""


def _json_batch(
    endpoint: ModelEndpoint,
    protocol: Protocol,
    parameters: Mapping[str, Any],
    units: Sequence[_Unit],
) -> tuple[dict[int, dict[str, Any]], dict[int, str]]:
    """Ask for JSON answers; ask again (with the reply and the reason) up to each unit's
    attempts; return the cleaned answers and the last reason of each unit refused."""
    contexts = {u.index: [u.prompt] for u in units}
    by_index = {u.index: u for u in units}
    answers: dict[int, dict[str, Any]] = {}
    refused: dict[int, str] = {}
    pending = [u.index for u in units]
    attempt = 0
    while pending:
        attempt += 1
        replies = generations_ensure(
            endpoint=endpoint, examples=[Example(turns=tuple(contexts[i])) for i in pending]
        )
        again = []
        for i, reply in zip(pending, replies, strict=True):
            unit = by_index[i]
            try:
                answers[i] = answers_clean(protocol, parameters, unit.questions, reply_json(reply))
                refused.pop(i, None)
            except Refused as exc:
                refused[i] = f"refused after {attempt} attempt(s): {exc}"
                if attempt < unit.attempts:
                    contexts[i] += [reply, correction(str(exc), unit.questions)]
                    again.append(i)
        pending = again
    return answers, refused


def _choice_batch(
    backend: Backend,
    protocol: Protocol,
    parameters: Mapping[str, Any],
    units: Sequence[_Unit],
) -> tuple[dict[int, dict[str, Any]], dict[int, str]]:
    """Choose each answer by the log-likelihood of each allowed value (question by question,
    so a question asked only after another's answer sees it); return cleaned answers and the
    reason of each unit refused."""
    chosen: dict[int, dict[str, Any]] = {u.index: {} for u in units}
    refused: dict[int, str] = {}
    for position in range(max(len(u.questions) for u in units)):
        asks: list[tuple[_Unit, Question]] = []
        for u in units:
            if u.index in refused or position >= len(u.questions):
                continue
            q = u.questions[position]
            if q.only_if is None or chosen[u.index].get(q.only_if[0]) == q.only_if[1]:
                asks.append((u, q))
        examples = [
            Example(turns=(u.prompt + choice_request(q),)) for u, q in asks for _ in q.choices
        ]
        options = [value for _, q in asks for value, _ in q.choices]
        if not examples:
            continue
        scores = [s.total for s in backend.score(examples, options)]
        at = 0
        for u, q in asks:
            n = len(q.choices)
            try:
                chosen[u.index][q.key] = choice_best(scores[at : at + n], options[at : at + n])
            except Refused as exc:
                refused[u.index] = f"{q.key}: {exc}"
            at += n
    answers: dict[int, dict[str, Any]] = {}
    for u in units:
        if u.index in refused:
            continue
        try:
            answers[u.index] = answers_clean(protocol, parameters, u.questions, chosen[u.index])
        except Refused as exc:
            refused[u.index] = str(exc)
    return answers, refused


def _answers_store(
    units: Sequence[_Unit], answers: Mapping[int, Mapping[str, Any]], spent_ms: int
) -> int:
    """Store the answers as judgments (a row already stored is kept: first answer wins)."""
    rows = [
        Judgment(
            item=u.item,
            worker_id=u.worker_id,
            assignment_id=u.assignment_id,
            question=question,
            value=value,
            presentation=u.presentation,
            time_spent_ms=spent_ms,
        )
        for u in units
        if u.index in answers
        for question, value in answers[u.index].items()
    ]
    Judgment.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def _failures_note(job: GenerationJob, failures: list[str]) -> None:
    """Append failures to the job's error (the first ones in full, then a count)."""
    current = GenerationJob.objects.filter(pk=job.pk).values_list("error", flat=True).get()
    lines = [line for line in current.splitlines() if line] + failures
    GenerationJob.objects.filter(pk=job.pk).update(error="\n".join(lines)[:5000])


def _job_finish(job: GenerationJob) -> None:
    """Mark the job done (failures stay listed in its error) and recount the raters' items."""
    GenerationJob.objects.filter(pk=job.pk).update(
        status=GenerationJob.Status.DONE, done=job.total, finished_at=timezone.now()
    )
    assignments = {e["judge"]["assignment"] for e in job.examples}
    for assignment in Assignment.objects.filter(pk__in=assignments):
        items = assignment.judgments.values("item").distinct().count()
        Assignment.objects.filter(pk=assignment.pk).update(
            items_done=min(items, assignment.items_target)
        )


def judge_job_fail(*, job_id: int, error: str) -> None:
    """Mark the judge's job failed with its error (what it stored is kept)."""
    GenerationJob.objects.filter(pk=job_id).exclude(status=GenerationJob.Status.DONE).update(
        status=GenerationJob.Status.FAILED, error=error[:5000], finished_at=timezone.now()
    )
