"""What the API reads and writes: pydantic schemas for bodies, queries and answers.

Bodies are checked here only for shape (types of the envelope, lengths that protect the
database); what a value may be is the services' business (``campaign_settings``, the
protocols), so a setting or payload refused by the dashboard is refused here with the same
message.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from math import ceil, floor
from typing import TYPE_CHECKING, Annotated, Any, Literal

from django.conf import settings as site_settings
from ninja import Field, Path, Schema
from pydantic import (
    BeforeValidator,
    ConfigDict,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    create_model,
)

from annotation.campaign_settings import SETTINGS, Bound
from annotation.models import Campaign
from annotation.protocols import registry
from annotation.study_pages import STUDY_FIELDS
from corpora import WRITERS
from dashboard.drafts.uploads import MAX_TURNS
from dashboard.services import EXPORTS
from modelhub.backends import BACKENDS

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
# A path parameter's example goes in as ``example``: ninja copies a JSON Schema ``examples``
# list onto the parameter, where OpenAPI wants a map (openapi-spec-validator refuses it).
CampaignSlug = Path(
    ...,
    pattern=SLUG_PATTERN,
    description="The campaign's slug.",
    example="study-1",
)
PSEUDONYM_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
FILE_PATTERN = r"^[A-Za-z0-9_.-]{1,200}$"
MAX_ITEMS_PER_REQUEST = 10_000


def one_of(values: Any) -> Any:
    """A ``Literal`` of the names a service knows (its registry), so the schema lists them."""
    return Literal[tuple(values)]


ProtocolName = one_of(p.name for p in registry.all())
BackendName = one_of(sorted(BACKENDS))


class Body(Schema):
    """A request body: unknown fields are refused rather than silently ignored."""

    model_config = ConfigDict(extra="forbid")


class Page(Schema):
    """Pagination of a list: ``limit`` rows from ``offset``."""

    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=10_000_000)


class CampaignFilters(Page):
    status: Literal["draft", "live", "paused", "finished"] | None = None
    protocol: str | None = Field(None, max_length=32, pattern=r"^[a-z0-9_]{1,32}$")


class CampaignOut(Schema):
    slug: str
    name: str
    protocol: str
    status: str
    owner: str | None
    parameters: dict[str, Any]
    settings: dict[str, Any] = Field(
        description='Every setting of campaign_settings.SETTINGS; money as text ("0.50").'
    )
    study: dict[str, str] = Field(description="The study pages' texts (study_pages).")
    created_at: datetime
    updated_at: datetime


class CampaignPage(Schema):
    count: int
    limit: int
    offset: int
    results: list[CampaignOut]


def _json_value(value: Any) -> Any:
    return f"{value:.2f}" if isinstance(value, Decimal) else value


def campaign_out(campaign: Campaign) -> dict[str, Any]:
    """The campaign as the API shows it (owner by user name)."""
    return {
        "slug": campaign.slug,
        "name": campaign.name,
        "protocol": campaign.protocol,
        "status": campaign.status,
        "owner": campaign.owner.get_username() if campaign.owner else None,
        "parameters": campaign.parameters,
        "settings": {name: _json_value(getattr(campaign, name)) for name in SETTINGS},
        "study": {name: getattr(campaign, name) for name in STUDY_FIELDS},
        "created_at": campaign.created_at,
        "updated_at": campaign.updated_at,
    }


def _integral(value: Any) -> Any:
    """JSON Schema's integers include 2.0: read it as 2 (a boolean stays one, refused)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def whole(low: Any = None, high: Any = None) -> Any:
    """A whole number as JSON sends one (no text, no boolean, no fraction), in range: the
    bounds go on the integer, where the schema shows them, before 2.0 is read as 2."""
    return Annotated[StrictInt, Field(ge=low, le=high), BeforeValidator(_integral)]


def _setting_type(bound: Bound) -> Any:
    """The JSON type ``campaign_settings.value_clean`` accepts for ``bound``, with its range:
    a whole number is an integer, a number also a float, money an integer or text with at
    most two decimals (its bound's digits), a flag a boolean; an optional one also null."""
    if bound.kind == "flag":
        return StrictBool
    if bound.kind == "money":
        assert bound.low == 0, bound  # a pattern cannot say "more than 0"
        digits = len(str(int(bound.high)))
        text = StringConstraints(pattern=rf"^[0-9]{{1,{digits}}}(\.[0-9]{{1,2}})?$")
        kind: Any = Annotated[str, text] | whole(0, int(bound.high))
    elif bound.kind == "whole":
        kind = whole(bound.low, bound.high)
    else:  # each branch bounded: JSON Schema reads no bound beside an anyOf
        bounds = Field(ge=bound.low, le=bound.high)
        kind = Annotated[StrictFloat, bounds] | whole(ceil(bound.low), floor(bound.high))
    return kind | None if bound.optional else kind


def _omitted_only(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # may be left out, never sent as null (unless optional)


class _Fields(Body):
    """Settings or study texts: each may be left out; those sent are applied."""

    def sent(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


_SETTING_FIELDS: dict[str, Any] = {
    name: (
        _setting_type(bound),
        Field(None, description=bound.describe(), json_schema_extra=_omitted_only),
    )
    for name, bound in SETTINGS.items()
}
_STUDY_TYPES: dict[str, Any] = {
    "training_qualification": Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]*$")],
    "language": one_of(code for code, _name in site_settings.LANGUAGES),
}
_STUDY_FIELDS: dict[str, Any] = {
    name: (
        _STUDY_TYPES.get(name, str),
        Field(None, max_length=limit, json_schema_extra=_omitted_only),
    )
    for name, limit in STUDY_FIELDS.items()
}
if TYPE_CHECKING:  # built at run time from the services' tables; mypy sees their base
    SettingsIn = _Fields
    StudyIn = _Fields
else:
    SettingsIn = create_model(
        "SettingsIn",
        __base__=_Fields,
        __doc__="Settings by name, as the wizard takes them (campaign_settings.SETTINGS); "
        'money as text ("0.50") or a whole number.',
        **_SETTING_FIELDS,
    )
    StudyIn = create_model(
        "StudyIn",
        __base__=_Fields,
        __doc__="The study pages' texts (study_pages.STUDY_FIELDS).",
        **_STUDY_FIELDS,
    )


class CampaignIn(Body):
    slug: str = Field(pattern=SLUG_PATTERN, description="1–64 lowercase letters, digits or '-'.")
    name: str = Field("", max_length=200)
    protocol: ProtocolName  # type: ignore[valid-type]
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="The protocol's parameters, checked by the protocol."
    )
    settings: SettingsIn = Field(default_factory=SettingsIn)
    study: StudyIn = Field(default_factory=StudyIn)


class CampaignUpdate(Body):
    settings: SettingsIn = Field(
        default_factory=SettingsIn,
        description="Once launched, quality control and the budget only (409 otherwise).",
    )
    parameters: dict[str, Any] | None = Field(None, description="Only while a draft (409).")
    study: StudyIn | None = None


class StatusIn(Body):
    status: Literal["live", "paused", "finished"] = Field(
        description="live: a draft is launched (the wizard's last step), a paused one resumes."
    )


class ItemIn(Body):
    key: str = Field(min_length=1, max_length=200)
    payload: dict[str, Any]
    gold: dict[str, Any] | None = Field(
        None,
        min_length=1,
        description="Accepted answers by question: a hidden gold check.",
    )
    attention: StrictBool = Field(False, description="An explicit attention check (with gold).")


class ItemsIn(Body):
    items: list[ItemIn] = Field(min_length=1, max_length=MAX_ITEMS_PER_REQUEST)


class ItemsAdded(Schema):
    added: int = Field(
        description="New items (an item sent again with the same content is skipped)."
    )
    skipped: int = 0
    jobs: list[int] = Field(
        default_factory=list, description="Generation jobs the upload waits for, if any."
    )


class ProgressOut(Schema):
    slug: str
    status: str
    items: int
    needed: int
    done: int
    percent: int
    judgments: int
    workers_active: int
    spent: str
    budget: str
    per_hour: float
    eta: str
    report_judgments: int | None


class JobOut(Schema):
    id: int
    kind: str
    status: Literal["queued", "running", "done", "failed"]
    progress: float
    message: str
    error: str
    files: list[str] = Field(description="Download URLs, once the job is done.")
    created_at: datetime
    finished_at: datetime | None


ExportFormat = one_of(dict.fromkeys(EXPORTS["judgments"] + EXPORTS["dialogues"]))


class ExportIn(Body):
    what: Literal["judgments", "dialogues"] = "judgments"
    format: ExportFormat = Field(  # type: ignore[valid-type]
        description=f"judgments: {', '.join(EXPORTS['judgments'])}; "
        f"dialogues: {', '.join(EXPORTS['dialogues'])}."
    )
    include_flagged: StrictBool = False
    judges: StrictBool = Field(
        default=False, description="The LLM judges' judgments instead of the crowd's (judgments)."
    )
    by_author: StrictBool = False


class Table(Schema):
    columns: list[str]
    rows: list[list[Any]]


class Figure(Schema):
    png: str
    svg: str
    title: str = Field("", description="The figure's title.")
    alt: str = Field("", description="The alt text: what the figure shows, with its numbers.")


class ReportOut(Schema):
    job: int
    title: str
    judgments: int
    finished_at: datetime | None
    tables: dict[str, Table]
    figures: dict[str, Figure] = Field(description="Figure URLs by name.")
    notes: list[str]


class WorkersPage(Schema):
    count: int
    limit: int
    offset: int
    report_job: int | None = Field(description="The report snapshot the table comes from.")
    columns: list[str]
    rows: list[list[Any]]


class WorkerActionIn(Body):
    reason: str = Field("", max_length=2000)
    amount: str = Field("", max_length=32, description='A bonus, e.g. "0.50".')


Pseudonym = Annotated[str, StringConstraints(pattern=PSEUDONYM_PATTERN)]


class ApproveIn(Body):
    workers: list[Pseudonym] | None = Field(  # type: ignore[valid-type]
        None,
        min_length=1,
        max_length=5000,
        description="Pseudonyms; null: everyone with submitted work.",
    )


class Summary(Schema):
    summary: str


# --- models, generation jobs and data sets (site-wide: not owned by a campaign) --------------

NAME_PATTERN = r"^[-a-zA-Z0-9_]{1,64}$"
MAX_CONTEXTS_PER_JOB = 10_000


class ModelOut(Schema):
    name: str
    backend: str
    config: dict[str, Any]
    decoding: dict[str, Any] = Field(description="As registered; {}: greedy.")
    notes: str
    created_at: datetime


class ModelPage(Schema):
    count: int
    limit: int
    offset: int
    results: list[ModelOut]


class ModelIn(Body):
    backend: BackendName  # type: ignore[valid-type]
    config: dict[str, Any] = Field(
        default_factory=dict, description="The backend's options, checked by building it."
    )
    decoding: dict[str, Any] = Field(
        default_factory=dict, description='e.g. {"strategy": "sample", "top_p": 0.9}.'
    )
    preset: Literal["greedy", "meena"] | None = Field(
        None, description="A decoding preset; decoding keys override its values."
    )
    notes: str = Field("", max_length=5000)


Turn = Annotated[str, StringConstraints(pattern=r"\S")]


class ContextIn(Body):
    id: str | None = Field(None, max_length=200, description="Default: ctx-<position>.")
    context: list[Turn] | Turn = Field(  # type: ignore[valid-type]
        description="The turns, oldest first (or one text)."
    )
    reference: Turn | None = Field(None, max_length=20_000)


class GenerationIn(Body):
    contexts: list[ContextIn] = Field(min_length=1, max_length=MAX_CONTEXTS_PER_JOB)
    max_turns: whole(1, MAX_TURNS) = Field(  # type: ignore[valid-type]
        3, description="Most turns a context may have (the wizard's limit)."
    )
    label: str = Field("", max_length=200, description="What the job is for.")


class GenerationJobOut(Schema):
    id: int
    model: str
    label: str
    status: Literal["queued", "running", "done", "failed"]
    total: int = Field(description="Distinct contexts to answer.")
    done: int
    progress: float
    error: str
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class GenerationJobPage(Schema):
    count: int
    limit: int
    offset: int
    results: list[GenerationJobOut]


class ResponseOut(Schema):
    turns: list[str]
    reference: str | None
    response: str | None = Field(description="null until generated.")


class ResponsePage(Schema):
    count: int
    limit: int
    offset: int
    results: list[ResponseOut]


class DatasetOut(Schema):
    name: str
    format: str = Field(description="The reader that imported it.")
    description: str
    dialogues: int
    sources: dict[str, int] = Field(description="Dialogues by sub-source ('' when none).")
    splits: dict[str, int] = Field(description="Dialogues by split ('' when none).")
    created_at: datetime


class DatasetPage(Schema):
    count: int
    limit: int
    offset: int
    results: list[DatasetOut]


class DatasetImported(Schema):
    dataset: DatasetOut
    utterances: int
    replacements: int = Field(description="Spans de-identified (with deidentify).")


DatasetWriter = one_of(WRITERS)


class DatasetExportQuery(Schema):
    format: DatasetWriter  # type: ignore[valid-type]
