"""What the API reads and writes: pydantic schemas for bodies, queries and answers.

Bodies are checked here only for shape (types of the envelope, lengths that protect the
database); what a value may be is the services' business (``campaign_settings``, the
protocols), so a setting or payload refused by the dashboard is refused here with the same
message.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from ninja import Field, Path, Schema
from pydantic import ConfigDict

from annotation.campaign_settings import SETTINGS
from annotation.models import Campaign
from annotation.study_pages import STUDY_FIELDS
from dashboard.drafts.uploads import MAX_TURNS

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


_SETTINGS_HELP = "Settings by name (" + ", ".join(SETTINGS) + "), as the wizard takes them."


class CampaignIn(Body):
    slug: str = Field(max_length=64, description="1–64 lowercase letters, digits or '-'.")
    name: str = Field("", max_length=200)
    protocol: str = Field(max_length=32)
    parameters: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict, description=_SETTINGS_HELP)
    study: dict[str, Any] = Field(default_factory=dict, description="Study pages' texts.")


class CampaignUpdate(Body):
    settings: dict[str, Any] = Field(default_factory=dict, description=_SETTINGS_HELP)
    parameters: dict[str, Any] | None = Field(None, description="Only while a draft.")
    study: dict[str, Any] | None = None


class StatusIn(Body):
    status: Literal["live", "paused", "finished"] = Field(
        description="live: a draft is launched (the wizard's last step), a paused one resumes."
    )


class ItemIn(Body):
    key: str = Field(min_length=1, max_length=200)
    payload: dict[str, Any]
    gold: dict[str, Any] | None = Field(
        None, description="Accepted answers by question: a hidden gold check."
    )
    attention: bool = Field(False, description="An explicit attention check (with gold).")


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


class ExportIn(Body):
    what: Literal["judgments", "dialogues"] = "judgments"
    format: str = Field(max_length=16, description="judgments: csv, jsonl, parquet; dialogues: …")
    include_flagged: bool = False
    judges: bool = Field(
        default=False, description="The LLM judges' judgments instead of the crowd's (judgments)."
    )
    by_author: bool = False


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


class ApproveIn(Body):
    workers: list[str] | None = Field(
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
    backend: str = Field(
        max_length=32, description="generic_bot, gold, hf_local, openai_http, retrieval, …"
    )
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


class ContextIn(Body):
    id: str | None = Field(None, max_length=200, description="Default: ctx-<position>.")
    context: list[str] | str = Field(description="The turns, oldest first (or one text).")
    reference: str | None = Field(None, max_length=20_000)


class GenerationIn(Body):
    contexts: list[ContextIn] = Field(min_length=1, max_length=MAX_CONTEXTS_PER_JOB)
    max_turns: int = Field(
        3, ge=1, le=MAX_TURNS, description="Most turns a context may have (the wizard's limit)."
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


class DatasetExportQuery(Schema):
    format: str = Field(max_length=16, description="csv, jsonl, parquet or parlai.")


# --- webhooks (a campaign's endpoints and their deliveries) ----------------------------------


class WebhookIn(Body):
    url: str = Field(description="http(s), a public host, no credentials, at most 500 characters.")
    events: list[str] = Field(
        description="What it receives: assignment.submitted, campaign.finished, budget.low, "
        "job.done, worker.blocked."
    )


class WebhookOut(Schema):
    id: int
    url: str
    events: list[str]
    active: bool = Field(description="false once it answered 410 Gone; a redelivery turns it on.")
    secret_hint: str = Field(description="The secret's first characters, to tell them apart.")
    created_at: datetime


class WebhookCreated(WebhookOut):
    secret: str = Field(description="Signs every delivery; shown in this answer only.")


class WebhookPage(Schema):
    count: int
    results: list[WebhookOut]


class DeliveryOut(Schema):
    id: str = Field(description="The delivery id (X-Evalsite-Delivery): the same over retries.")
    event: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    last_status_code: int | None = Field(description="The receiver's last answer; null: none.")
    last_error: str
    created_at: datetime
    next_attempt_at: datetime
    delivered_at: datetime | None


class DeliveryPage(Schema):
    count: int
    limit: int
    offset: int
    results: list[DeliveryOut]
