"""LLM judges: a registered model answers a campaign's own questions, and its answers are stored
as the judgments of a model rater, apart from the crowd.

A judge runs as a modelhub job of kind ``judge``: ``judge_start`` checks the request, gets the
judge's rater(s) and assignment(s) from the core's services and starts the job
(``modelhub.jobs.job_start``; progress: items settled of items to judge). modelhub's one job
task, on the ``inference`` queue, runs it with ``judge_job_run``, the runner ``annotation.apps``
registers for the kind. The job's examples are the prompts, each with what the runner needs
(item, rater, presentation, mode, attempts) under the key ``judge``. ``judge_job_run`` works
through them in batches:

- ``json`` mode (any backend, e.g. ``openai_http``): the model is asked for one JSON object;
  its reply is stored as a Generation (``generations_ensure``: once per model, prompt and
  decoding, so a re-run calls the model for nothing it already answered). A reply that is not
  a valid answer is refused with its reason and asked again, the model seeing its reply and
  the reason, up to ``attempts`` times; then the item is recorded as a failure in the job's
  ``error``. Never guessed.
- ``choice`` mode (backends that score, e.g. ``hf_local``): for each question, each allowed
  answer is scored as the reply (its total log-likelihood given the prompt) and the best is
  taken (constrained choice); a tie at the top is a failure.

Answers are validated by the protocol's ``clean_answers`` like a worker's and stored by the
core's judgment service for a model rater (``judgments_store_model``) under the rater's own
Assignment (unique per item, rater and question: a re-run stores nothing twice). No crowd
counter moves: items' ``judged``/``claims``, the tallies, quality control and payments never
see a model rater, and the crowd's reports and exports leave them out
(``selectors.model_raters``). This module writes no row itself: the core's services write the
raters, assignments and judgments, and modelhub's the job.

A/B items are asked in both orders by default (two raters, ``…/ab`` and ``…/ba``, each
storing the order it was shown as its presentation), so the report can measure position bias.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import translation

from annotation.models import Assignment, Campaign, Item, Judgment, Worker
from annotation.protocols import LiveChat, registry
from annotation.protocols.base import Protocol, Question
from annotation.services.assignments import (
    assignment_model_rater_get,
    assignment_model_rater_recount,
)
from annotation.services.judgments import ModelAnswer, judgments_store_model
from annotation.services.workers import worker_model_rater_get
from evalsite.errors import InvalidParameters
from judges.parse import (
    Refused,
    answers_clean,
    choice_best,
    correction,
    reply_json,
)
from judges.prompts import (
    JudgeTemplate,
    choice_request,
    item_questions,
    json_request,
    prompt_render,
    template_default,
)
from modelhub.backends import Backend, Example
from modelhub.jobs import (
    job_begin,
    job_finish,
    job_note,
    job_progress,
    job_start,
    job_unfinished,
)
from modelhub.models import GenerationJob, ModelEndpoint
from modelhub.services import endpoint_backend, generations_ensure

MODES = ("json", "choice")
MAX_ATTEMPTS = 5
MAX_BATCH = 256
LABEL_PREFIX = "judge:"  # a judge job's label: judge:<campaign>:<judge>
ORDERS = {"ab": ["a", "b"], "ba": ["b", "a"]}


def judge_name(*, endpoint: ModelEndpoint, template: JudgeTemplate, mode: str) -> str:
    """Return the judge's name (its rater id without the order): model, template version and
    mode, e.g. ``gpt-judge@likert-v1:json``."""
    return f"{endpoint.name}@{template.version}:{mode}"


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
        # Under the endpoint's row lock: a concurrent start of this judge sees this one's job.
        running = job_unfinished(endpoint=endpoint, kind=GenerationJob.Kind.JUDGE, label=label)
        if running is not None:
            return running
        return job_start(
            endpoint=endpoint,
            kind=GenerationJob.Kind.JUDGE,
            examples=_units(campaign, request, name, both_orders),
            label=label,
            batch_size=batch_size,
        )


def _units(
    campaign: Campaign, request: JudgeRequest, name: str, both_orders: bool
) -> list[dict[str, Any]]:
    """Return one example per item and order shown: its first prompt and its ``judge`` data."""
    protocol, parameters = request.protocol, request.parameters
    raters: dict[str | None, tuple[Worker, Assignment]] = {}

    def rater(order: str | None) -> tuple[Worker, Assignment]:
        if order not in raters:
            worker = worker_model_rater_get(name=name + (f"/{order}" if order else ""))
            assignment = assignment_model_rater_get(
                campaign=campaign, worker=worker, items=len(request.items)
            )
            raters[order] = (worker, assignment)
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
    The runner of ``judge`` jobs (registered in ``annotation.apps``).

    Idempotent: a unit whose rater already judged the item is skipped, replies already stored
    are not asked again, and judgments are unique per item, rater and question. Backend errors
    propagate to the task (which marks the job failed).
    """
    job = job_begin(job_id=job_id, kind=GenerationJob.Kind.JUDGE)
    if job is None:
        return None
    campaign = (
        Campaign.objects.filter(items__pk=job.examples[0]["judge"]["item"]).first()
        if job.examples
        else None
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
            job_progress(job=job, done=position)
        failures = [
            f"{u.item.key}{_order(u)}: {refused[u.index]}" for u in todo if u.index in refused
        ]
        if failures:
            job_note(job=job, lines=failures)
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
) -> None:
    """Store the answers through the core's judgment service for model raters (a row
    already stored is kept: first answer wins)."""
    answered = [u for u in units if u.index in answers]
    assignments = Assignment.objects.select_related("worker").in_bulk(
        {u.assignment_id for u in answered}
    )
    judgments_store_model(
        answers=[
            ModelAnswer(
                assignment=assignments[u.assignment_id],
                item=u.item,
                values=answers[u.index],
                presentation=u.presentation,
                time_spent_ms=spent_ms,
            )
            for u in answered
        ]
    )


def _job_finish(job: GenerationJob) -> None:
    """Mark the job done (failures stay listed in its error) and recount the raters' items."""
    job_finish(job=job, done=job.total)
    assignments = {e["judge"]["assignment"] for e in job.examples}
    for assignment in Assignment.objects.select_related("worker").filter(pk__in=assignments):
        assignment_model_rater_recount(assignment=assignment)
