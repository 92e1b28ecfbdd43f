"""Items: the one way items enter a campaign (validated by its protocol)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from annotation.exceptions import Conflict, InvalidParameters
from annotation.models import Campaign, Item
from annotation.protocols import registry


@transaction.atomic
def items_add(*, campaign: Campaign, items: Iterable[tuple[str, Mapping[str, Any]]]) -> int:
    """Add (key, payload) items after the protocol validated every one; return how many.

    All or nothing: one bad item refuses the whole batch, naming it. Keys already in the
    campaign with the same payload are skipped, so a repeated import adds nothing.
    """
    protocol = registry.get(campaign.protocol)
    batch: dict[str, dict[str, Any]] = {}
    for n, (key, payload) in enumerate(items, start=1):
        if not isinstance(key, str) or not 0 < len(key) <= 200:
            raise InvalidParameters(f"Item {n}: the key must be 1–200 characters.")
        if key in batch:
            raise InvalidParameters(f"Item {n}: the key {key!r} appears twice.")
        try:
            batch[key] = protocol.clean_item(payload)
        except InvalidParameters as exc:
            raise InvalidParameters(f"Item {n} ({key}): {exc.message}") from None
    existing = dict(
        Item.objects.filter(campaign=campaign, key__in=list(batch)).values_list("key", "payload")
    )
    changed = sorted(k for k, p in existing.items() if p != batch[k])
    if changed:
        raise Conflict(
            f"{len(changed)} item key(s) already exist with other content, e.g. {changed[0]!r}."
        )
    new = [Item(campaign=campaign, key=k, payload=p) for k, p in batch.items() if k not in existing]
    Item.objects.bulk_create(new, batch_size=1000)
    return len(new)
