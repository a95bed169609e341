"""What the sync and async clients share: the routes as request descriptions, parsing, retries.

A route method here returns a `Call`: method, path, query, body, headers, how to read the answer and
whether the request may be sent again after a network failure. The clients only send calls.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import random
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, Final, Generic, Protocol, TypeVar
from urllib.parse import quote

import httpx
import pydantic
from pydantic import BaseModel, TypeAdapter

from synapse_memory import errors
from synapse_memory.models import (
    ApiKey,
    ApiKeyCreated,
    Consolidated,
    ContextResult,
    DeliveryAttempt,
    Export,
    ExportJob,
    ExportStarted,
    Health,
    IdentityResult,
    IngestResult,
    Memory,
    MemoryChanges,
    MemoryPage,
    MemoryVersion,
    Message,
    Mind,
    MindCreated,
    Proposal,
    ProposalPage,
    Provider,
    RecallResult,
    ScoredMemory,
    SummaryChunk,
    SummaryResult,
    Webhook,
    WebhookCreated,
)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT: Final = 30.0
DEFAULT_MAX_RETRIES: Final = 2
MIND_HEADER: Final = "X-Mind-Id"
IDEMPOTENCY_HEADER: Final = "Idempotency-Key"
# methods whose repeat has the effect of one request (RFC 9110): sent again after a broken connection
IDEMPOTENT_METHODS: Final = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRY_STATUSES: Final = frozenset({429, 503})


class Unset(enum.Enum):
    """The type of `UNSET`: a field of `update` that is not sent (None sends null)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = Unset.UNSET


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries of 429 and 503 answers (and of network failures where that is safe).

    `max_retries` extra attempts at most. A `Retry-After` the server sends is honoured when it is at
    most `max_retry_after` seconds; longer than that, the error is raised at once (its
    `.retry_after` says how long the server asked for). Without one, the waits are `backoff`,
    2 × `backoff`, ... up to `max_backoff`, each with jitter (between half and all of it).
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")

    def wait(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before attempt `attempt + 1` (0-based), or None: do not retry."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return max(0.0, retry_after) if retry_after <= self.max_retry_after else None
        full = min(self.max_backoff, self.backoff * (2.0**attempt))
        return full * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not cryptography


@dataclass
class Call(Generic[T]):
    """One request, as sent (every attempt of it sends the same, Idempotency-Key included)."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: dict[str, str] | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    # sent again after a network failure that may have reached the server
    replayable: bool = False
    # 409 is "the same ingest is being processed": worth a retry for ingest only
    retry_conflict: bool = False

    def __post_init__(self) -> None:
        self.replayable = self.replayable or self.method in IDEMPOTENT_METHODS

    def content(self) -> bytes | None:
        if self.body is None:
            return None
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode()


# --- reading answers -----------------------------------------------------------------------------


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise errors.SynapseResponseError(
            f"The server answered HTTP {response.status_code} with a body that is not JSON.",
            status=response.status_code,
            method=response.request.method,
            path=response.request.url.path,
        ) from exc


def _bad_shape(response: httpx.Response, exc: pydantic.ValidationError) -> errors.SynapseResponseError:
    problems = exc.errors(include_url=False, include_input=False)
    first = problems[0] if problems else {"loc": (), "msg": "invalid"}
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return errors.SynapseResponseError(
        f"The server's answer does not match the contract at {where}: {first['msg']}.",
        status=response.status_code,
        details=[{"loc": list(p["loc"]), "msg": p["msg"]} for p in problems],
        method=response.request.method,
        path=response.request.url.path,
    )


def model(cls: type[M]) -> Callable[[httpx.Response], M]:
    def read(response: httpx.Response) -> M:
        try:
            return cls.model_validate(_json(response))
        except pydantic.ValidationError as exc:
            raise _bad_shape(response, exc) from None

    return read


def items(item: type[M], key: str) -> Callable[[httpx.Response], list[M]]:
    """The list under `key` of a JSON object (`{"memories": [...]}` → list[Memory])."""
    adapter = TypeAdapter(list[item])  # type: ignore[valid-type]

    def read(response: httpx.Response) -> list[M]:
        data = _json(response)
        if not isinstance(data, dict) or key not in data:
            raise errors.SynapseResponseError(
                f'The server\'s answer has no "{key}" list.',
                status=response.status_code,
                method=response.request.method,
                path=response.request.url.path,
            )
        try:
            result: list[M] = adapter.validate_python(data[key])
        except pydantic.ValidationError as exc:
            raise _bad_shape(response, exc) from None
        return result

    return read


def raw(response: httpx.Response) -> dict[str, Any]:
    """The JSON object as answered (`batch`'s per-item results, `import`'s counts)."""
    data = _json(response)
    if not isinstance(data, dict):
        raise errors.SynapseResponseError(
            "The server's answer is not a JSON object.",
            status=response.status_code,
            method=response.request.method,
        )
    return data


def nothing(response: httpx.Response) -> None:
    return None


def _proposal(response: httpx.Response) -> Proposal:
    data = _json(response)
    try:
        return Proposal.model_validate(data["proposal"] if isinstance(data, dict) else data)
    except (KeyError, pydantic.ValidationError) as exc:
        if isinstance(exc, pydantic.ValidationError):
            raise _bad_shape(response, exc) from None
        raise errors.SynapseResponseError(
            'The server\'s 202 answer has no "proposal".',
            status=response.status_code,
            method=response.request.method,
            path=response.request.url.path,
        ) from None


def memory_or_proposal(response: httpx.Response) -> Memory | Proposal:
    """A write's answer: the memory, or (202, Review) the proposal an agent's change of a verified
    memory became."""
    return _proposal(response) if response.status_code == 202 else model(Memory)(response)


def gone_or_proposal(response: httpx.Response) -> Proposal | None:
    """A deletion's answer: None (204), or (202, Review) the proposal it became."""
    return _proposal(response) if response.status_code == 202 else None


def memory_or_nothing(response: httpx.Response) -> Memory | None:
    """Accepting a proposal: the memory (200), or None when a deletion was accepted (204)."""
    return None if response.status_code == 204 else model(Memory)(response)


def text(response: httpx.Response) -> str:
    return response.text


def deleted_count(response: httpx.Response) -> int:
    data = _json(response)
    if not isinstance(data, dict) or not isinstance(data.get("deleted"), int):
        raise errors.SynapseResponseError(
            'The server\'s answer to DELETE /me has no integer "deleted".',
            status=response.status_code,
            method=response.request.method,
            path=response.request.url.path,
        )
    return int(data["deleted"])


def retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (a number or an HTTP date), or None."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def error_of(response: httpx.Response) -> errors.SynapseError:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    return errors.from_answer(
        response.status_code,
        body,
        response.text,
        retry_after=retry_after(response),
        method=response.request.method,
        path=response.request.url.path,
    )


def should_retry(call: Call[Any], error: errors.SynapseError) -> bool:
    if error.status in RETRY_STATUSES:
        return True
    return call.retry_conflict and error.status == 409


def network_error(exc: httpx.TransportError, call: Call[Any], base_url: str) -> errors.SynapseConnectionError:
    what = f"{call.method} {call.path}"
    if isinstance(exc, httpx.TimeoutException):
        return errors.SynapseTimeout(
            f"No answer from {base_url} in time ({type(exc).__name__}).", method=call.method, path=call.path
        )
    reason = str(exc) or type(exc).__name__
    return errors.SynapseConnectionError(
        f"Could not complete {what} at {base_url}: {type(exc).__name__}: {reason}",
        method=call.method,
        path=call.path,
    )


def may_resend(call: Call[Any], exc: httpx.TransportError) -> bool:
    """A failure before the request left (no connection) is safe to retry for every request; after
    that, only for requests whose repeat does no harm."""
    never_sent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    return never_sent or call.replayable


# --- building requests ---------------------------------------------------------------------------


def _segment(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("a path parameter must be a non-empty string")
    return quote(value, safe="")


def _query(**values: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        else:
            out[name] = str(value)
    return out


def _timestamp(value: datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def _day_or_moment(value: date | datetime | str | None) -> str | None:
    """`valid_at`, `from`, `to`: a datetime as a UTC timestamp, a date as `YYYY-MM-DD` (00:00 of that
    day in the mind's timezone, on the server), a string as given."""
    if isinstance(value, datetime):
        return _timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def time_fields(
    reference_time: datetime | str | None, timezone: str | None, as_of: datetime | str | None
) -> dict[str, str]:
    """The time fields of a recall or context body: only those given are sent."""
    fields = {
        "reference_time": _timestamp(reference_time),
        "timezone": timezone,
        "as_of": _timestamp(as_of),
    }
    return {name: value for name, value in fields.items() if value is not None}


def _window(within: str | timedelta) -> str:
    if isinstance(within, str):
        return within
    minutes = int(within.total_seconds() // 60)
    if minutes < 1:
        raise ValueError("within must be at least one minute")
    return f"{minutes}m"


MessageLike = Message | Mapping[str, Any]


def messages_body(messages: Iterable[MessageLike]) -> list[dict[str, str]]:
    """The messages as the body sends them; `created_at` (a datetime, or RFC 3339 text) only when given."""
    out: list[dict[str, str]] = []
    for message in messages:
        role: str
        if isinstance(message, Message):
            role, content, said = message.role, message.content, message.created_at
        elif isinstance(message, Mapping):
            try:
                role, content = str(message["role"]), str(message["content"])
            except KeyError as exc:
                raise ValueError(f"a message needs 'role' and 'content' (missing {exc})") from None
            said = message.get("created_at")
        else:
            raise TypeError(f"a message is a Message or a mapping, not {type(message).__name__}")
        if said is not None and not isinstance(said, (datetime, str)):
            raise TypeError(
                f"a message's created_at is a datetime or RFC 3339 text, not {type(said).__name__}"
            )
        one = {"role": role, "content": content}
        if said is not None:
            one["created_at"] = str(_timestamp(said))
        out.append(one)
    return out


def jwt_subject(token: str | None) -> str | None:
    """The `sub` of a JWT, read without checking it (the server checks it); None for an API key."""
    if not token or token.count(".") != 2:
        return None
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, binascii.Error):
        return None
    sub = claims.get("sub") if isinstance(claims, dict) else None
    return sub if isinstance(sub, str) else None


class Routes:
    """Every route of the contract, as `Call`s; `mind_id` is the client's default mind."""

    def __init__(self, mind_id: str | None, token: str | None) -> None:
        self.mind_id = mind_id
        self._token = token

    def _mind(self, mind_id: str | None) -> dict[str, str]:
        chosen = mind_id if mind_id is not None else self.mind_id
        return {MIND_HEADER: chosen} if chosen else {}

    # --- structured memory
    def store(
        self,
        category: str,
        key: str,
        content: str,
        tags: Sequence[str] | None,
        priority: str | None,
        confidence: float | None,
        expires_at: datetime | str | None,
        mind_id: str | None,
        valid_at: date | datetime | str | None = None,
    ) -> Call[Memory | Proposal]:
        body: dict[str, Any] = {"category": category, "key": key, "content": content}
        if tags is not None:
            body["tags"] = list(tags)
        if priority is not None:
            body["priority"] = priority
        if confidence is not None:
            body["confidence"] = confidence
        if expires_at is not None:
            body["expires_at"] = _timestamp(expires_at)
        if valid_at is not None:
            body["valid_at"] = _day_or_moment(valid_at)
        return Call("POST", "/memory", memory_or_proposal, body=body, headers=self._mind(mind_id))

    def get(self, memory_id: str, mind_id: str | None, as_of: datetime | str | None = None) -> Call[Memory]:
        params = _query(as_of=_timestamp(as_of))
        path = f"/memory/{_segment(memory_id)}"
        return Call("GET", path, model(Memory), params=params, headers=self._mind(mind_id))

    def list_page(
        self,
        category: str | None,
        tag: str | None,
        source: str | None,
        verified: bool | None,
        limit: int | None,
        cursor: str | None,
        mind_id: str | None,
        as_of: datetime | str | None = None,
        include: str | None = None,
    ) -> Call[MemoryPage]:
        params = _query(
            category=category,
            tag=tag,
            source=source,
            verified=verified,
            limit=limit,
            cursor=cursor,
            as_of=_timestamp(as_of),
            include=include,
        )
        return Call("GET", "/memory", model(MemoryPage), params=params, headers=self._mind(mind_id))

    def update(self, memory_id: str, fields: dict[str, Any], mind_id: str | None) -> Call[Memory | Proposal]:
        body: dict[str, Any] = {}
        for name, value in fields.items():
            if value is UNSET:
                continue
            if name == "tags" and value is not None:
                value = list(value)
            if name == "expires_at":
                value = _timestamp(value)
            if name == "valid_at":
                value = _day_or_moment(value)
            body[name] = value
        return Call(
            "PUT",
            f"/memory/{_segment(memory_id)}",
            memory_or_proposal,
            body=body,
            headers=self._mind(mind_id),
        )

    def timeline(
        self,
        start: date | datetime | str | None,
        end: date | datetime | str | None,
        limit: int | None,
        cursor: str | None,
        mind_id: str | None,
    ) -> Call[MemoryPage]:
        params = _query(
            **{"from": _day_or_moment(start), "to": _day_or_moment(end)}, limit=limit, cursor=cursor
        )
        return Call("GET", "/memory/timeline", model(MemoryPage), params=params, headers=self._mind(mind_id))

    def delete(self, memory_id: str, mind_id: str | None) -> Call[Proposal | None]:
        return Call("DELETE", f"/memory/{_segment(memory_id)}", gone_or_proposal, headers=self._mind(mind_id))

    def verify(self, memory_id: str, mind_id: str | None) -> Call[Memory]:
        path = f"/memory/{_segment(memory_id)}/verify"
        return Call("POST", path, model(Memory), headers=self._mind(mind_id))

    def history(self, memory_id: str, mind_id: str | None) -> Call[list[MemoryVersion]]:
        path = f"/memory/{_segment(memory_id)}/history"
        return Call("GET", path, items(MemoryVersion, "versions"), headers=self._mind(mind_id))

    def restore(self, memory_id: str, version: int, mind_id: str | None) -> Call[Memory | Proposal]:
        path = f"/memory/{_segment(memory_id)}/restore"
        return Call("POST", path, memory_or_proposal, body={"version": version}, headers=self._mind(mind_id))

    # --- review (users only)
    def proposals(self, limit: int | None, cursor: str | None, mind_id: str | None) -> Call[ProposalPage]:
        params = _query(limit=limit, cursor=cursor)
        return Call(
            "GET", "/memory/proposals", model(ProposalPage), params=params, headers=self._mind(mind_id)
        )

    def accept(self, proposal_id: str, edits: dict[str, Any], mind_id: str | None) -> Call[Memory | None]:
        body = {k: (_timestamp(v) if k in ("expires_at", "valid_at") else v) for k, v in edits.items()}
        path = f"/memory/proposals/{_segment(proposal_id)}/accept"
        return Call("POST", path, memory_or_nothing, body=body or None, headers=self._mind(mind_id))

    def decline(self, proposal_id: str, mind_id: str | None) -> Call[None]:
        path = f"/memory/proposals/{_segment(proposal_id)}/decline"
        return Call("POST", path, nothing, headers=self._mind(mind_id))

    def by_tag(self, tag: str, mind_id: str | None) -> Call[list[Memory]]:
        return Call(
            "GET",
            "/memory/by-tag",
            items(Memory, "memories"),
            params={"tag": tag},
            headers=self._mind(mind_id),
        )

    def search(
        self, q: str, tag: str | None, limit: int | None, mind_id: str | None
    ) -> Call[list[ScoredMemory]]:
        params = _query(q=q, tag=tag, limit=limit)
        return Call(
            "GET",
            "/memory/search",
            items(ScoredMemory, "memories"),
            params=params,
            headers=self._mind(mind_id),
        )

    def expiring(self, within: str | timedelta | None, mind_id: str | None) -> Call[list[Memory]]:
        params = _query(within=_window(within) if within is not None else None)
        return Call(
            "GET", "/memory/expiring", items(Memory, "memories"), params=params, headers=self._mind(mind_id)
        )

    def recall_text(
        self, category: str | None, tag: str | None, limit: int | None, mind_id: str | None
    ) -> Call[str]:
        params = _query(category=category, tag=tag, limit=limit)
        return Call("GET", "/memory/recall", text, params=params, headers=self._mind(mind_id))

    # --- conversational memory
    def recall(
        self,
        query: str,
        limit: int | None,
        category: str | None,
        tags: Sequence[str] | None,
        mind_id: str | None,
        time: Mapping[str, str] | None = None,
    ) -> Call[RecallResult]:
        body: dict[str, Any] = {"query": query, **(time or {})}
        if limit is not None:
            body["limit"] = limit
        if category is not None:
            body["category"] = category
        if tags is not None:
            body["tags"] = list(tags)
        # a read: sending it again does no harm
        return Call(
            "POST",
            "/memory/recall",
            model(RecallResult),
            body=body,
            headers=self._mind(mind_id),
            replayable=True,
        )

    def ingest(
        self,
        session_id: str,
        messages: Iterable[MessageLike],
        idempotency_key: str | None,
        mind_id: str | None,
        timezone: str | None = None,
    ) -> Call[IngestResult]:
        headers = {**self._mind(mind_id), IDEMPOTENCY_HEADER: idempotency_key or str(uuid.uuid4())}
        body: dict[str, Any] = {"sessionId": session_id, "messages": messages_body(messages)}
        if timezone is not None:
            body["timezone"] = timezone
        # the Idempotency-Key makes a repeat the same ingest (the server answers it with the first answer)
        return Call(
            "POST",
            "/memory/ingest",
            model(IngestResult),
            body=body,
            headers=headers,
            replayable=True,
            retry_conflict=True,
        )

    def summarize(
        self,
        session_id: str,
        messages: Iterable[MessageLike] | None,
        mind_id: str | None,
        timezone: str | None = None,
    ) -> Call[SummaryResult]:
        body: dict[str, Any] = {"sessionId": session_id}
        if messages is not None:
            body["messages"] = messages_body(messages)
        if timezone is not None:
            body["timezone"] = timezone
        return Call("POST", "/memory/summarize", model(SummaryResult), body=body, headers=self._mind(mind_id))

    def context(
        self,
        query: str,
        session_id: str | None,
        limit: int | None,
        recent: int | None,
        mind_id: str | None,
        time: Mapping[str, str] | None = None,
    ) -> Call[ContextResult]:
        body: dict[str, Any] = {"query": query, **(time or {})}
        if session_id is not None:
            body["sessionId"] = session_id
        if limit is not None:
            body["limit"] = limit
        if recent is not None:
            body["recent"] = recent
        return Call(
            "POST",
            "/memory/context",
            model(ContextResult),
            body=body,
            headers=self._mind(mind_id),
            replayable=True,
        )

    def summaries(self, session_id: str, mind_id: str | None) -> Call[list[SummaryChunk]]:
        path = f"/memory/summaries/{_segment(session_id)}"
        return Call("GET", path, items(SummaryChunk, "summaries"), headers=self._mind(mind_id))

    def identity(self, user_id: str | None, mind_id: str | None) -> Call[IdentityResult]:
        who = user_id or jwt_subject(self._token)
        if not who:
            raise ValueError(
                "identity() needs user_id when the client uses an API key (a key does not say whose it is)"
            )
        path = f"/memory/identity/{_segment(who)}"
        return Call("GET", path, model(IdentityResult), headers=self._mind(mind_id))

    # --- minds (user only; no X-Mind-Id)
    def create_mind(
        self,
        name: str,
        description: str | None,
        timezone: str | None = None,
        review_agent_changes: bool | None = None,
    ) -> Call[MindCreated]:
        body: dict[str, Any] = {"name": name}
        if description is not None:
            body["description"] = description
        if timezone is not None:
            body["timezone"] = timezone
        if review_agent_changes is not None:
            body["review_agent_changes"] = review_agent_changes
        return Call("POST", "/minds", model(MindCreated), body=body)

    def update_mind(self, mind_id: str, fields: dict[str, Any]) -> Call[MindCreated]:
        body = {name: value for name, value in fields.items() if value is not UNSET}
        return Call("PATCH", f"/minds/{_segment(mind_id)}", model(MindCreated), body=body)

    def minds(self) -> Call[list[Mind]]:
        return Call("GET", "/minds", items(Mind, "minds"))

    def delete_mind(self, mind_id: str) -> Call[None]:
        return Call("DELETE", f"/minds/{_segment(mind_id)}", nothing)

    def consolidate(self, mind_id: str) -> Call[Consolidated]:
        return Call("POST", f"/minds/{_segment(mind_id)}/consolidate", model(Consolidated))

    # --- keys, providers, privacy (user only)
    def create_key(self, name: str, scopes: Sequence[str], mind_id: str | None) -> Call[ApiKeyCreated]:
        if isinstance(scopes, str):
            scopes = [scopes]
        body: dict[str, Any] = {"name": name, "scopes": list(scopes)}
        if mind_id is not None:
            body["mind_id"] = mind_id
        return Call("POST", "/keys", model(ApiKeyCreated), body=body)

    def keys(self) -> Call[list[ApiKey]]:
        return Call("GET", "/keys", items(ApiKey, "keys"))

    def revoke_key(self, key_id: str) -> Call[None]:
        return Call("DELETE", f"/keys/{_segment(key_id)}", nothing)

    def set_provider(self, provider: str, api_key: str) -> Call[Provider]:
        return Call("PUT", f"/providers/{_segment(provider)}", model(Provider), body={"api_key": api_key})

    def providers(self) -> Call[list[Provider]]:
        return Call("GET", "/providers", items(Provider, "providers"))

    def delete_provider(self, provider: str) -> Call[None]:
        return Call("DELETE", f"/providers/{_segment(provider)}", nothing)

    def changes(self, after: int, limit: int | None, mind_id: str | None) -> Call[MemoryChanges]:
        params = _query(after=after, limit=limit)
        return Call(
            "GET", "/memory/changes", model(MemoryChanges), params=params, headers=self._mind(mind_id)
        )

    def create_webhook(
        self, url: str, events: Sequence[str] | None, mind_id: str | None
    ) -> Call[WebhookCreated]:
        body: dict[str, Any] = {"url": url}
        if events is not None:
            body["events"] = list(events)
        if mind_id is not None:
            body["mind_id"] = mind_id
        return Call("POST", "/webhooks", model(WebhookCreated), body=body)

    def webhooks(self) -> Call[list[Webhook]]:
        return Call("GET", "/webhooks", items(Webhook, "webhooks"))

    def delete_webhook(self, webhook_id: str) -> Call[None]:
        return Call("DELETE", f"/webhooks/{_segment(webhook_id)}", nothing)

    def test_webhook(self, webhook_id: str) -> Call[None]:
        return Call("POST", f"/webhooks/{_segment(webhook_id)}/test", nothing)

    def webhook_deliveries(self, webhook_id: str, limit: int | None) -> Call[list[DeliveryAttempt]]:
        path = f"/webhooks/{_segment(webhook_id)}/deliveries"
        return Call("GET", path, items(DeliveryAttempt, "deliveries"), params=_query(limit=limit))

    def export(self) -> Call[Export]:
        return Call("GET", "/me/export", model(Export))

    def create_export(self) -> Call[ExportStarted]:
        # asking again while an export is being written answers that export: a repeat is harmless
        return Call("POST", "/me/exports", model(ExportStarted), replayable=True)

    def get_export(self, export_id: str) -> Call[ExportJob]:
        return Call("GET", f"/me/exports/{_segment(export_id)}", model(ExportJob))

    # --- many memories at once (replayable: both write by key, so a repeat changes nothing new)
    def batch(self, memories: Sequence[Mapping[str, Any]], mind_id: str | None) -> Call[dict[str, Any]]:
        body = {"memories": [dict(m) for m in memories]}
        return Call("POST", "/memory/batch", raw, body=body, headers=self._mind(mind_id), replayable=True)

    def import_records(
        self, format: str, records: Sequence[Any], mind_id: str | None
    ) -> Call[dict[str, Any]]:
        body = {"format": format, "records": list(records)}
        return Call("POST", "/memory/import", raw, body=body, headers=self._mind(mind_id), replayable=True)

    def delete_me(self) -> Call[int]:
        return Call("DELETE", "/me", deleted_count)

    def health(self) -> Call[Health]:
        return Call("GET", "/health", model(Health))


# --- exports of any size (POST /me/exports, then the file's presigned URL) --------------------------

# past the writer's 16 minutes the server itself answers "failed": the default wait ends on its word
EXPORT_WAIT: Final = 1200.0
EXPORT_POLL: Final = 5.0  # the longest wait between two looks (they start at FIRST_POLL and double)
FIRST_POLL: Final = 0.5
_STORAGE_CODE = re.compile(r"<Code>([A-Za-z]{1,64})</Code>")

ExportSource = str | ExportJob


class BinaryOut(Protocol):
    """Where `download_export` writes: a file opened "wb", `io.BytesIO`, `sys.stdout.buffer`."""

    def write(self, data: bytes, /) -> object: ...


def poll_waits(timeout: float, poll: float) -> tuple[float, float]:
    """`wait_export`'s checked arguments: the deadline's length and the first wait."""
    if timeout < 0 or poll <= 0:
        raise ValueError("wait_export needs timeout >= 0 and poll > 0 (seconds)")
    return timeout, min(FIRST_POLL, poll)


def export_failed(export_id: str) -> errors.ExportFailed:
    return errors.ExportFailed(
        "The server could not write the export; ask for a new one (create_export).",
        method="GET",
        path=f"/me/exports/{export_id}",
    )


def export_timeout(export_id: str, status: str, timeout: float) -> errors.ExportTimeout:
    return errors.ExportTimeout(
        f"The export is still {status} after {timeout:g} s; wait for the same export id again.",
        method="GET",
        path=f"/me/exports/{export_id}",
    )


def export_url(source: ExportSource) -> str:
    """The file's URL: given, or a ready `ExportJob`'s."""
    if isinstance(source, ExportJob):
        if source.status != "ready" or not source.url:
            raise ValueError(f"the export is not ready (status {source.status!r}): wait_export() first")
        url = source.url
    else:
        url = source
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError("an export's URL is an http(s) URL (ExportJob.url)")
    return url


def download_request(source: ExportSource, timeout: httpx.Timeout) -> httpx.Request:
    """The GET of the export file, made fresh rather than from the client's defaults: the URL is
    presigned storage, and nothing of the API's (the bearer token, X-Mind-Id, the caller's headers,
    cookies) may go there. Sent with `auth=None`, so an http_client's own auth stays home too."""
    return httpx.Request(
        "GET",
        export_url(source),
        headers={"user-agent": user_agent()},
        extensions={"timeout": timeout.as_dict()},
    )


def download_error(response: httpx.Response) -> errors.ExportDownloadError:
    """An error answer of the storage, without its body (S3's can quote the request's signature) or
    its URL (the query is the signature; the path names the user)."""
    found = _STORAGE_CODE.search(response.text[:4000])
    reason = f" ({found.group(1)})" if found else ""
    hint = {
        403: " Its URL is good for an hour: get_export() gives a new one.",
        404: " The file is gone (a day after the export was asked for, or after DELETE /me).",
    }.get(response.status_code, "")
    return errors.ExportDownloadError(
        f"The export's download answered HTTP {response.status_code}{reason}.{hint}",
        status=response.status_code,
    )


def download_broken(exc: httpx.TransportError, request: httpx.Request) -> errors.SynapseConnectionError:
    """A network failure of the download, naming the host only (the query is the URL's signature)."""
    cls = errors.SynapseTimeout if isinstance(exc, httpx.TimeoutException) else errors.SynapseConnectionError
    return cls(
        f"The export's download from {request.url.host} failed: {type(exc).__name__}.",
    )


def short_download(
    source: ExportSource, got: int, response: httpx.Response
) -> errors.ExportDownloadError | None:
    """The file came shorter (or longer) than the job's `bytes` says: an error, else None."""
    expected = source.bytes if isinstance(source, ExportJob) else None
    if expected is None or got == expected or "content-encoding" in response.headers:
        return None
    return errors.ExportDownloadError(
        f"The export's download gave {got} bytes of {expected}.",
        status=response.status_code,
    )


class Lines:
    """JSON Lines from byte chunks, one parsed record a line. Lines end at b"\\n" only: a record's
    text may hold U+2028 and the like (JSON leaves them unescaped), where `str.splitlines` (and
    httpx's `iter_lines`) would cut; UTF-8 never has the byte 0x0A inside a character."""

    def __init__(self) -> None:
        self._rest = b""
        self._line = 0

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        *whole, self._rest = (self._rest + chunk).split(b"\n")
        return [record for line in whole if (record := self._parse(line)) is not None]

    def end(self) -> list[dict[str, Any]]:
        rest, self._rest = self._rest, b""
        record = self._parse(rest) if rest else None
        return [record] if record is not None else []

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        self._line += 1
        if not line.strip():
            return None
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            raise errors.SynapseResponseError(f"Line {self._line} of the export file is not a JSON object.")
        return record


def user_agent() -> str:
    from synapse_memory import __version__

    return f"synapse-memory-python/{__version__} httpx/{httpx.__version__}"


def headers_for(call: Call[Any], token: str | None, extra: Mapping[str, str]) -> dict[str, str]:
    headers = {"accept": "application/json", **extra, **call.headers}
    if call.body is not None:
        headers["content-type"] = "application/json; charset=utf-8"
    if token:
        headers["authorization"] = f"Bearer {token}"
    return headers


def clean_base_url(base_url: str) -> str:
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError("base_url must be an http(s) URL, like http://127.0.0.1:3000")
    return base_url.rstrip("/")
