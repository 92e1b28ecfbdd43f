"""Reads of the dialogue tables as records: for exports, reports and the dashboard."""

from __future__ import annotations

from typing import Any

import pandas as pd
from django.db.models import Prefetch, QuerySet

from annotation.models import Campaign, Dataset, Dialogue, Utterance
from annotation.protocols import DialogueItems, registry
from corpora.records import DialogueRecord, UtteranceRecord


def _records(dialogues: QuerySet[Dialogue]) -> list[DialogueRecord]:
    utterances = Utterance.objects.select_related("worker").order_by("index")
    rows = dialogues.select_related("situation", "situation__worker").prefetch_related(
        Prefetch("utterances", queryset=utterances)
    )
    records = []
    for d in rows.order_by("pk"):
        situation = d.situation
        author = ""
        if situation is not None:
            author = situation.author or (situation.worker.pseudonym if situation.worker else "")
        records.append(
            DialogueRecord(
                key=d.key,
                utterances=[
                    UtteranceRecord(
                        speaker=u.speaker,
                        text=u.text,
                        label=u.label,
                        annotations=u.annotations,
                        worker=u.worker.pseudonym if u.worker else "",
                    )
                    for u in d.utterances.all()
                ],
                source=d.source,
                split=d.split,
                emotion=d.emotion,
                situation=situation.text if situation else "",
                situation_author=author,
                metadata=d.metadata,
                where=f"dialogue {d.key}",
            )
        )
    return records


def dataset_records(dataset: Dataset) -> list[DialogueRecord]:
    """Return the data set's dialogues, in import order, workers by pseudonym."""
    return _records(Dialogue.objects.filter(dataset=dataset))


def campaign_dialogue_records(campaign: Campaign) -> list[DialogueRecord]:
    """Return what a campaign collected as dialogues, workers by pseudonym.

    Dialogues held live in the campaign (ED collection, interactive chats), then, for an
    emotion-labeling campaign, its items' dialogues with the crowd's gold labels and votes.
    """
    records = _records(Dialogue.objects.filter(campaign=campaign))
    protocol = registry.get(campaign.protocol)
    if isinstance(protocol, DialogueItems):
        from annotation.judgment_reads import campaign_judgments_frame
        from annotation.selectors import campaign_items_frame

        parameters = protocol.clean_parameters(campaign.parameters)
        records += protocol.labeled_dialogues(
            parameters, campaign_items_frame(campaign), campaign_judgments_frame(campaign)
        )
    return records


def deidentification_replacements(dataset: Dataset) -> list[dict[str, Any]]:
    """Return one row per replaced span: dialogue, utterance, type, original, replacement."""
    rows = []
    dialogues = Dialogue.objects.filter(dataset=dataset, metadata__has_key="deidentification")
    for key, metadata in dialogues.order_by("pk").values_list("key", "metadata"):
        for r in metadata.get("deidentification", []):
            rows.append({"dialogue": key, **r})
    return rows


def dataset_emotion_report(
    dataset: Dataset, *, labels: list[str] | None = None, n_boot: int = 1000
) -> dict[str, pd.DataFrame]:
    """Return an imported data set's emotion tables from its stored crowd votes.

    ``distribution``: per source the released labels' shares (Table 4 style, non-neutral
    included); ``agreement``: Fleiss' kappa per source with a bootstrap CI, from each
    utterance's vote counts (``annotations["votes"]``, as EmotionLines ships them);
    ``rule``: how often the EmotionLines rule on those votes gives the released label.
    """
    from corpora.records import EMOTIONLINES_LABELS
    from evalstats.aggregation import emotionlines_labels
    from evalstats.emotion_labels import kappa_by_source, label_distribution

    names = list(labels or EMOTIONLINES_LABELS)
    rows = Utterance.objects.filter(dialogue__dataset=dataset).values_list(
        "dialogue__key", "dialogue__source", "label", "annotations"
    )
    frame = pd.DataFrame(list(rows), columns=["item", "source", "label", "annotations"])
    gold = frame[frame["label"] != ""]
    voted = frame[frame["annotations"].map(lambda a: bool(a.get("votes")))]
    counts = pd.DataFrame(
        [[a["votes"].get(name, 0) for name in names] for a in voted["annotations"]],
        columns=names,
        index=voted.index,
    )
    counts.insert(0, "source", voted["source"])
    counts.insert(0, "item", voted["item"])  # the dialogue: the bootstrap draws whole ones
    tables = {"distribution": label_distribution(gold, names)}
    tables["agreement"] = kappa_by_source(counts, names, n_boot=n_boot)
    if len(counts):
        rule = emotionlines_labels(counts[names].to_numpy(), names)
        same = (rule.to_numpy() == voted["label"].to_numpy()).mean()
        tables["rule"] = pd.DataFrame(
            [{"utterances": len(counts), "rule_matches_released_pct": same * 100}]
        )
    return tables
