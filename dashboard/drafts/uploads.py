"""Step 3's uploads: each file read from a temporary copy and checked, into plain records."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.files.uploadedfile import UploadedFile

from annotation.models import Campaign
from annotation.protocols import GoldChecks, Protocol, registry
from annotation.services import training_items_clean
from corpora.limits import UPLOADS, upload_check
from corpora.readers import (
    Context,
    read_contexts,
    read_gold_lines,
    read_jsonl_objects,
    read_responses,
    read_training_lines,
)
from corpora.records import DatasetError
from dashboard.drafts.cards import protocol_builds_items
from evalsite.errors import InvalidParameters
from modelhub.models import ModelEndpoint

MAX_UPLOAD_BYTES = UPLOADS.bytes
MAX_TURNS = 10
_FILE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class ItemsUpload:
    """What the researcher sent to the items step; every part is optional."""

    contexts: UploadedFile | None = None
    models: Sequence[str] = ()
    responses: UploadedFile | None = None
    items: UploadedFile | None = None
    gold: UploadedFile | None = None
    training: UploadedFile | None = None
    max_turns: int = 3


@dataclass
class Records:
    """An upload read and checked: plain JSON-able records (kept while models generate)."""

    contexts: list[Context] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    responses: dict[str, dict[str, str]] = field(default_factory=dict)
    items: list[tuple[str, Any]] = field(default_factory=list)
    gold: list[tuple[str, Any, Any, bool]] = field(default_factory=list)
    training: list[tuple[str, Any, Any, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "contexts": [[c.key, list(c.turns), c.reference] for c in self.contexts],
            "models": self.models,
            "responses": self.responses,
            "items": [list(i) for i in self.items],
            "gold": [list(g) for g in self.gold],
            "training": [list(t) for t in self.training],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Records:
        return cls(
            contexts=[Context(k, tuple(t), r) for k, t, r in data["contexts"]],
            models=list(data["models"]),
            responses=dict(data["responses"]),
            items=[(k, p) for k, p in data["items"]],
            # (key, payload, gold, is attention); drafts saved before attention checks: 3
            gold=[(k, p, g, bool(a and a[0])) for k, p, g, *a in data["gold"]],
            training=[(k, p, a, x) for k, p, a, x in data.get("training", [])],
        )


def _whole(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidParameters(f"{name} must be a whole number from {low} to {high}.")
    return value


def _read_upload(upload: UploadedFile, reader: Callable[[Path], Any]) -> Any:
    """Run ``reader`` on the upload saved under its own (sanitised) name, for its messages.

    The copy lives in a temporary folder for the length of the read; only the records it
    yields are kept. It is measured against ``corpora.limits.UPLOADS`` (bytes, lines, the
    longest line) before ``reader`` parses it, which bounds the time this request takes.
    """
    if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
        raise InvalidParameters(
            f"{upload.name}: the file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MB."
        )
    name = _FILE_NAME.sub("_", Path(upload.name or "upload").name)[-100:] or "upload"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        with path.open("wb") as handle:
            for chunk in upload.chunks():
                handle.write(chunk)
        try:
            upload_check(path, name)
            return reader(path)
        except DatasetError as exc:
            raise InvalidParameters(str(exc).replace(str(path), name)) from None


def records_read(campaign: Campaign, upload: ItemsUpload) -> Records:
    """Read and check every part of an upload; raise InvalidParameters naming the problem."""
    protocol = registry.get(campaign.protocol)
    if not (upload.contexts or upload.items or upload.gold or upload.training):
        raise InvalidParameters(
            "Choose a contexts file, an items file, a gold file or a training file."
        )
    records = Records(models=list(dict.fromkeys(upload.models)))
    if not upload.contexts and (records.models or upload.responses):
        raise InvalidParameters("Models and responses answer a contexts file: upload one too.")
    if upload.contexts:
        _contexts_read(protocol, upload, records)
    if upload.items:
        rows = _read_upload(upload.items, lambda p: read_jsonl_objects(p, ("key", "payload")))
        records.items = [(r["key"], r["payload"]) for r in rows]
    if upload.gold:
        records.gold = _read_upload(upload.gold, read_gold_lines)
    if upload.training:
        records.training = _read_upload(upload.training, read_training_lines)
    _payloads_check(protocol, protocol.clean_parameters(campaign.parameters), upload, records)
    if records.training:
        try:
            training_items_clean(campaign=campaign, items=records.training)
        except InvalidParameters as exc:
            name = upload.training.name if upload.training else "training"
            raise InvalidParameters(f"{name}: {exc.message}") from None
    return records


def _contexts_read(protocol: Protocol, upload: ItemsUpload, records: Records) -> None:
    assert upload.contexts is not None
    if not protocol_builds_items(protocol):
        raise InvalidParameters(
            f"{protocol.title} items are not built from contexts: upload an items file."
        )
    if not records.models and not upload.responses:
        raise InvalidParameters("Pick at least one model or upload a responses file.")
    max_turns = _whole("The most turns per context", upload.max_turns, 1, MAX_TURNS)
    records.contexts = _read_upload(
        upload.contexts, lambda p: read_contexts(p, max_turns=max_turns)
    )
    known = set(
        ModelEndpoint.objects.filter(name__in=records.models).values_list("name", flat=True)
    )
    unknown = [m for m in records.models if m not in known]
    if unknown:
        raise InvalidParameters(f"No registered model called {', '.join(unknown)}.")
    if upload.responses:
        records.responses = _read_upload(upload.responses, read_responses)


def _payloads_check(
    protocol: Protocol, parameters: Mapping[str, Any], upload: ItemsUpload, records: Records
) -> None:
    """Refuse the first item or gold record the protocol refuses, naming its file and line."""
    for n, (key, payload) in enumerate(records.items, start=1):
        try:
            protocol.clean_item(payload)
        except InvalidParameters as exc:
            name = upload.items.name if upload.items else "items"
            raise InvalidParameters(f"{name}, item {n} ({key}): {exc.message}") from None
    if not records.gold:
        return
    if not isinstance(protocol, GoldChecks):
        raise InvalidParameters(f"{protocol.title} takes no gold items.")
    for n, (key, payload, gold, _) in enumerate(records.gold, start=1):
        try:
            protocol.clean_item(payload)
            protocol.clean_gold(parameters, gold)
        except InvalidParameters as exc:
            name = upload.gold.name if upload.gold else "gold"
            raise InvalidParameters(f"{name}, gold item {n} ({key}): {exc.message}") from None
