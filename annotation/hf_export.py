"""A campaign as a Hugging Face dataset folder: its Parquet files and its dataset card.

The files are the other exports' (``judgments_export``'s Parquet, ``records_export``'s
dialogues, the items), workers by pseudonym; ``corpora.hf`` lays the folder out and writes
the card from the facts read here (protocol, consent, agreement, dates). The folder is built
beside its destination and moved there whole, so a refusal or a failure leaves nothing
behind (docs/datasets.md, "Hugging Face datasets").
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import UTC
from pathlib import Path

from django.conf import settings
from django.db.models import Count, Max, Min

from annotation.dataset_reads import campaign_dialogue_records
from annotation.exports import frame_write, judgments_export
from annotation.judgment_reads import campaign_judgments
from annotation.models import Campaign, Consent, Utterance
from annotation.protocols import DialogueItems, registry
from annotation.selectors import campaign_items_frame, campaign_report
from annotation.services.datasets import records_export
from corpora.hf import (
    DATA_FILE,
    Config,
    Question,
    Study,
    card_write,
    cff_bibtex,
    configs_read,
    license_clean,
)
from corpora.records import DatasetError
from evalsite.errors import InvalidParameters


def campaign_hf_export(
    campaign: Campaign, folder: Path, *, licence: str, include_flagged: bool = False
) -> list[Config]:
    """Write the campaign as a Hugging Face dataset to ``folder`` (new or empty); return its
    configurations. Raise InvalidParameters for a licence the Hub does not know, a folder
    that holds anything (its files would be published with the study) or a campaign with
    nothing to export."""
    try:
        licence = license_clean(licence)
    except DatasetError as exc:
        raise InvalidParameters(str(exc)) from None
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidParameters(
            f"{folder} exists and is not an empty folder; give a new or empty one, so that no "
            "other file is uploaded with this study."
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        _files_write(campaign, work, include_flagged=include_flagged)
        if not any(work.iterdir()):
            raise InvalidParameters(f"{campaign.slug} has no judgments, dialogues or items yet.")
        card_write(work, _study(campaign, licence, include_flagged=include_flagged))
        if folder.exists():
            folder.rmdir()
        work.rename(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return configs_read(folder)


def _files_write(campaign: Campaign, folder: Path, *, include_flagged: bool) -> None:
    """Write each configuration that has rows, as the other exports write it."""
    judgments, _ = campaign_judgments(campaign, include_flagged=include_flagged)
    if judgments.exists():
        path = folder / "judgments" / DATA_FILE
        path.parent.mkdir()
        judgments_export(campaign, path, "parquet", include_flagged=include_flagged)
    records = campaign_dialogue_records(campaign)
    if records:
        records_export(records, fmt="parquet", out=folder / "dialogues" / DATA_FILE)
    items = campaign_items_frame(campaign)
    if len(items):
        frame_write(items, folder / "items" / DATA_FILE, "parquet")


def _study(campaign: Campaign, licence: str, *, include_flagged: bool) -> Study:
    protocol = registry.get(campaign.protocol)
    parameters = protocol.clean_parameters(campaign.parameters)
    consents = (
        Consent.objects.filter(campaign=campaign)
        .values_list("version")
        .annotate(n=Count("worker", distinct=True))
        .order_by("version")
    )
    return Study(
        slug=campaign.slug,
        name=campaign.name,
        protocol=protocol.name,
        protocol_title=protocol.title,
        questions=[Question(q.key, q.text, q.choices) for q in protocol.questions(parameters)],
        language=campaign.language,
        licence=licence,
        consent_version=(campaign.consent_version or "1") if campaign.consent_text else "",
        consents=dict(consents),
        agreement=campaign_report(campaign).tables.get("agreement"),
        collected=_collected(campaign, include_flagged=include_flagged),
        include_flagged=include_flagged,
        withdrawal=campaign.withdrawal,
        # Labels of dialogues' utterances are a classification; everything else the studies
        # collect judges or writes dialogue replies, the Hub's text generation.
        task_categories=(
            ["text-classification"] if isinstance(protocol, DialogueItems) else ["text-generation"]
        ),
        citation=cff_bibtex((settings.BASE_DIR / "CITATION.cff").read_text(encoding="utf-8")),
    )


def _collected(campaign: Campaign, *, include_flagged: bool) -> tuple[str, str] | None:
    """Return the first and last day (UTC) a judgment or an utterance was stored."""
    judgments, _ = campaign_judgments(campaign, include_flagged=include_flagged)
    said = Utterance.objects.filter(dialogue__campaign=campaign)
    spans = [
        rows.aggregate(first=Min("created_at"), last=Max("created_at"))
        for rows in (judgments, said)
    ]
    firsts = [s["first"] for s in spans if s["first"] is not None]
    lasts = [s["last"] for s in spans if s["last"] is not None]
    if not firsts:
        return None
    return f"{min(firsts).astimezone(UTC):%Y-%m-%d}", f"{max(lasts).astimezone(UTC):%Y-%m-%d}"
