"""Reads of the model side: stored responses and job progress."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from modelhub.backends import Example
from modelhub.models import Generation, GenerationJob, ModelEndpoint
from modelhub.services import decoding_key, example_key


def generations_lookup(*, endpoint: ModelEndpoint, examples: Sequence[Example]) -> list[str | None]:
    """Return the stored response to each example (None where there is none yet)."""
    keys = [example_key(e) for e in examples]
    stored = dict(
        Generation.objects.filter(
            endpoint=endpoint, decoding_hash=decoding_key(endpoint), context_hash__in=set(keys)
        ).values_list("context_hash", "response")
    )
    return [stored.get(k) for k in keys]


def generation_job_responses(*, job: GenerationJob) -> list[tuple[Example, str | None]]:
    """Return the job's examples, each with its stored response (None if not generated yet)."""
    examples = [Example.from_dict(d) for d in job.examples]
    return list(
        zip(examples, generations_lookup(endpoint=job.endpoint, examples=examples), strict=True)
    )


def generations_truncated(*, models: Iterable[str]) -> set[tuple[str, str]]:
    """Return (model name, reply text) of every reply of these models stored as cut at
    ``max_new_tokens`` (``finish_reason`` "length"): what a report needs to flag an item
    built from such a reply, whatever its protocol made of it."""
    return set(
        Generation.objects.filter(endpoint__name__in=list(models), finish_reason="length")
        .values_list("endpoint__name", "response")
        .distinct()
    )


def generations_prompt_formats(*, models: Iterable[str]) -> dict[str, list[str]]:
    """Return, per model, the prompt formats its stored replies were generated with (chat
    template hash and conversation format; replies stored before formats were recorded have
    none and are left out)."""
    formats: dict[str, list[str]] = {}
    rows = (
        Generation.objects.filter(endpoint__name__in=list(models))
        .exclude(prompt_format="")
        .values_list("endpoint__name", "prompt_format")
        .distinct()
        .order_by("endpoint__name", "prompt_format")
    )
    for model, prompt_format in rows:
        formats.setdefault(model, []).append(prompt_format)
    return formats
