"""The launch wizard's logic: a draft campaign from a protocol's published defaults, its
settings, its items, its cost and its going live on the local provider.

The wizard keeps its state in the database: the draft campaign itself (status DRAFT, owned by
its researcher) and, while registered models answer an uploaded context set, their
``GenerationJob`` rows plus the uploaded records in ``DATA_DIR/dashboard/wizard/<pk>.json``,
so a reload or coming back days later continues where the researcher left off. Every function
checks first and changes nothing when it refuses (``AnnotationError`` with a message).
"""

from __future__ import annotations

import inspect
import json
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from annotation.corpora import (
    Context,
    CorpusError,
    read_contexts,
    read_jsonl_objects,
    read_responses,
)
from annotation.exceptions import AnnotationError, Conflict, InvalidParameters, NotAllowed
from annotation.items import campaign_items_from_responses
from annotation.models import Campaign
from annotation.payments.launch import LaunchOptions, LaunchPreview, campaign_launch
from annotation.payments.launch import launch_preview as payments_launch_preview
from annotation.protocols import Protocol, registry
from annotation.services import (
    campaign_create,
    campaign_set_status,
    campaign_settings_update,
    items_add,
)
from modelhub.backends import Example
from modelhub.models import GenerationJob, ModelEndpoint
from modelhub.selectors import generations_lookup
from modelhub.services import generation_job_start

GO_LIVE_PROVIDER = "local"
ESTIMATE_PROVIDERS = ("local", "prolific", "mturk")
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
MAX_TURNS = 10
_FILE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")

# The campaign settings the wizard asks for besides the protocol's parameters.
SETTINGS = (
    "redundancy",
    "items_per_assignment",
    "min_seconds_per_item",
    "max_items_per_worker",
    "gold_rate",
    "gold_min_accuracy",
    "gold_min_answered",
    "reward",
    "budget",
)
_EXTRA_HELP = {
    "budget": "The most the campaign may spend, fees and bonuses included; going live is "
    "refused when the cost estimate does not fit.",
}


# --- protocols and their explained defaults ----------------------------------------------


@dataclass(frozen=True)
class Explained:
    """One pre-filled value and why it is what it is."""

    name: str
    value: Any
    help: str

    @property
    def as_json(self) -> str:
        return json.dumps(self.value, ensure_ascii=False)


@dataclass(frozen=True)
class ProtocolCard:
    """What the wizard shows of a protocol: its summary and its explained defaults."""

    name: str
    title: str
    summary: str
    needs_items: bool
    builds_items: bool
    parameters: tuple[Explained, ...]
    settings: tuple[Explained, ...]
    incomplete: str = ""  # what the defaults lack, if they cannot be used as they are


def protocol_needs_items(protocol: Protocol) -> bool:
    """Tell whether a campaign of ``protocol`` needs imported items before it goes live.

    Live chat protocols make their items while workers chat.
    """
    return not getattr(protocol, "live_chat", False)


def protocol_builds_items(protocol: Protocol) -> bool:
    """Tell whether the protocol turns contexts and model responses into items."""
    return getattr(type(protocol), "items_build", None) is not Protocol.items_build


def _summary(protocol: Protocol) -> str:
    module = inspect.getmodule(type(protocol))
    text = inspect.cleandoc((module.__doc__ if module else None) or type(protocol).__doc__ or "")
    return " ".join(text.split("\n\n")[0].split())


def _field(name: str) -> Any:
    return Campaign._meta.get_field(name)


def setting_defaults(protocol: Protocol) -> dict[str, Any]:
    """Return the campaign settings a new campaign of ``protocol`` starts with."""
    values = {name: _field(name).get_default() for name in SETTINGS}
    values["redundancy"] = getattr(protocol, "default_redundancy", values["redundancy"])
    values["items_per_assignment"] = getattr(
        protocol, "default_items_per_assignment", values["items_per_assignment"]
    )
    values["min_seconds_per_item"] = getattr(protocol, "default_min_seconds", 0.0)
    values["max_items_per_worker"] = getattr(protocol, "default_max_items_per_worker", None)
    return values


def setting_help(name: str) -> str:
    """Return the explanation of a campaign setting (the model field's help text)."""
    return _EXTRA_HELP.get(name) or str(_field(name).help_text)


def protocol_card(name: str) -> ProtocolCard:
    """Return the wizard's card for the protocol ``name``; refuse an unknown name."""
    try:
        protocol = registry.get(name)
    except KeyError as exc:
        raise InvalidParameters(f"Choose one of the protocols: {exc.args[0]}.") from None
    helps: Mapping[str, str] = getattr(protocol, "parameter_help", None) or {}
    defaults = setting_defaults(protocol)
    try:
        protocol.clean_parameters({})
        incomplete = ""
    except InvalidParameters as exc:
        incomplete = "; ".join(f"{k}: {v}" for k, v in exc.fields.items()) or exc.message
    return ProtocolCard(
        name=protocol.name,
        title=protocol.title,
        summary=_summary(protocol),
        needs_items=protocol_needs_items(protocol),
        builds_items=protocol_builds_items(protocol),
        parameters=tuple(
            Explained(key, value, helps.get(key, "The protocol's default."))
            for key, value in protocol.default_parameters().items()
        ),
        settings=tuple(Explained(key, defaults[key], setting_help(key)) for key in SETTINGS),
        incomplete=incomplete,
    )


def protocol_cards() -> list[ProtocolCard]:
    return [protocol_card(p.name) for p in registry.all()]


# --- the draft and its settings ----------------------------------------------------------


def draft_check(campaign: Campaign) -> None:
    """Refuse to change a campaign that is no longer a draft."""
    if campaign.status != Campaign.Status.DRAFT:
        raise Conflict(
            f"'{campaign.slug}' is {campaign.get_status_display().lower()}: the wizard only "
            "changes drafts."
        )


def draft_create(
    *,
    protocol: str,
    slug: str,
    name: str,
    owner: Any,
    parameters: Mapping[str, Any] | None = None,
) -> Campaign:
    """Create a draft campaign of ``protocol`` with its published defaults, owned by ``owner``.

    ``parameters`` completes defaults that cannot stand alone (interactive SSA's models).
    """
    protocol_card(protocol)  # a clear message for an unknown protocol
    if len(name) > 200:
        raise InvalidParameters("The name must be at most 200 characters.")
    return campaign_create(
        slug=slug,
        name=name.strip(),
        protocol=protocol,
        parameters=parameters or {},
        owner=owner,
        controls={
            "max_items_per_worker": setting_defaults(registry.get(protocol))["max_items_per_worker"]
        },
    )


def _whole(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidParameters(f"{name} must be a whole number from {low} to {high}.")
    return value


def draft_settings_update(
    *, campaign: Campaign, parameters: Mapping[str, Any], values: Mapping[str, Any]
) -> Campaign:
    """Set a draft's protocol parameters and its settings (``SETTINGS``), all or nothing."""
    draft_check(campaign)
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise InvalidParameters(f"Unknown setting(s): {', '.join(unknown)}.")
    return campaign_settings_update(campaign=campaign, values=values, parameters=parameters)


# --- items -------------------------------------------------------------------------------


@dataclass
class ItemsUpload:
    """What the researcher sent to the items step; every part is optional."""

    contexts: UploadedFile | None = None
    models: Sequence[str] = ()
    responses: UploadedFile | None = None
    items: UploadedFile | None = None
    gold: UploadedFile | None = None
    max_turns: int = 3


@dataclass
class _Records:
    """An upload read and checked: plain JSON-able records (kept while models generate)."""

    contexts: list[Context] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    responses: dict[str, dict[str, str]] = field(default_factory=dict)
    items: list[tuple[str, Any]] = field(default_factory=list)
    gold: list[tuple[str, Any, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "contexts": [[c.key, list(c.turns), c.reference] for c in self.contexts],
            "models": self.models,
            "responses": self.responses,
            "items": [list(i) for i in self.items],
            "gold": [list(g) for g in self.gold],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Records:
        return cls(
            contexts=[Context(k, tuple(t), r) for k, t, r in data["contexts"]],
            models=list(data["models"]),
            responses=dict(data["responses"]),
            items=[(k, p) for k, p in data["items"]],
            gold=[(k, p, g) for k, p, g in data["gold"]],
        )


@dataclass(frozen=True)
class ImportOutcome:
    """What an import did: items added now, or the generation jobs it is waiting for."""

    added: int = 0
    skipped: int = 0
    jobs: tuple[GenerationJob, ...] = ()


@dataclass(frozen=True)
class Pending:
    """An import waiting for registered models to answer its contexts."""

    jobs: tuple[GenerationJob, ...]
    contexts: int
    models: tuple[str, ...]

    @property
    def done(self) -> bool:
        return all(j.status == GenerationJob.Status.DONE for j in self.jobs)

    @property
    def failed(self) -> list[GenerationJob]:
        return [j for j in self.jobs if j.status == GenerationJob.Status.FAILED]

    @property
    def progress(self) -> float:
        total = sum(j.total for j in self.jobs)
        return sum(j.done for j in self.jobs) / total if total else 1.0


def _pending_path(campaign: Campaign) -> Path:
    return Path(settings.DATA_DIR) / "dashboard" / "wizard" / f"{campaign.pk}.json"


def _read_upload(upload: UploadedFile, reader: Callable[[Path], Any]) -> Any:
    """Run ``reader`` on the upload saved under its own (sanitised) name, for its messages."""
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
            return reader(path)
        except CorpusError as exc:
            raise InvalidParameters(str(exc).replace(str(path), name)) from None


def _records_read(campaign: Campaign, upload: ItemsUpload) -> _Records:
    """Read and check every part of an upload; raise InvalidParameters naming the problem."""
    protocol = registry.get(campaign.protocol)
    if not (upload.contexts or upload.items or upload.gold):
        raise InvalidParameters("Choose a contexts file, an items file or a gold file.")
    records = _Records(models=list(dict.fromkeys(upload.models)))
    if not upload.contexts and (records.models or upload.responses):
        raise InvalidParameters("Models and responses answer a contexts file: upload one too.")
    if upload.contexts:
        _contexts_read(protocol, upload, records)
    if upload.items:
        rows = _read_upload(upload.items, lambda p: read_jsonl_objects(p, ("key", "payload")))
        records.items = [(r["key"], r["payload"]) for r in rows]
    if upload.gold:
        rows = _read_upload(
            upload.gold, lambda p: read_jsonl_objects(p, ("key", "payload", "gold"))
        )
        records.gold = [(r["key"], r["payload"], r["gold"]) for r in rows]
    _payloads_check(protocol, protocol.clean_parameters(campaign.parameters), upload, records)
    return records


def _contexts_read(protocol: Protocol, upload: ItemsUpload, records: _Records) -> None:
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
    protocol: Protocol, parameters: Mapping[str, Any], upload: ItemsUpload, records: _Records
) -> None:
    """Refuse the first item or gold record the protocol refuses, naming its file and line."""
    for n, (key, payload) in enumerate(records.items, start=1):
        try:
            protocol.clean_item(payload)
        except InvalidParameters as exc:
            name = upload.items.name if upload.items else "items"
            raise InvalidParameters(f"{name}, item {n} ({key}): {exc.message}") from None
    for n, (key, payload, gold) in enumerate(records.gold, start=1):
        try:
            protocol.clean_item(payload)
            protocol.clean_gold(parameters, gold)
        except InvalidParameters as exc:
            name = upload.gold.name if upload.gold else "gold"
            raise InvalidParameters(f"{name}, gold item {n} ({key}): {exc.message}") from None


def _examples(contexts: Sequence[Context]) -> list[Example]:
    return [Example(turns=c.turns, reference=c.reference) for c in contexts]


def _missing(records: _Records) -> dict[str, list[Context]]:
    """Return, per registered model, the contexts it has no stored response to yet."""
    missing = {}
    for endpoint in ModelEndpoint.objects.filter(name__in=records.models):
        stored = generations_lookup(endpoint=endpoint, examples=_examples(records.contexts))
        todo = [c for c, r in zip(records.contexts, stored, strict=True) if r is None]
        if todo:
            missing[endpoint.name] = todo
    return missing


@transaction.atomic
def _records_add(campaign: Campaign, records: _Records) -> ImportOutcome:
    """Add every record's items in one transaction; the generations must all be stored."""
    added = skipped = 0
    if records.contexts:
        built = campaign_items_from_responses(
            campaign=campaign,
            contexts=records.contexts,
            models=records.models,
            responses=records.responses,
        )
        added, skipped = built.added, built.skipped
    if records.items:
        added += items_add(campaign=campaign, items=records.items)
    if records.gold:
        added += items_add(campaign=campaign, items=records.gold)
    return ImportOutcome(added=added, skipped=skipped)


def draft_items_import(*, campaign: Campaign, upload: ItemsUpload) -> ImportOutcome:
    """Import items into a draft: at once, or after registered models answered the contexts.

    Responses a model has not stored yet are generated by ``GenerationJob``s (Celery tasks on
    the ``inference`` queue, never in the web process); the checked upload waits beside the
    draft until ``draft_items_finish``. All or nothing: a refused upload adds nothing.
    """
    draft_check(campaign)
    protocol = registry.get(campaign.protocol)
    if not protocol_needs_items(protocol):
        raise InvalidParameters(f"{protocol.title} makes its items while workers chat.")
    if _pending_path(campaign).exists():
        raise Conflict("Models are still answering the last upload: add or cancel it first.")
    records = _records_read(campaign, upload)
    missing = _missing(records) if records.contexts else {}
    if not missing:
        return _records_add(campaign, records)
    jobs = []
    with transaction.atomic():
        for endpoint in ModelEndpoint.objects.filter(name__in=list(missing)).order_by("name"):
            try:
                job = generation_job_start(
                    endpoint=endpoint,
                    examples=_examples(missing[endpoint.name]),
                    label=f"wizard {campaign.slug}",
                )
            except ValueError as exc:
                raise InvalidParameters(f"Model {endpoint.name!r} cannot answer: {exc}") from None
            jobs.append(job)
        path = _pending_path(campaign)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = records.as_json() | {"jobs": [j.pk for j in jobs]}
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return ImportOutcome(jobs=tuple(jobs))


def draft_pending(campaign: Campaign) -> Pending | None:
    """Return the import waiting for generation jobs, or None."""
    path = _pending_path(campaign)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    jobs = tuple(GenerationJob.objects.filter(pk__in=data["jobs"]).order_by("pk"))
    return Pending(jobs=jobs, contexts=len(data["contexts"]), models=tuple(data["models"]))


def draft_items_finish(*, campaign: Campaign) -> ImportOutcome:
    """Add the items of the upload whose generation jobs have finished."""
    draft_check(campaign)
    pending = draft_pending(campaign)
    if pending is None:
        raise Conflict("There is no upload waiting for models.")
    if pending.failed:
        job = pending.failed[0]
        raise Conflict(
            f"Generation by {job.endpoint.name} failed ({job.error or 'no detail'}); cancel the "
            "upload and try again."
        )
    path = _pending_path(campaign)
    records = _Records.from_json(json.loads(path.read_text(encoding="utf-8")))
    if not pending.done or _missing(records):
        raise Conflict(f"The models are still answering ({pending.progress:.0%} done).")
    outcome = _records_add(campaign, records)
    path.unlink(missing_ok=True)
    return outcome


def draft_items_cancel(*, campaign: Campaign) -> None:
    """Forget the upload waiting for models (what they generate stays stored for later)."""
    draft_check(campaign)
    _pending_path(campaign).unlink(missing_ok=True)


# --- cost and going live -----------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A provider's cost estimate for the draft, or why there is none."""

    provider: str
    preview: LaunchPreview | None
    problem: str = ""

    @property
    def fits(self) -> bool:
        return self.preview is not None and (
            self.preview.committed + self.preview.total <= self.preview.budget
        )


def draft_estimates(campaign: Campaign) -> list[Estimate]:
    """Return what publishing the draft would cost on each provider; change nothing."""
    estimates = []
    for provider in ESTIMATE_PROVIDERS:
        try:
            preview = payments_launch_preview(
                campaign=campaign, options=LaunchOptions(provider=provider)
            )
        except AnnotationError as exc:
            estimates.append(Estimate(provider, None, exc.message))
        else:
            estimates.append(Estimate(provider, preview))
    return estimates


def draft_go_live(*, campaign: Campaign, actor: str) -> Campaign:
    """Publish the draft on the local provider within its budget and set it live.

    A live chat campaign has no items to publish: it goes live and workers arrive by its link.
    """
    draft_check(campaign)
    protocol = registry.get(campaign.protocol)
    if not protocol_needs_items(protocol):
        return campaign_set_status(campaign=campaign, status=Campaign.Status.LIVE)
    if draft_pending(campaign) is not None:
        raise Conflict("Models are still answering an upload: add or cancel it first.")
    if not campaign.items.filter(gold__isnull=True).exists():
        raise NotAllowed("Import the items first: the campaign has none to publish.")
    campaign_launch(
        campaign=campaign, options=LaunchOptions(provider=GO_LIVE_PROVIDER), actor=actor
    )
    campaign.refresh_from_db()
    return campaign
