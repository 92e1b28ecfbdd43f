"""Writes of the model side: registering models and storing their generations once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from modelhub.backends import BACKENDS, Example, backend_load
from modelhub.models import Generation, ModelEndpoint


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def endpoint_register(
    *,
    name: str,
    backend: str,
    config: Mapping[str, Any] | None = None,
    decoding: Mapping[str, Any] | None = None,
    notes: str = "",
) -> ModelEndpoint:
    """Register a model, or update the registration of the same name; return it."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(sorted(BACKENDS))}")
    backend_load(backend, dict(config or {}))  # refuse a configuration the backend rejects
    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=name,
        defaults={
            "backend": backend,
            "config": dict(config or {}),
            "decoding": dict(decoding or {}),
            "notes": notes,
        },
    )
    return endpoint


def generations_ensure(*, endpoint: ModelEndpoint, examples: Sequence[Example]) -> list[str]:
    """Return the endpoint's response to each example, generating only the missing ones.

    Responses are stored under a unique (model, context, decoding) key, so running this again
    costs nothing and concurrent runs never store a response twice.
    """
    decoding_hash = _digest(endpoint.decoding)
    keys = [_digest({"turns": list(e.turns), "reference": e.reference}) for e in examples]
    stored = dict(
        Generation.objects.filter(
            endpoint=endpoint, decoding_hash=decoding_hash, context_hash__in=set(keys)
        ).values_list("context_hash", "response")
    )
    todo = {k: e for k, e in zip(keys, examples, strict=True) if k not in stored}
    if todo:
        backend = backend_load(endpoint.backend, endpoint.config)
        responses = backend.generate(list(todo.values()), endpoint.decoding)
        with transaction.atomic():
            Generation.objects.bulk_create(
                [
                    Generation(
                        endpoint=endpoint,
                        context_hash=k,
                        decoding_hash=decoding_hash,
                        context={"turns": list(e.turns), "reference": e.reference},
                        response=r,
                    )
                    for (k, e), r in zip(todo.items(), responses, strict=True)
                ],
                ignore_conflicts=True,
            )
        stored.update(
            Generation.objects.filter(
                endpoint=endpoint, decoding_hash=decoding_hash, context_hash__in=list(todo)
            ).values_list("context_hash", "response")
        )
    return [stored[k] for k in keys]
