"""Webhooks: registrations (`POST /webhooks` ...), their delivery log, and what a delivery carries."""

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator

from synapse.core.models.base import Body, MindId, Model, Timestamp


class EventType(StrEnum):
    """The event types of MemoryBus a webhook may ask for (API.md, "Events and webhooks")."""

    memory_created = "memory.created"
    memory_updated = "memory.updated"
    memory_deleted = "memory.deleted"
    memory_verified = "memory.verified"
    memory_restored = "memory.restored"
    memory_superseded = "memory.superseded"
    proposal_created = "proposal.created"
    summary_created = "summary.created"
    mind_deleted = "mind.deleted"


TEST_EVENT = "webhook.test"  # sent by POST /webhooks/{id}/test whatever the webhook's events

Url = Annotated[str, StringConstraints(min_length=8, max_length=2048)]


class WebhookIn(Body):
    url: Url = Field(
        description="https to a public address (checked now and at every delivery); redirects not followed",
        examples=["https://example.com/synapse-hook"],
    )
    events: list[EventType] | None = Field(
        default=None, max_length=len(EventType), description="The event types to deliver; none: all"
    )
    mind_id: MindId | None = Field(default=None, description="Only this mind's events; none: every mind")

    @field_validator("events")
    @classmethod
    def _unique(cls, events: list[EventType] | None) -> list[EventType] | None:
        return sorted(set(events)) if events else None


class WebhookInfo(Model):
    webhook_id: str
    url: str
    events: list[str] = Field(description="The event types delivered (every type when registered without)")
    mind_id: str | None = Field(description="The one mind whose events are delivered; null: every mind")
    created_at: Timestamp
    disabled_at: Timestamp | None = Field(
        default=None, description="When deliveries stopped after failing for 5 days; null: active"
    )


class WebhookCreated(Model):
    webhook_id: str
    url: str
    events: list[str]
    mind_id: str | None
    secret: str = Field(
        description="`whsec_` + base64: the signing secret (Standard Webhooks), in this answer only"
    )
    created_at: Timestamp


class WebhookList(Model):
    webhooks: list[WebhookInfo]


class DeliveryAttempt(Model):
    event_id: str = Field(description="The `webhook-id` header: the same on every attempt of one event")
    type: str
    attempt: int = Field(description="1 for the first attempt, then each retry")
    status_code: int | None = Field(description="The receiver's HTTP status; null: no answer")
    error: str | None = Field(
        description="Why the attempt failed (a short excerpt of the receiver's answer at most); null: success"
    )
    at: Timestamp


class DeliveryList(Model):
    deliveries: list[DeliveryAttempt]


WebhookId = Annotated[str, StringConstraints(pattern=r"^wh_[a-z0-9]{16}$")]
