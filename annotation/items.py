"""Build a campaign's items from a static context set and the responses of models.

Responses come from registered models (modelhub generates each once per model, context and
decoding parameters) or from a file; the campaign's protocol turns them into items (one per
context and model for ratings and SSA, one per context and model pair for A/B).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotation.dataset_reads import dataset_records
from annotation.models import Campaign, Dataset
from annotation.protocols import DialogueItems, ResponseItems, registry
from annotation.services import items_add
from corpora.records import Context, DialogueRecord
from evalsite.errors import InvalidParameters, NotFound
from modelhub.backends import Example
from modelhub.models import ModelEndpoint
from modelhub.services import generations_ensure


@dataclass(frozen=True)
class ItemsBuilt:
    """What building items did: items added, candidates skipped, the models used."""

    added: int
    skipped: int
    models: tuple[str, ...]


def model_responses(*, contexts: Sequence[Context], models: Sequence[str]) -> dict[str, list[str]]:
    """Return each registered model's response to every context, generating missing ones."""
    endpoints = {e.name: e for e in ModelEndpoint.objects.filter(name__in=list(models))}
    unknown = [m for m in models if m not in endpoints]
    if unknown:
        raise NotFound(f"No registered model called {', '.join(map(repr, unknown))}.")
    examples = [Example(turns=c.turns, reference=c.reference) for c in contexts]
    responses = {}
    for name in models:
        try:
            responses[name] = generations_ensure(endpoint=endpoints[name], examples=examples)
        except ValueError as exc:
            raise InvalidParameters(f"Model {name!r} could not answer: {exc}") from None
    return responses


def campaign_items_from_responses(
    *,
    campaign: Campaign,
    contexts: Sequence[Context],
    models: Sequence[str] = (),
    responses: Mapping[str, Mapping[str, str]] | None = None,
) -> ItemsBuilt:
    """Add the campaign's items for ``contexts`` answered by ``models`` and/or ``responses``.

    ``responses`` (model → context key → text, e.g. from ``datasets.readers.read_responses``) must
    answer every context. All or nothing: nothing is added if anything is refused.
    """
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, ResponseItems):
        raise InvalidParameters(f"{protocol.title} items are not built from model responses.")
    given = dict(responses or {})
    clash = sorted(set(given) & set(models))
    if clash:
        raise InvalidParameters(f"Model(s) both registered and in the file: {', '.join(clash)}.")
    by_model: dict[str, list[str]] = {}
    for model, answers in given.items():
        missing = [c.key for c in contexts if c.key not in answers]
        if missing:
            raise InvalidParameters(
                f"The responses of {model!r} miss {len(missing)} context(s), e.g. {missing[0]!r}."
            )
        by_model[model] = [answers[c.key] for c in contexts]
    by_model |= model_responses(contexts=contexts, models=models)
    if not by_model:
        raise InvalidParameters("Name at least one model or give a file of responses.")
    parameters = protocol.clean_parameters(campaign.parameters)
    examples = [(c.key, list(c.turns)) for c in contexts]
    items, skipped = protocol.items_build(parameters, examples, by_model)
    added = items_add(campaign=campaign, items=items)
    return ItemsBuilt(added=added, skipped=skipped, models=tuple(by_model))


def campaign_items_from_dataset(
    *, campaign: Campaign, dataset: str, split: str = "", limit: int | None = None
) -> int:
    """Add one item per dialogue of an imported data set (EmotionLines: a whole dialogue;
    EmoContext: a 3-turn dialogue); return how many were added.

    ``split`` keeps one split (train / valid / test); ``limit`` the first dialogues. Item
    keys are ``<data set>/<dialogue key>``, so several data sets (Friends and EmotionPush, each
    imported with its ``--source``) can feed one campaign. Import with ``--deidentify`` first
    to label a private source without its names. All or nothing.
    """
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, DialogueItems):
        raise InvalidParameters(f"{protocol.title} items are not built from dialogues.")
    found = Dataset.objects.filter(name=dataset).first()
    if found is None:
        raise NotFound(f"No data set {dataset!r}; import it with `import_dataset` first.")
    if limit is not None and limit < 1:
        raise InvalidParameters("The limit must be at least 1.")
    records = [r for r in dataset_records(found) if not split or r.split == split]
    if not records:
        raise InvalidParameters(f"The data set {dataset!r} has no dialogues in split {split!r}.")
    return campaign_items_from_dialogues(
        campaign=campaign, records=records[:limit], prefix=f"{dataset}/"
    )


def campaign_items_from_dialogues(
    *, campaign: Campaign, records: Sequence[DialogueRecord], prefix: str = ""
) -> int:
    """Add the items the campaign's protocol builds from dialogue records (keys: ``prefix``
    + the dialogue's key); return how many were added. All or nothing."""
    protocol = registry.get(campaign.protocol)
    if not isinstance(protocol, DialogueItems):
        raise InvalidParameters(f"{protocol.title} items are not built from dialogues.")
    parameters = protocol.clean_parameters(campaign.parameters)
    items = protocol.items_from_dialogues(parameters, records)
    return items_add(campaign=campaign, items=[(f"{prefix}{k}", p) for k, p in items])
