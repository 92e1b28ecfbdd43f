"""Items: the one way items enter a campaign (validated by its protocol)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from annotation.models import Campaign, Item
from annotation.protocols import GoldChecks, registry
from evalsite.errors import Conflict, InvalidParameters

# One item as given to ``items_add``: (key, payload), with accepted answers for a gold check,
# and True after them for an attention check.
ItemRow = (
    tuple[str, Mapping[str, Any]]
    | tuple[str, Mapping[str, Any], Mapping]
    | tuple[str, Mapping[str, Any], Mapping, bool]
)
# What ``items_clean`` returns per key: the cleaned payload, accepted answers, attention.
Cleaned = tuple[dict[str, Any], dict[str, list[Any]] | None, bool]


def items_add(*, campaign: Campaign, items: Iterable[ItemRow]) -> int:
    """Add items after the protocol validated every one; return how many are new.

    Each item is (key, payload), or (key, payload, accepted answers) for a hidden gold check
    (quality.py), or (key, payload, accepted answers, True) for an explicit attention check
    (``Item.attention``: the item itself says what to answer). All or nothing: one bad item
    refuses the whole batch, naming it (``items_clean``). Keys already in the campaign with
    the same content are skipped, so a repeated import adds nothing; the same key with other
    content is refused.
    """
    batch = items_clean(campaign=campaign, items=items)
    existing = {
        key: (payload, gold, attention)
        for key, payload, gold, attention in Item.objects.filter(
            campaign=campaign, key__in=list(batch)
        ).values_list("key", "payload", "gold", "attention")
    }
    changed = sorted(k for k, v in existing.items() if v != batch[k])
    if changed:
        raise Conflict(
            f"{len(changed)} item key(s) already exist with other content, e.g. {changed[0]!r}."
        )
    new = [
        Item(campaign=campaign, key=k, payload=p, gold=g, attention=a)
        for k, (p, g, a) in batch.items()
        if k not in existing
    ]
    # Everything above raised before writing; the batches are written all or nothing, and
    # inside a caller's transaction (a bot turn) without a savepoint of their own.
    with transaction.atomic(savepoint=False):
        Item.objects.bulk_create(new, batch_size=1000)
    return len(new)


def items_clean(*, campaign: Campaign, items: Iterable[ItemRow]) -> dict[str, Cleaned]:
    """Return each item's cleaned content by key; raise InvalidParameters naming the first
    item the protocol refuses (its payload, its gold answers) or a key that is bad or twice.

    ``items_add`` calls it before writing anything; the admin's item form calls it to show
    the protocol's refusal as a form error.
    """
    protocol = registry.get(campaign.protocol)
    parameters: dict[str, Any] | None = None
    batch: dict[str, Cleaned] = {}
    for n, (key, payload, *gold) in enumerate(items, start=1):
        attention = len(gold) > 1 and gold[1] is True
        kind = "Attention check" if attention else "Gold item" if gold else "Item"
        if not isinstance(key, str) or not 0 < len(key) <= 200:
            raise InvalidParameters(f"{kind} {n}: the key must be 1–200 characters.")
        if key in batch:
            raise InvalidParameters(f"{kind} {n}: the key {key!r} appears twice.")
        try:
            accepted = None
            if gold:
                if not isinstance(protocol, GoldChecks):
                    raise InvalidParameters(f"{protocol.title} takes no gold items.")
                parameters = parameters or protocol.clean_parameters(campaign.parameters)
                answers: Any = gold[0]  # clean_gold checks that it is a mapping
                accepted = protocol.clean_gold(parameters, answers)
            batch[key] = (protocol.clean_item(payload), accepted, attention)
        except InvalidParameters as exc:
            raise InvalidParameters(f"{kind} {n} ({key}): {exc.message}") from None
    return batch
