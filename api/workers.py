"""Workers: the quality table of the latest report; approve, reject, bonus, block, forget.

Actions go through ``dashboard.services.worker_act`` (the provider, the budget under the
campaign's row lock, the ledger, the audit log). ``Idempotency-Key`` makes a retried
request, even a concurrent one, act once.
"""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest, JsonResponse
from ninja import Path, Query, Router

from api.access import actor, campaign_of, user_of
from api.errors import CLIENT_ERRORS, ErrorOut, query_check
from api.idempotency import IdempotencyHeader, idempotent
from api.schemas import (
    PSEUDONYM_PATTERN,
    ApproveIn,
    CampaignSlug,
    Page,
    Summary,
    WorkerActionIn,
    WorkersPage,
)
from dashboard import review, selectors, services
from dashboard.access import campaigns_visible

router = Router(tags=["workers"])

Pseudonym = Path(..., pattern=PSEUDONYM_PATTERN, description="The worker's pseudonym.")
ActionPath = Path(..., description="What to do to the worker.")
Action = Literal["approve", "reject", "soft_block", "bonus", "block", "forget"]


@router.get("/{slug}/workers", response={200: WorkersPage, CLIENT_ERRORS: ErrorOut})
def workers_list(
    request: HttpRequest, page: Query[Page], slug: str = CampaignSlug
) -> dict[str, Any]:
    """The latest report snapshot's worker-quality table (pseudonyms only), those failing
    review first, then the busiest: the dashboard's table."""
    query_check(request, Page)
    campaign = campaign_of(request, slug)
    snapshot = selectors.report_latest(campaign)
    table = selectors.quality_table(snapshot, limit=None)
    rows = table.rows[page.offset : page.offset + page.limit]
    return {
        "count": table.total,
        "limit": page.limit,
        "offset": page.offset,
        "report_job": snapshot.pk if snapshot else None,
        "columns": [c.name for c in table.columns],
        "rows": [[cell for _, cell in cells] for _, cells in rows],
    }


@router.post("/{slug}/workers/approve", response={200: Summary, CLIENT_ERRORS: ErrorOut})
def workers_approve(
    request: HttpRequest,
    data: ApproveIn,
    slug: str = CampaignSlug,
    idempotency_key: str | None = IdempotencyHeader,
) -> JsonResponse:
    """Approve the submitted work of ``workers`` (null: of everyone waiting for review)."""
    campaign = campaign_of(request, slug)

    def approve() -> tuple[int, dict[str, Any]]:
        summary = review.workers_approve(
            campaign=campaign, pseudonyms=data.workers, actor=actor(request)
        )
        return 200, {"summary": summary}

    return idempotent(request, idempotency_key, approve)


@router.post(
    "/{slug}/workers/{pseudonym}/{action}", response={200: Summary, CLIENT_ERRORS: ErrorOut}
)
def worker_action(
    request: HttpRequest,
    data: WorkerActionIn,
    slug: str = CampaignSlug,
    pseudonym: str = Pseudonym,
    action: Action = ActionPath,
    idempotency_key: str | None = IdempotencyHeader,
) -> JsonResponse:
    """Approve or reject (``reason``: the feedback) their submitted assignments, soft-block
    them here, pay a bonus (``amount``, ``reason``), block them on their provider, or forget
    them (erasure: in the campaigns the key's user may see, all of them for a superuser).
    Approve and bonus spend money: send an ``Idempotency-Key``."""
    campaign = campaign_of(request, slug)

    def act() -> tuple[int, dict[str, Any]]:
        summary = services.worker_act(
            campaign=campaign,
            pseudonym=pseudonym,
            action=action,
            actor=actor(request),
            reason=data.reason,
            amount=data.amount,
            scope=campaigns_visible(user_of(request)),
        )
        return 200, {"summary": summary}

    return idempotent(request, idempotency_key, act)
