"""Read-only pages of a campaign: its items (search, pages, one previewed as its worker sees
it) and its workers' consents. Staff only, the owner's campaigns only (``campaign_for``);
nothing here writes, and the preview creates no assignment, lease or judgment.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.views.decorators.http import require_GET

from dashboard.access import campaign_for, staff_required
from dashboard.consents import consent_rows
from dashboard.items import (
    QUERY_MAX,
    item_preview_context,
    item_previewable,
    items_page,
    payload_fields,
)


@require_GET
@staff_required
def items_browse(request: HttpRequest, slug: str) -> HttpResponse:
    """The campaign's items by key, searched by key or text, a page at a time."""
    campaign = campaign_for(request.user, slug)
    found = items_page(campaign, query=request.GET.get("q", ""), page=request.GET.get("page", "1"))
    context = {
        "campaign": campaign,
        "found": found,
        "rows": [(item, payload_fields(item.payload)) for item in found.page],
        "previewable": item_previewable(campaign),
        "query_max": QUERY_MAX,
    }
    return render(request, "dashboard/items.html", context)


@require_GET
@staff_required
def item_preview(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """One item on the worker's task page, in the campaign's language, answers disabled."""
    campaign = campaign_for(request.user, slug)
    item = campaign.items.filter(pk=item_id).first()
    if item is None or not item_previewable(campaign):
        raise Http404("No such item with a worker page in this campaign.")
    with translation.override(campaign.language):
        return render(request, "annotation/task.html", item_preview_context(campaign, item))


@require_GET
@staff_required
def consents_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Each worker's consents (version, time) and withdrawal, as recorded."""
    campaign = campaign_for(request.user, slug)
    return render(
        request,
        "dashboard/consents.html",
        {"campaign": campaign, "rows": consent_rows(campaign)},
    )
