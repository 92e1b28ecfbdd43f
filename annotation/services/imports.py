"""Imports: judgments collected elsewhere (MTurk, Prolific, a long file) stored as if
collected here, through the one function ``judgments_import``.

Each real worker becomes one Worker (the provider's id stored as the provider adapters store
it, shown only as the pseudonym), each unit of work one Assignment (its provider ids and
status), each answer a Judgment validated by the protocol's ``clean_answers`` exactly like a
worker's. The same invariants as a submission hold: the unique constraints, the items'
``judged``/``claims`` counters (``allocation.items_judged_imported``), the campaign's tallies
(``tallies.tallies_add``), all in one transaction under the items' row locks. A second
import of the same file stores nothing; a judgment that differs from the stored one is
refused, naming the line.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from annotation.allocation import items_judged_imported
from annotation.locks import assignments_lock_by_provider_ids, items_lock
from annotation.models import Assignment, Campaign, Item, Judgment, Lease, Worker
from annotation.protocols import registry
from annotation.services.items import items_add
from annotation.services.visits import worker_get_or_create
from annotation.tallies import tallies_add
from corpora.judgments import Answer, Work
from evalsite.errors import Conflict, InvalidAnswer, InvalidParameters, NotFound
from providers.base import clean_id

# Assignment.items_target and items_done are small integers.
_MOST_ITEMS = 32_767


@dataclass(frozen=True)
class Imported:
    """What an import stored: judgment rows, (item, worker) pairs, workers (and how many of
    them new to the site), assignments and items created, and pairs already stored."""

    judgments: int
    pairs: int
    workers: int
    new_workers: int
    assignments: int
    items: int
    already: int


@dataclass(frozen=True)
class _Pair:
    work: Work
    answer: Answer
    values: dict[str, Any]


def _where(source: str, line: int) -> str:
    return f"{source}, line {line}"


def _answers_clean(campaign: Campaign, works: Sequence[Work], source: str) -> list[_Pair]:
    """Validate every answer with the protocol, as a worker's; refuse a worker answering
    one item twice and ids no provider would send."""
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    pairs: list[_Pair] = []
    seen: dict[tuple[str, str, str], int] = {}
    for work in works:
        where = _where(source, work.line)
        if work.provider not in Worker.Provider.values:
            raise InvalidParameters(f"{where}: unknown provider {work.provider!r}.")
        if work.provider == Worker.Provider.MODEL:  # a judge's answers come from `judge`
            raise InvalidParameters(
                f"{where}: provider 'model' is the LLM judges'; import people's judgments, "
                "or run the judge with the judge command."
            )
        try:
            clean_id(work.worker, "worker id")
            if work.assignment:
                clean_id(work.assignment, "assignment id")
        except InvalidParameters as exc:
            raise InvalidParameters(
                f"{where}: {exc.message.replace(' in this link', '')}"
            ) from None
        if len(work.answers) > _MOST_ITEMS:
            raise InvalidParameters(f"{where}: more than {_MOST_ITEMS:,} items in one assignment.")
        for answer in work.answers:
            at = _where(source, answer.line)
            key = (work.provider, work.worker, answer.item)
            if key in seen:
                raise InvalidParameters(
                    f"{at}: {work.worker} answered {answer.item!r} already on line {seen[key]}."
                )
            seen[key] = answer.line
            try:
                values = protocol.clean_answers(parameters, answer.answers)
            except InvalidAnswer as exc:
                fields = "; ".join(f"{k}: {v}" for k, v in exc.fields.items())
                raise InvalidAnswer(
                    f"{at}: item {answer.item!r}: {exc.message}"
                    + (f" ({fields})" if fields else ""),
                    fields=exc.fields,
                ) from None
            pairs.append(_Pair(work, answer, values))
    return pairs


def _items_locked(campaign: Campaign, keys: Sequence[str]) -> dict[str, Item]:
    """Return the campaign's items by key, locked in id order (as allocation locks them)."""
    ids: list[int] = []
    unique = sorted(set(keys))
    for start in range(0, len(unique), 1000):
        ids += Item.objects.filter(
            campaign=campaign, key__in=unique[start : start + 1000]
        ).values_list("pk", flat=True)
    return {item.key: item for item in items_lock(ids)}


def _assignment_id(work: Work) -> str:
    """Return the work's provider assignment id, or a stable one for a worker of a file
    that has none (a long file, a Prolific export without submission ids)."""
    if work.assignment:
        return work.assignment
    digest = hashlib.sha256(f"{work.provider}:{work.worker}".encode()).hexdigest()[:24]
    return f"import-{digest}"


@transaction.atomic
def judgments_import(
    *,
    campaign: Campaign,
    works: Sequence[Work],
    source: str = "the file",
    items: Sequence[tuple[str, dict[str, Any]]] = (),
    now: datetime | None = None,
) -> Imported:
    """Store judgments collected elsewhere, all or nothing; return what was stored.

    ``works`` come from ``datasets.judgments.read_judgments``; ``source`` names the file in
    errors, which name its line. ``items`` (key, payload) are added first through
    ``items_add`` (items created from the file's columns); every answered item must then be
    one of the campaign's items, not a gold check. Answers pass the protocol's
    ``clean_answers``; a worker's answers already stored identically are skipped, different
    ones refused. Items may end with more judging workers than the redundancy (they then
    close to allocation). Holds the campaign's answered items' row locks until the commit.
    """
    now = now or timezone.now()
    pairs = _answers_clean(campaign, works, source)
    created_items = items_add(campaign=campaign, items=items) if items else 0
    by_key = _items_locked(campaign, [p.answer.item for p in pairs])
    _items_check(campaign, pairs, by_key, source)
    before = Worker.objects.count()
    workers = {
        (w.provider, w.worker): worker_get_or_create(provider=w.provider, external_id=w.worker)
        for w in works
    }
    new_workers = Worker.objects.count() - before
    fresh = _fresh(campaign, pairs, by_key, workers, source)
    assignments, created = _assignments(campaign, fresh, workers, source, now)
    stored = Judgment.objects.bulk_create(
        [
            Judgment(
                item=by_key[p.answer.item],
                worker=workers[(p.work.provider, p.work.worker)],
                assignment=assignments[_assignment_id(p.work)],
                question=question,
                value=value,
                presentation=p.answer.presentation,
                time_spent_ms=round((p.answer.seconds or 0) * 1000),
            )
            for p in fresh
            for question, value in p.values.items()
        ],
        batch_size=1000,
    )
    _count(campaign, stored, by_key)
    return Imported(
        judgments=len(stored),
        pairs=len(fresh),
        workers=len(workers),
        new_workers=new_workers,
        assignments=created,
        items=created_items,
        already=len(pairs) - len(fresh),
    )


def _items_check(
    campaign: Campaign, pairs: list[_Pair], by_key: dict[str, Item], source: str
) -> None:
    """Refuse an answer to an item the campaign does not have, or to a gold check."""
    for pair in pairs:
        item = by_key.get(pair.answer.item)
        where = _where(source, pair.answer.line)
        if item is None:
            raise NotFound(f"{where}: no item {pair.answer.item!r} in {campaign.slug}.")
        if item.is_gold:
            raise InvalidParameters(f"{where}: {pair.answer.item!r} is a gold check.")


def _fresh(
    campaign: Campaign,
    pairs: list[_Pair],
    by_key: dict[str, Item],
    workers: dict[tuple[str, str], Worker],
    source: str,
) -> list[_Pair]:
    """Return the pairs not stored yet; refuse one stored with other answers, or one whose
    worker holds a lease on the item (a live study's worker judging it now)."""
    item_ids = [i.pk for i in by_key.values()]
    worker_ids = [w.pk for w in workers.values()]
    stored: dict[tuple[int, int], dict[str, Any]] = defaultdict(dict)
    leased: set[tuple[int, int]] = set()
    for start in range(0, len(item_ids), 1000):
        chunk = item_ids[start : start + 1000]
        rows = Judgment.objects.filter(item_id__in=chunk, worker_id__in=worker_ids)
        for item_id, worker_id, question, value in rows.values_list(
            "item_id", "worker_id", "question", "value"
        ):
            stored[(item_id, worker_id)][question] = value
        leased |= set(
            Lease.objects.filter(item_id__in=chunk, worker_id__in=worker_ids).values_list(
                "item_id", "worker_id"
            )
        )
    fresh = []
    for pair in pairs:
        key = (by_key[pair.answer.item].pk, workers[(pair.work.provider, pair.work.worker)].pk)
        where = _where(source, pair.answer.line)
        if key in leased:
            raise Conflict(
                f"{where}: {pair.work.worker} holds {pair.answer.item!r} in this study now."
            )
        if key not in stored:
            fresh.append(pair)
        elif stored[key] != pair.values:
            raise Conflict(
                f"{where}: {pair.work.worker}'s answers to {pair.answer.item!r} are stored "
                f"already, and differ: {stored[key]} here, {pair.values} in the file."
            )
    return fresh


def _assignments(
    campaign: Campaign,
    fresh: list[_Pair],
    workers: dict[tuple[str, str], Worker],
    source: str,
    now: datetime,
) -> tuple[dict[str, Assignment], int]:
    """Return the assignment of every unit of work with new answers: created with the
    provider's ids and status, or the one an earlier import created (its counts grown)."""
    new: dict[str, tuple[Work, int]] = {}
    for pair in fresh:
        work, count = new.get(_assignment_id(pair.work), (pair.work, 0))
        new[_assignment_id(pair.work)] = (work, count + 1)
    existing = {
        a.provider_assignment_id: a for a in assignments_lock_by_provider_ids(campaign, new)
    }
    result: dict[str, Assignment] = {}
    created = 0
    for pid, (work, count) in new.items():
        worker = workers[(work.provider, work.worker)]
        assignment = existing.get(pid)
        if assignment is None:
            reviewed = now if work.status in ("approved", "rejected") else None
            result[pid] = Assignment.objects.create(
                campaign=campaign,
                worker=worker,
                provider_assignment_id=pid,
                provider_hit_id=work.hit,
                status=work.status,
                items_target=count,
                submitted_at=now,
                reviewed_at=reviewed,
                review_feedback="Imported." if reviewed else "",
            )
            Assignment.objects.filter(pk=result[pid].pk).update(items_done=count)
            created += 1
            continue
        if assignment.worker_id != worker.pk:
            raise Conflict(
                f"{_where(source, work.line)}: the assignment {pid!r} is another worker's."
            )
        if assignment.items_done + count > _MOST_ITEMS:
            raise InvalidParameters(
                f"{_where(source, work.line)}: more than {_MOST_ITEMS:,} items in one assignment."
            )
        assignment.items_target = assignment.items_done + count
        assignment.items_done += count
        assignment.save(update_fields=["items_target", "items_done"])
        result[pid] = assignment
    return result, created


def _count(campaign: Campaign, stored: list[Judgment], by_key: dict[str, Item]) -> None:
    """Grow the items' counters and the campaign's tallies by the pairs just stored."""
    rows: dict[tuple[int, int], list[Judgment]] = defaultdict(list)
    for judgment in stored:
        rows[(judgment.item_id, judgment.worker_id)].append(judgment)
    added: dict[int, int] = defaultdict(int)
    for item_id, _worker_id in rows:
        added[item_id] += 1
    items = {i.pk: i for i in by_key.values()}
    levels = {pk: items[pk].judged for pk in added}
    if campaign.topup_reopened:  # as in judgments._write: every worker's, as a scan counts
        old = (
            Judgment.objects.filter(item_id__in=list(added))
            .exclude(pk__in=[j.pk for j in stored])
            .values("item_id")
            .annotate(n=Count("worker", distinct=True))
        )
        levels = dict.fromkeys(added, 0) | {r["item_id"]: r["n"] for r in old}
    items_judged_imported(added=added)
    tallied = []
    for (item_id, worker_id), judgments in rows.items():
        if items[item_id].is_gold:
            continue
        levels[item_id] += 1
        times = [j.created_at for j in judgments]
        tallied.append((worker_id, levels[item_id], len(judgments), min(times), max(times)))
    tallies_add(campaign_id=campaign.pk, pairs=tallied)
