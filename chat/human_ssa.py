"""Human–human SSA (PROTOCOLS.md §6): collected conversations labeled by third parties.

Every turn after the first of a campaign's complete conversations becomes an item of a new
static SSA campaign (its context: the turns before it; its "model": ``human``), labeled by
five other workers per turn with the majority per question, like Meena's human baseline.
The workers who held the conversations are soft-blocked in the new campaign, so that only
third parties label them.
"""

from __future__ import annotations

from django.db import transaction

from annotation.models import Campaign, Dialogue, Worker
from annotation.protocols.ssa import SSAProtocol
from annotation.quality import worker_soft_block
from annotation.services import campaign_create, items_add
from evalsite.errors import Conflict, InvalidParameters


@transaction.atomic
def ssa_campaign_from_conversations(
    *,
    source: Campaign,
    slug: str,
    name: str = "",
    redundancy: int = 5,
    include_flagged: bool = False,
    max_context: int = 0,
) -> Campaign:
    """Create a draft SSA campaign whose items are the turns of ``source``'s conversations.

    Only complete conversations are used, and flagged ones (pasted text, a partner who left)
    only with ``include_flagged``. ``max_context`` keeps that many turns before each one (0:
    all). The item key is ``<dialogue>/<index>``, so the items trace back to the turns.
    """
    if redundancy < 1:
        raise InvalidParameters("redundancy must be at least 1.")
    if max_context < 0:
        raise InvalidParameters("max_context must be 0 (all turns) or more.")
    dialogues = Dialogue.objects.filter(campaign=source, status=Dialogue.Status.COMPLETE)
    if not include_flagged:
        dialogues = dialogues.filter(flagged=False)
    items = []
    authors: set[int] = set()
    for dialogue in dialogues.order_by("pk").prefetch_related("utterances"):
        utterances = sorted(dialogue.utterances.all(), key=lambda u: u.index)
        authors.update(u.worker_id for u in utterances if u.worker_id is not None)
        turns = [u.text for u in utterances]
        for index in range(1, len(turns)):
            context = turns[max(0, index - max_context) if max_context else 0 : index]
            payload = {
                "context": context,
                "response": turns[index],
                "model": "human",
                "example": dialogue.key,
            }
            items.append((f"{dialogue.key}/{index}", payload))
    if not items:
        raise Conflict(f"'{source.slug}' has no complete conversations to label yet.")
    campaign = campaign_create(
        slug=slug,
        name=name or f"Human–human SSA of {source.name}",
        protocol=SSAProtocol.name,
        redundancy=redundancy,
    )
    items_add(campaign=campaign, items=items)
    for worker in Worker.objects.filter(pk__in=authors):
        worker_soft_block(
            campaign=campaign, worker=worker, reason="Wrote conversations labeled here."
        )
    return campaign
