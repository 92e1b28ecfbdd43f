"""What the webhooks API reads and writes: a campaign's endpoints and their deliveries."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from api.schemas import Body, one_of
from webhooks.models import SUBSCRIBABLE

EventName = one_of(SUBSCRIBABLE)


# What ``transport.url_check`` accepts: http(s), a host (name, IPv4 or [IPv6]), a port, a path;
# whether the host's addresses are public is the service's check (400).
_HOST = r"([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])"
_PORT = (  # 1 to 65535
    r"(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
)
WEBHOOK_URL_PATTERN = rf"^https?://{_HOST}{_PORT}([/?#][!-~]*)?$"


class WebhookIn(Body):
    url: str = Field(
        max_length=500,
        pattern=WEBHOOK_URL_PATTERN,
        description="http(s), a public host, no credentials, at most 500 characters.",
    )
    events: list[EventName] = Field(  # type: ignore[valid-type]
        min_length=1,
        description="What it receives: assignment.submitted, campaign.finished, budget.low, "
        "job.done, worker.blocked.",
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
