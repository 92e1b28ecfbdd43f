"""Writes of the model side: registering models, storing their generations once, generation
jobs (started here, run by the generator's runner; their rows are ``modelhub.jobs``'), and
one bot turn of a live chat."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from modelhub.backends import BACKENDS, Backend, Example, Reply, backend_load
from modelhub.decoding import decoding_validate
from modelhub.jobs import job_begin, job_finish, job_progress, job_start
from modelhub.models import Generation, GenerationJob, ModelEndpoint

LOOKUP_CHUNK = 500  # hashes per IN (...) query: well under SQLite's variable limit
_BACKENDS: dict[tuple[str, str], Backend] = {}
_BACKENDS_LOCK = threading.Lock()
BACKENDS_KEPT = 8


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def example_key(example: Example) -> str:
    """Return the hash that identifies an example's context (turns and reference)."""
    return _digest(example.as_dict())


def decoding_key(endpoint: ModelEndpoint) -> str:
    """Return the hash of the endpoint's validated decoding parameters, defaults included,
    so that ``{}`` and ``{"strategy": "greedy"}`` share their generations."""
    return _digest(decoding_validate(endpoint.decoding).as_dict())


def endpoint_register(
    *,
    name: str,
    backend: str,
    config: Mapping[str, Any] | None = None,
    decoding: Mapping[str, Any] | None = None,
    notes: str = "",
) -> ModelEndpoint:
    """Register a model, or update the registration of the same name; return it.

    Raise ValueError with a clear message when the name, backend, configuration or decoding
    parameters are wrong; the configuration is checked by building the backend. Decoding
    without ``max_new_tokens`` gets the backend's default written in (512 tokens for chat
    models, 40 for the short-turn dialogue models of the papers), so the limit that applies
    is stored, shown and hashed with the replies.
    """
    try:
        validate_slug(name)
    except ValidationError:
        raise ValueError(
            f"the model name {name!r} must be a slug (letters, digits, - and _)"
        ) from None
    if len(name) > 64:
        raise ValueError(f"the model name {name!r} is longer than 64 characters")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; known: {', '.join(sorted(BACKENDS))}")
    built = backend_load(backend, dict(config or {}))  # refuse a configuration it rejects
    decoding_validate(decoding)
    decoding = dict(decoding or {})
    decoding.setdefault("max_new_tokens", built.default_max_new_tokens)
    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=name,
        defaults={
            "backend": backend,
            "config": dict(config or {}),
            "decoding": decoding,
            "notes": notes,
        },
    )
    return endpoint


def endpoint_backend(endpoint: ModelEndpoint) -> Backend:
    """Return the endpoint's backend, built once per process and configuration, so a worker
    keeps its model loaded between tasks."""
    key = (endpoint.backend, json.dumps(endpoint.config, sort_keys=True))
    with _BACKENDS_LOCK:
        backend = _BACKENDS.pop(key, None) or backend_load(endpoint.backend, endpoint.config)
        _BACKENDS[key] = backend  # most recently used last
        while len(_BACKENDS) > BACKENDS_KEPT:
            del _BACKENDS[next(iter(_BACKENDS))]
        return backend


def _stored(endpoint: ModelEndpoint, decoding_hash: str, keys: Iterable[str]) -> dict[str, str]:
    keys = list(dict.fromkeys(keys))
    found: dict[str, str] = {}
    for start in range(0, len(keys), LOOKUP_CHUNK):
        found.update(
            Generation.objects.filter(
                endpoint=endpoint,
                decoding_hash=decoding_hash,
                context_hash__in=keys[start : start + LOOKUP_CHUNK],
            ).values_list("context_hash", "response")
        )
    return found


def generations_store(
    *, endpoint: ModelEndpoint, examples: Sequence[Example], replies: Sequence[Reply]
) -> None:
    """Store replies (text, finish reason, prompt format) in one transaction; a reply already
    stored is kept, never doubled."""
    decoding = decoding_validate(endpoint.decoding).as_dict()
    decoding_hash = _digest(decoding)
    with transaction.atomic():
        Generation.objects.bulk_create(
            [
                Generation(
                    endpoint=endpoint,
                    context_hash=example_key(e),
                    decoding_hash=decoding_hash,
                    context=e.as_dict(),
                    decoding=decoding,
                    response=r.text,
                    finish_reason=r.finish_reason,
                    prompt_format=r.prompt_format[:200],
                )
                for e, r in zip(examples, replies, strict=True)
            ],
            ignore_conflicts=True,
        )


def generations_ensure(*, endpoint: ModelEndpoint, examples: Sequence[Example]) -> list[str]:
    """Return the endpoint's response to each example, generating only the missing ones.

    Responses are stored under a unique (model, context, decoding) key, so running this again
    costs nothing and concurrent runs never store a response twice. It calls the model in the
    calling process: fine for rule-based and retrieval bots; big models go through
    ``generation_job_start`` (a Celery task on the ``inference`` queue).
    """
    decoding_hash = decoding_key(endpoint)
    keys = [example_key(e) for e in examples]
    stored = _stored(endpoint, decoding_hash, keys)
    todo = {k: e for k, e in zip(keys, examples, strict=True) if k not in stored}
    if todo:
        replies = endpoint_backend(endpoint).replies(list(todo.values()), endpoint.decoding)
        generations_store(endpoint=endpoint, examples=list(todo.values()), replies=replies)
        stored.update(_stored(endpoint, decoding_hash, todo))
    return [stored[k] for k in keys]


def generation_job_start(
    *,
    endpoint: ModelEndpoint,
    examples: Sequence[Example],
    label: str = "",
    batch_size: int = 32,
) -> GenerationJob:
    """Start a generation job: the endpoint answers each distinct context once; the job is
    queued on commit. Raise ValueError when the endpoint's decoding parameters or
    ``batch_size`` are wrong."""
    decoding_validate(endpoint.decoding)
    distinct = list({example_key(e): e.as_dict() for e in examples}.values())
    return job_start(
        endpoint=endpoint,
        kind=GenerationJob.Kind.GENERATION,
        examples=distinct,
        label=label,
        batch_size=batch_size,
    )


def generation_job_run(*, job_id: int, start: int = 0, budget_s: float = 240.0) -> int | None:
    """Generate the job's missing responses, a batch per transaction, until it is done or
    ``budget_s`` has been used; return the responses stored so far when time ran out, None
    when the job is finished. The generator's runner (``modelhub.jobs``).

    Idempotent: responses already stored are skipped, so a redelivered task (after a worker
    was killed) only does what is left; ``start`` is not needed for that and is ignored.
    Backend errors propagate to the task.
    """
    job = job_begin(job_id=job_id, kind=GenerationJob.Kind.GENERATION)
    if job is None:
        return None  # deleted, finished, or failed (job_retry queues it again)
    deadline = time.monotonic() + budget_s
    endpoint = job.endpoint
    examples = [Example.from_dict(d) for d in job.examples]
    keys = [example_key(e) for e in examples]
    done = set(_stored(endpoint, decoding_key(endpoint), keys))
    todo = [e for k, e in zip(keys, examples, strict=True) if k not in done]
    job_progress(job=job, done=len(done))
    backend = endpoint_backend(endpoint)
    for offset in range(0, len(todo), job.batch_size):
        batch = todo[offset : offset + job.batch_size]
        replies = backend.replies(batch, endpoint.decoding)
        with transaction.atomic():
            generations_store(endpoint=endpoint, examples=batch, replies=replies)
            done.update(example_key(e) for e in batch)
            job_progress(job=job, done=len(done))
        if offset + job.batch_size < len(todo) and time.monotonic() > deadline:
            return len(done)  # at least one batch per run, so every run makes progress
    stored = len(_stored(endpoint, decoding_key(endpoint), keys))  # recounted from the rows
    missing = "" if stored == job.total else f"only {stored} of {job.total} responses stored"
    job_finish(job=job, done=stored, error=missing)
    return None


def _conversation(turns: Sequence[str]) -> Example:
    if not turns or not all(isinstance(t, str) for t in turns):
        raise ValueError("a bot reply needs the conversation so far: a non-empty list of texts")
    return Example(turns=tuple(turns))


def bot_reply(*, endpoint: ModelEndpoint, turns: Sequence[str]) -> Reply:
    """Return the bot's next turn in a live chat (``turns``: the conversation so far, oldest
    first, the human's last). Nothing is stored here: the chat stores its own utterances."""
    example = _conversation(turns)
    return endpoint_backend(endpoint).replies([example], endpoint.decoding)[0]


def bot_stream(*, endpoint: ModelEndpoint, turns: Sequence[str]) -> Iterator[str | Reply]:
    """Yield the bot's next turn as the model writes it: text pieces, then the whole Reply
    (``Backend.stream``). Nothing is stored here; an error mid-stream loses the reply."""
    example = _conversation(turns)
    return endpoint_backend(endpoint).stream(example, endpoint.decoding)
