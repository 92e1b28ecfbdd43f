"""The demo's ACUTE-Eval study: the demo's interactive SSA chats compared whole.

``demo-acute`` pairs every GenericBot chat of ``demo-ssa-chat`` with every retrieval-bot chat
(``chat_to_acute``'s service), goes live with open links, and a simulated crowd answers the
four ACUTE questions (three judgments per pair, one slot left for you), preferring the
retrieval bot as often as the demo's truth says, so the report has win rates to show. Created
once; a re-run reuses it and adds no judgments.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation.items_acute import acute_items_add, conversations_from_campaign
from annotation.models import Campaign, Item
from annotation.protocols.acute import AcuteProtocol
from annotation.selectors import campaign_report
from annotation.services import campaign_create, campaign_set_status
from evalsite.demo import QUALITY, crowd_fill, demo_redundancy
from evalsite.demo.chat import SSA_CHAT, SSA_CHAT_MODELS
from evalsite.errors import AnnotationError
from evalstats.reports import report_text, report_write

ACUTE = "demo-acute"
SIMULATED = 3  # judgments per pair of chats from the simulated crowd


def acute_truth(item: Item) -> dict[str, Any]:
    """Return the simulated crowd's truth: each model's quality (higher is preferred)."""
    models = (item.payload["model_a"], item.payload["model_b"])
    return {"quality": {m: QUALITY.get(m, 0.3) for m in models}}


def acute_study_run(*, seed: int, out: Path, write: Callable[[str], Any]) -> list[Campaign]:
    """Create ``demo-acute`` from the demo chats (once), let the simulated crowd fill it,
    write its report; return it in a list, or an empty list (with a note) when the demo chats
    do not hold conversations of two models."""
    campaign = Campaign.objects.filter(slug=ACUTE).first()
    if campaign is None:
        chats = Campaign.objects.filter(slug=SSA_CHAT).first()
        conversations, _ = conversations_from_campaign(campaign=chats) if chats else ([], 0)
        try:
            with transaction.atomic():  # no campaign without its items
                campaign = campaign_create(
                    slug=ACUTE,
                    name="Demo: two chats side by side (ACUTE-Eval)",
                    protocol=AcuteProtocol.name,
                    parameters={"n_boot": 200, "min_judgments_per_pair": 10},
                    redundancy=demo_redundancy(SIMULATED),
                    controls={"open_links": True},  # anyone may try the demo
                )
                acute_items_add(
                    slug=ACUTE,
                    conversations=conversations,
                    pairs_per_matchup=4,
                    models=SSA_CHAT_MODELS,  # not the streaming tiny GPT-2's chats
                )
        except AnnotationError as exc:
            write(f"No ACUTE-Eval demo: {exc.message}")
            return []
        campaign = campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
        write(f"Created campaign {ACUTE}: {campaign.items.count()} pairs of chats.")
    crowd_fill(campaign=campaign, simulated=SIMULATED, truth=acute_truth, seed=seed, write=write)
    report = campaign_report(campaign)
    write(report_text(report))
    for path in report_write(report, out, stem=campaign.protocol):
        write(f"wrote {path}")
    return [campaign]
