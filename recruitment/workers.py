"""Workers and providers: verifying an arrival, the hand-back at the end, blocks, messages."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse
from django.utils.translation import gettext

from annotation.models import Assignment, AuditLog, Campaign, Worker, WorkerBlock
from annotation.quality import blocked_sql, soft_blocked_sql
from annotation.services import audit_add
from annotation.services.workers import worker_block_lift, worker_block_record
from evalsite.errors import InvalidParameters, NotAllowed
from evalsite.rows import Columns
from providers import PROVIDER_NAMES, Arrival, Provider, provider_get
from providers.base import Completion, Eligibility, clean_id
from providers.local import NAME as LOCAL
from providers.local import link_key
from recruitment.models import LinkClaim, Publication


def _publication(campaign: Campaign, provider: str) -> Publication | None:
    return (
        Publication.objects.filter(campaign=campaign, provider=provider)
        .exclude(status=Publication.Status.FAILED)
        .first()
    )


def arrival_verify(*, campaign: Campaign, arrival: Arrival) -> tuple[Arrival, Worker | None]:
    """Refuse an arrival that the campaign's publications do not vouch for; return the
    arrival the pages after this one carry (``_open_link``: an open link gets its key) and
    the worker, if known, as read with their standing (``workers_standing``: the task page
    asks nothing more about their blocks).

    The link must prove the worker id (a local link: the key issued for this worker, unless
    the campaign allows open links and the id was never claimed). A campaign published
    nowhere is reached by local links (demo, lab). Once published, a worker must come
    through one of its providers, on one of its HITs/studies; an assignment id already bound
    to another worker or HIT is refused; a blocked worker is refused; and the provider may
    check further (Prolific: the session must be this participant's, active).
    """
    if arrival.preview:
        return arrival, None
    provider = provider_get(arrival.provider)
    provider.identity_check(campaign=campaign.slug, open_links=campaign.open_links, arrival=arrival)
    worker, published = _arriving_worker(campaign, arrival)
    if worker is not None and worker.blocked:  # type: ignore[attr-defined]
        raise NotAllowed("You cannot take part in this study.")
    if campaign.open_links and arrival.provider == LOCAL:
        arrival = _open_link(campaign, arrival, worker)
    if not published:
        return arrival, worker
    publication = _publication(campaign, arrival.provider)
    if publication is None:
        raise NotAllowed(f"This study is not offered through {provider.title}.")
    eligibility = Eligibility.from_config(publication.config.get("eligibility"))
    if arrival.worker_id in eligibility.block_workers or (
        eligibility.allow_workers and arrival.worker_id not in eligibility.allow_workers
    ):
        raise NotAllowed("You cannot take part in this study.")
    if provider.remote and not publication.hits.filter(external_id=arrival.hit_id).exists():
        raise NotAllowed("This link does not belong to one of this study's HITs.")
    first = not _assignment_known(campaign, arrival)
    provider.verify_arrival(config=publication.config, arrival=arrival, first=first)
    return arrival, worker


def _arriving_worker(campaign: Campaign, arrival: Arrival) -> tuple[Worker | None, bool]:
    """The arrival's worker if known, in one read with their standing here (``blocked``,
    ``soft_blocked``: ``quality.blocked_sql``, ``quality.soft_blocked_sql``, as
    ``workers_standing`` reads them) and whether they claimed their open link (``claimed``);
    and whether the campaign is published anywhere, known or not. Written as SQL: every task
    page runs it, and building it through the ORM cost 1.9 ms of CPU (``evalsite.rows``)."""
    blocked, blocked_params = blocked_sql(campaign, "w.id")
    soft, soft_params = soft_blocked_sql(campaign, "w.id")
    sql = _ARRIVING.format(
        columns=_WORKER.sql,
        blocked=blocked,
        soft=soft,
        claim=LinkClaim._meta.db_table,
        publication=Publication._meta.db_table,
        worker=Worker._meta.db_table,
    )
    params = [*blocked_params, *soft_params, campaign.pk, campaign.pk]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, arrival.provider, arrival.worker_id])
        row = cursor.fetchone()
    *standing, published = [bool(value) for value in row[len(_WORKER) :]]
    if row[0] is None:  # no such worker: the outer join's row has only the publication
        return None, published
    worker = _WORKER.instance(row)
    worker.standing_in = campaign.pk  # type: ignore[attr-defined]
    worker.blocked, worker.soft_blocked, worker.claimed = standing  # type: ignore[attr-defined]
    return worker, published


_WORKER = Columns(Worker, "w")
# One row whether or not the worker exists (a join from a row of nothing).
_ARRIVING = """
SELECT {columns}, {blocked}, {soft},
       EXISTS (SELECT 1 FROM {claim} c WHERE c.campaign_id = %s AND c.worker_id = w.id),
       EXISTS (SELECT 1 FROM {publication} p WHERE p.campaign_id = %s)
FROM (SELECT 1) AS one LEFT JOIN {worker} w ON w.provider = %s AND w.external_id = %s
"""


def _assignment_known(campaign: Campaign, arrival: Arrival) -> bool:
    """Whether the arrival's provider assignment is known here (not its first arrival);
    refuse it when it is another worker's or another HIT's."""
    if not arrival.assignment_id:
        return False
    known = (
        Assignment.objects.filter(campaign=campaign, provider_assignment_id=arrival.assignment_id)
        .select_related("worker")
        .first()
    )
    if known is None:
        return False
    if (known.worker.provider, known.worker.external_id) != (arrival.provider, arrival.worker_id):
        raise NotAllowed("This assignment belongs to another worker.")
    if known.provider_hit_id and known.provider_hit_id != arrival.hit_id:
        raise NotAllowed("This assignment belongs to another HIT.")
    return True


def _open_link(campaign: Campaign, arrival: Arrival, worker: Worker | None) -> Arrival:
    """An open link's worker id is only claimed, so the pages carry the id's key from the
    first one on (the worker's address bar shows it: their personal link). The first request
    that comes back with the key claims the id (``LinkClaim``); from then on the bare id is
    refused, so whoever knows or guesses it cannot act as its worker. What remains: an id
    used by two people before either came back with the key (docs/providers.md)."""
    claimed = worker is not None and worker.claimed  # type: ignore[attr-defined]
    if arrival.signature:  # checked by the provider's identity_check
        if worker is not None and not claimed:
            LinkClaim.objects.get_or_create(campaign=campaign, worker=worker)
        return arrival
    if claimed:
        raise NotAllowed(
            gettext(
                "Someone already takes part in this study under this worker id, through their "
                "personal link. If that is you, come back through that link (the address your "
                "study pages showed); otherwise start with a worker id of your own."
            )
        )
    return replace(arrival, signature=link_key(campaign.slug, arrival.worker_id))


def assignment_completion(*, assignment: Assignment) -> Completion:
    """Return how the end screen hands this finished assignment back to its provider."""
    name = assignment.worker.provider
    if name not in PROVIDER_NAMES:  # the simulated crowd
        return Completion(kind="code", code=assignment.completion_code)
    publication = _publication(assignment.campaign, name)
    config: dict[str, Any] = dict(publication.config) if publication else {}
    return provider_get(name).completion(
        config=config,
        assignment_id=assignment.provider_assignment_id,
        submit_to=assignment.submit_to,
        code=assignment.completion_code,
    )


# How many personal links one request may issue.
MAX_LINKS = 10_000


def worker_links(
    *, campaign: Campaign, worker_ids: Sequence[str] = (), count: int = 0, base_url: str = ""
) -> list[tuple[str, str]]:
    """Return (worker id, personal signed link) for the given ids and ``count`` new random
    ones (``p-`` + 10 hex digits): the links a researcher sends to a local study's workers.

    A link opens this study for this worker only (``LocalProvider.identity_check``); nothing
    is stored, so issuing a link again gives the same link. ``base_url`` (e.g.
    ``https://evalsite.example.org``) is put before the task path.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InvalidParameters("The number of new links must be a whole number ≥ 0.")
    ids = [clean_id(str(w).strip(), "worker id") for w in worker_ids]
    ids += [f"p-{secrets.token_hex(5)}" for _ in range(count)]
    if not ids:
        raise InvalidParameters("Give worker ids or a number of new links.")
    if len(ids) > MAX_LINKS:
        raise InvalidParameters(f"At most {MAX_LINKS} links at once.")
    if len(set(ids)) != len(ids):
        raise InvalidParameters("A worker id appears twice.")
    path = reverse("annotation:task", args=[campaign.slug])
    root = base_url.rstrip("/")
    return [
        (w, f"{root}{path}?{urlencode({'workerId': w, 'key': link_key(campaign.slug, w)})}")
        for w in ids
    ]


def _remote(worker: Worker) -> Provider | None:
    """Return the worker's provider if it keeps a side of its own (blocks, money), else None."""
    if worker.provider not in PROVIDER_NAMES:
        return None
    provider = provider_get(worker.provider)
    return provider if provider.remote else None


def _provider_configs(provider: str, owner: User | None) -> list[dict[str, Any]]:
    """Return one config per distinct account/endpoint this provider was published with:
    through ``owner``'s campaigns only, or through everyone's for a global block (None)."""
    publications = Publication.objects.filter(provider=provider).exclude(
        status=Publication.Status.FAILED
    )
    if owner is not None:
        publications = publications.filter(campaign__owner=owner)
    seen: dict[str, dict[str, Any]] = {}
    for publication in publications:
        config = publication.config
        key = str(config.get("block_group") or (config.get("endpoint_url"), config.get("sandbox")))
        seen.setdefault(key, dict(config))
    return list(seen.values())


def worker_block(
    *, worker: Worker, reason: str, actor: str, campaign: Campaign | None = None
) -> WorkerBlock:
    """Block a worker, on the provider's side too (idempotent).

    Decided from a campaign (the dashboard, the API), the block covers its owner's studies
    only; without one (``manage.py block``, an admin's) or from a campaign without an owner
    (only a superuser sees those), every study. The provider is told through the
    publications of the studies it covers: MTurk, CreateWorkerBlock on each endpoint (an
    MTurk block is account-wide); Prolific, the blocklist group of each study. If it
    refuses, nothing is recorded. Each affected campaign's audit log gets a line.
    """
    reason = reason.strip()
    if not reason:
        raise InvalidParameters("Give a reason for the block; the worker may be shown it.")
    owner = campaign.owner if campaign is not None else None
    existing = WorkerBlock.objects.filter(worker=worker, owner=owner, lifted_at=None).first()
    if existing is not None:
        return existing
    provider = _remote(worker)
    if provider is not None:
        for config in _provider_configs(worker.provider, owner):
            provider.block(config=config, worker_id=worker.external_id, reason=reason)
    block, _created = worker_block_record(worker=worker, owner=owner, reason=reason, actor=actor)
    return block


def worker_unblock(
    *, worker: Worker, reason: str, actor: str, owner: User | None = None
) -> WorkerBlock | None:
    """Lift the worker's block of ``owner``'s scope (None: the global one) here and on the
    provider (idempotent); return it if there was one."""
    block = WorkerBlock.objects.filter(worker=worker, owner=owner, lifted_at=None).first()
    if block is None:
        return None
    provider = _remote(worker)
    if provider is not None:
        for config in _provider_configs(worker.provider, owner):
            provider.unblock(
                config=config, worker_id=worker.external_id, reason=reason or "Unblocked"
            )
    worker_block_lift(block=block, actor=actor, reason=reason)
    return block


def workers_notify(
    *, publication: Publication, workers: Sequence[Worker], subject: str, message: str, actor: str
) -> int:
    """Send the workers a message through the publication's provider; return how many."""
    if not message.strip():
        raise InvalidParameters("The message is empty.")
    ids = [w.external_id for w in workers if w.provider == publication.provider]
    if ids:
        provider_get(publication.provider).notify(
            config=publication.config, worker_ids=ids, subject=subject, message=message
        )
        audit_add(
            action=AuditLog.Action.NOTIFY,
            actor=actor,
            campaign=publication.campaign,
            provider=publication.provider,
            detail=f"{len(ids)} worker(s): {subject}",
        )
    return len(ids)
