"""`Synapse`: the blocking client."""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime, timedelta
from typing import Any, TypeAlias, TypeVar

import httpx

from synapse_memory import _core
from synapse_memory._core import UNSET, BinaryOut, Call, ExportSource, MessageLike, RetryPolicy, Unset
from synapse_memory.errors import SynapseError
from synapse_memory.models import (
    ApiKey,
    ApiKeyCreated,
    Category,
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
    Mind,
    MindCreated,
    Priority,
    Proposal,
    ProposalPage,
    Provider,
    RecallResult,
    Scope,
    ScoredMemory,
    SummaryChunk,
    SummaryResult,
    Webhook,
    WebhookCreated,
)

T = TypeVar("T")
# `list` is a method of the client: these names keep annotations unambiguous
Memories: TypeAlias = list[Memory]
Versions: TypeAlias = list[MemoryVersion]
Scored: TypeAlias = list[ScoredMemory]
Chunks: TypeAlias = list[SummaryChunk]
Minds: TypeAlias = list[Mind]
Keys: TypeAlias = list[ApiKey]
Providers: TypeAlias = list[Provider]
Webhooks: TypeAlias = list[Webhook]
Deliveries: TypeAlias = list[DeliveryAttempt]


class Synapse:
    """A Synapse API client (blocking). Use it as a context manager, or call `close()`.

    ```python
    with Synapse("http://127.0.0.1:3000", token=jwt_or_api_key) as mem:
        mem.store("fact", "home_city", "Lives in Chiang Mai")
    ```

    `mind_id` is the mind memory calls use unless a call names its own (`mind_id=` on the call);
    `with_mind()` gives a client bound to another mind over the same connection pool.
    `max_retries` bounds the retries of 429/503 answers (see `RetryPolicy`, or pass `retry=`).
    `transport` (an `httpx.BaseTransport`) or `http_client` (an `httpx.Client`, not closed by this
    client) replace the network, e.g. `httpx.MockTransport` in tests.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        mind_id: str | None = None,
        timeout: float | httpx.Timeout | None = _core.DEFAULT_TIMEOUT,
        max_retries: int = _core.DEFAULT_MAX_RETRIES,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.base_url = _core.clean_base_url(base_url)
        self.mind_id = mind_id
        self._token = token
        self.retry = retry if retry is not None else RetryPolicy(max_retries=max_retries)
        self._headers = {"user-agent": _core.user_agent(), **(headers or {})}
        self._routes = _core.Routes(mind_id, token)
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout, transport=transport)

    def __repr__(self) -> str:  # never the token
        return f"Synapse(base_url={self.base_url!r}, mind_id={self.mind_id!r})"

    def __enter__(self) -> Synapse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool (unless it was given as `http_client`, or this is a `with_mind` view)."""
        if self._owns_http:
            self._http.close()

    def with_mind(self, mind_id: str | None) -> Synapse:
        """The same client, bound to another mind (None: the server's default); shares the pool."""
        other = copy.copy(self)
        other.mind_id = mind_id
        other._routes = _core.Routes(mind_id, self._token)
        other._owns_http = False
        return other

    def _run(self, call: Call[T]) -> T:
        url = self.base_url + call.path
        headers = _core.headers_for(call, self._token, self._headers)
        content = call.content()
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    call.method, url, params=call.params, content=content, headers=headers
                )
            except httpx.TransportError as exc:
                failure = _core.network_error(exc, call, self.base_url)
                wait = self.retry.wait(attempt, None) if _core.may_resend(call, exc) else None
                if wait is None:
                    raise failure from None
            else:
                if response.is_success:
                    return call.read(response)
                error: SynapseError = _core.error_of(response)
                wait = (
                    self.retry.wait(attempt, error.retry_after) if _core.should_retry(call, error) else None
                )
                if wait is None:
                    raise error
            time.sleep(wait)
            attempt += 1

    # ------------------------------------------------------------------ structured memory

    def store(
        self,
        category: Category,
        key: str,
        content: str,
        *,
        tags: Sequence[str] | None = None,
        priority: Priority | None = None,
        confidence: float | None = None,
        expires_at: datetime | str | None = None,
        valid_at: date | datetime | str | None = None,
        mind_id: str | None = None,
    ) -> Memory | Proposal:
        """`POST /memory`: create, or update the memory with the same (category, key). An agent's
        change of a memory a person verified is not made: the answer is then the `Proposal` that
        awaits the person (Review).

        `valid_at` is when what it says happens or became true: a datetime, or a `date` (00:00 of
        that day in the mind's timezone)."""
        call = self._routes.store(
            category, key, content, tags, priority, confidence, expires_at, mind_id, valid_at
        )
        return self._run(call)

    def get(
        self, memory_id: str, *, as_of: datetime | str | None = None, mind_id: str | None = None
    ) -> Memory:
        """`GET /memory/{id}`; with `as_of`, the version it had at that moment (from its history)."""
        return self._run(self._routes.get(memory_id, mind_id, as_of))

    def list(
        self,
        *,
        category: Category | None = None,
        tag: str | None = None,
        source: str | None = None,
        verified: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        as_of: datetime | str | None = None,
        mind_id: str | None = None,
        include_superseded: bool = False,
    ) -> MemoryPage:
        """`GET /memory`: one page (`.memories`, `.next_cursor`); `iter_memories()` walks them all.
        With `as_of`, the memories as they were at that moment. `include_superseded`: superseded
        memories too (hidden otherwise)."""
        include = "superseded" if include_superseded else None
        return self._run(
            self._routes.list_page(category, tag, source, verified, limit, cursor, mind_id, as_of, include)
        )

    def iter_memories(
        self,
        *,
        category: Category | None = None,
        tag: str | None = None,
        source: str | None = None,
        verified: bool | None = None,
        page_size: int = 100,
        as_of: datetime | str | None = None,
        mind_id: str | None = None,
    ) -> Iterator[Memory]:
        """Every memory matching the filters, page after page of `GET /memory`."""
        cursor: str | None = None
        while True:
            page = self.list(
                category=category,
                tag=tag,
                source=source,
                verified=verified,
                limit=page_size,
                cursor=cursor,
                as_of=as_of,
                mind_id=mind_id,
            )
            yield from page.memories
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def update(
        self,
        memory_id: str,
        *,
        content: str | Unset = UNSET,
        tags: Sequence[str] | Unset = UNSET,
        priority: Priority | Unset = UNSET,
        confidence: float | Unset | None = UNSET,
        expires_at: datetime | str | Unset | None = UNSET,
        valid_at: date | datetime | str | Unset | None = UNSET,
        mind_id: str | None = None,
    ) -> Memory | Proposal:
        """`PUT /memory/{id}`: only the fields given are sent (`expires_at=None` clears the expiry,
        `valid_at=None` the memory's time). A `Proposal` when an agent's change of a verified memory
        awaits a person."""
        fields: dict[str, Any] = {
            "content": content,
            "tags": tags,
            "priority": priority,
            "confidence": confidence,
            "expires_at": expires_at,
            "valid_at": valid_at,
        }
        return self._run(self._routes.update(memory_id, fields, mind_id))

    def timeline(
        self,
        *,
        start: date | datetime | str | None = None,
        end: date | datetime | str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        mind_id: str | None = None,
    ) -> MemoryPage:
        """`GET /memory/timeline`: live memories whose time (`valid_at`, else `created_at`) is in
        `[start, end)` (the query's `from` and `to`; a date is 00:00 in the mind's timezone), oldest
        first, one page (`.memories`, `.next_cursor`)."""
        return self._run(self._routes.timeline(start, end, limit, cursor, mind_id))

    def delete(self, memory_id: str, *, mind_id: str | None = None) -> Proposal | None:
        """`DELETE /memory/{id}` (its history goes too); a `Proposal` when an agent's deletion of a
        verified memory awaits a person."""
        return self._run(self._routes.delete(memory_id, mind_id))

    def verify(self, memory_id: str, *, mind_id: str | None = None) -> Memory:
        """`POST /memory/{id}/verify` (users only: an API key gets `Forbidden`)."""
        return self._run(self._routes.verify(memory_id, mind_id))

    def history(self, memory_id: str, *, mind_id: str | None = None) -> Versions:
        """`GET /memory/{id}/history`: the current version first, then older ones."""
        return self._run(self._routes.history(memory_id, mind_id))

    def restore(self, memory_id: str, version: int, *, mind_id: str | None = None) -> Memory | Proposal:
        """`POST /memory/{id}/restore`: that version's content, as a new version (a superseded memory
        is live again); a `Proposal` for an agent's restore of a verified memory."""
        return self._run(self._routes.restore(memory_id, version, mind_id))

    # ------------------------------------------------------------------ review (users only)

    def proposals(
        self, *, limit: int | None = None, cursor: str | None = None, mind_id: str | None = None
    ) -> ProposalPage:
        """`GET /memory/proposals`: the mind's pending proposals, newest first."""
        return self._run(self._routes.proposals(limit, cursor, mind_id))

    def accept(
        self,
        proposal_id: str,
        *,
        content: str | Unset = UNSET,
        tags: Sequence[str] | Unset = UNSET,
        priority: Priority | Unset = UNSET,
        confidence: float | Unset = UNSET,
        expires_at: datetime | str | Unset | None = UNSET,
        valid_at: datetime | str | Unset | None = UNSET,
        mind_id: str | None = None,
    ) -> Memory | None:
        """`POST /memory/proposals/{id}/accept`, with the edits given: the memory (a new version, the
        person's, `change: accepted`), or None for an accepted deletion. `Conflict` when the memory
        changed since the proposal was made."""
        given = {
            "content": content,
            "tags": list(tags) if isinstance(tags, Sequence) and not isinstance(tags, str) else tags,
            "priority": priority,
            "confidence": confidence,
            "expires_at": expires_at,
            "valid_at": valid_at,
        }
        edits = {k: v for k, v in given.items() if v is not UNSET}
        return self._run(self._routes.accept(proposal_id, edits, mind_id))

    def decline(self, proposal_id: str, *, mind_id: str | None = None) -> None:
        """`POST /memory/proposals/{id}/decline`: the proposal is gone, the memory unchanged."""
        return self._run(self._routes.decline(proposal_id, mind_id))

    def by_tag(self, tag: str, *, mind_id: str | None = None) -> Memories:
        """`GET /memory/by-tag`: every live memory with the tag, priority first."""
        return self._run(self._routes.by_tag(tag, mind_id))

    def search(
        self, q: str, tag: str | None = None, *, limit: int | None = None, mind_id: str | None = None
    ) -> Scored:
        """`GET /memory/search`: full-text search, ranked (each memory has `.score`)."""
        return self._run(self._routes.search(q, tag, limit, mind_id))

    def expiring(self, within: str | timedelta | None = None, *, mind_id: str | None = None) -> Memories:
        """`GET /memory/expiring`: memories expiring within `within` ("30m", "24h", "7d", a timedelta)."""
        return self._run(self._routes.expiring(within, mind_id))

    def recall_text(
        self,
        *,
        category: Category | None = None,
        tag: str | None = None,
        limit: int | None = None,
        mind_id: str | None = None,
    ) -> str:
        """`GET /memory/recall`: the plain-text block for an LLM's context."""
        return self._run(self._routes.recall_text(category, tag, limit, mind_id))

    # ------------------------------------------------------------------ conversational memory

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        category: Category | None = None,
        tags: Sequence[str] | None = None,
        reference_time: datetime | str | None = None,
        timezone: str | None = None,
        as_of: datetime | str | None = None,
        mind_id: str | None = None,
    ) -> RecallResult:
        """`POST /memory/recall`: `.memories` (each with `.text`, `.score`, `.valid_at`) and `.identity`.

        A period the query names ("last week", "เมื่อวาน") is read at `reference_time` (default now)
        in `timezone` (an IANA name; default the mind's), and that period's memories rank first.
        `as_of` recalls the memories as they were at that moment."""
        when = _core.time_fields(reference_time, timezone, as_of)
        return self._run(self._routes.recall(query, limit, category, tags, mind_id, when))

    def ingest(
        self,
        session_id: str,
        messages: Iterable[MessageLike],
        *,
        idempotency_key: str | None = None,
        timezone: str | None = None,
        mind_id: str | None = None,
    ) -> IngestResult:
        """`POST /memory/ingest`: store the turns and extract memories from them.

        Each message may carry `created_at` (when it was said; default: when the server receives
        it): relative dates in it are resolved against that moment, in `timezone` (an IANA name;
        default the mind's).

        Sent with an `Idempotency-Key` (a new uuid4 unless given; the same one on every retry of
        this call), so a retry never ingests twice. Pass your chat message's id to make retries across
        processes safe too.
        """
        return self._run(self._routes.ingest(session_id, messages, idempotency_key, mind_id, timezone))

    def summarize(
        self,
        session_id: str,
        messages: Iterable[MessageLike] | None = None,
        *,
        timezone: str | None = None,
        mind_id: str | None = None,
    ) -> SummaryResult:
        """`POST /memory/summarize`: the given messages, or the session's last stored ones (their
        dates stated in `timezone`, default the mind's)."""
        return self._run(self._routes.summarize(session_id, messages, mind_id, timezone))

    def context(
        self,
        query: str,
        session_id: str | None = None,
        *,
        limit: int | None = None,
        recent: int | None = None,
        reference_time: datetime | str | None = None,
        timezone: str | None = None,
        as_of: datetime | str | None = None,
        mind_id: str | None = None,
    ) -> ContextResult:
        """`POST /memory/context`: identity, memories, summary, recent turns and `.prompt` for one turn
        (it starts with the current time, and dates the memories, in `timezone`). `reference_time`,
        `timezone` and `as_of` as for `recall`."""
        when = _core.time_fields(reference_time, timezone, as_of)
        return self._run(self._routes.context(query, session_id, limit, recent, mind_id, when))

    def summaries(self, session_id: str, *, mind_id: str | None = None) -> Chunks:
        """`GET /memory/summaries/{sessionId}`: the session's summary chunks, oldest first."""
        return self._run(self._routes.summaries(session_id, mind_id))

    def identity(self, user_id: str | None = None, *, mind_id: str | None = None) -> IdentityResult:
        """`GET /memory/identity/{userId}`; `user_id` defaults to a JWT's `sub` (an API key must pass it)."""
        return self._run(self._routes.identity(user_id, mind_id))

    # ------------------------------------------------------------------ minds (users only)

    def create_mind(
        self,
        name: str,
        description: str | None = None,
        *,
        timezone: str | None = None,
        review_agent_changes: bool | None = None,
    ) -> MindCreated:
        """`POST /minds` (`Conflict` if the name is taken)."""
        return self._run(self._routes.create_mind(name, description, timezone, review_agent_changes))

    def update_mind(
        self,
        mind_id: str,
        *,
        name: str | Unset = UNSET,
        description: str | Unset | None = UNSET,
        timezone: str | Unset | None = UNSET,
        review_agent_changes: bool | Unset | None = UNSET,
    ) -> MindCreated:
        """`PATCH /minds/{mindId}` (`"default"` too): only the settings given are sent; `None` clears
        the description and restores the defaults of `timezone` (UTC) and `review_agent_changes`
        (true). An unknown timezone is a `ValidationError`."""
        fields: dict[str, Any] = {
            "name": name,
            "description": description,
            "timezone": timezone,
            "review_agent_changes": review_agent_changes,
        }
        return self._run(self._routes.update_mind(mind_id, fields))

    def minds(self) -> Minds:
        """`GET /minds`: every mind, `default` first, with its number of memories."""
        return self._run(self._routes.minds())

    def consolidate(self, mind_id: str = "default") -> Consolidated:
        """`POST /minds/{mindId}/consolidate`: duplicates merged, old low-priority memories summarized."""
        return self._run(self._routes.consolidate(mind_id))

    def delete_mind(self, mind_id: str) -> None:
        """`DELETE /minds/{mindId}`: the mind, its memories, sessions, summaries and keys."""
        return self._run(self._routes.delete_mind(mind_id))

    # ------------------------------------------------------------------ keys, providers, privacy (users only)

    def create_key(self, name: str, scopes: Sequence[Scope], mind_id: str | None = None) -> ApiKeyCreated:
        """`POST /keys`: `.key` is the plain key, shown once; `mind_id` makes a Mind Key for that mind."""
        return self._run(self._routes.create_key(name, scopes, mind_id))

    def keys(self) -> Keys:
        """`GET /keys`: hints only."""
        return self._run(self._routes.keys())

    def revoke_key(self, key_id: str) -> None:
        """`DELETE /keys/{keyId}`."""
        return self._run(self._routes.revoke_key(key_id))

    def set_provider(self, provider: str, api_key: str) -> Provider:
        """`PUT /providers/{provider}`: store your own model key (KMS-encrypted; `gemini`)."""
        return self._run(self._routes.set_provider(provider, api_key))

    def providers(self) -> Providers:
        """`GET /providers`: hints only."""
        return self._run(self._routes.providers())

    def delete_provider(self, provider: str) -> None:
        """`DELETE /providers/{provider}`."""
        return self._run(self._routes.delete_provider(provider))

    def batch(self, memories: Sequence[Mapping[str, Any]], *, mind_id: str | None = None) -> dict[str, Any]:
        """`POST /memory/batch`: 1-100 `store` bodies (dicts: category, key, content, ...), each
        answered in `["results"]` as `store` would answer it alone (`status`, `memory` or `error`)."""
        return self._run(self._routes.batch(memories, mind_id))

    def import_records(
        self, format: str, records: Sequence[Any], *, mind_id: str | None = None
    ) -> dict[str, Any]:
        """`POST /memory/import`: 1-500 records, `format` "synapse" (an export's memory records) or
        "mem0" (mem0 memory objects) → `{"imported", "updated", "skipped", "errors"}`."""
        return self._run(self._routes.import_records(format, records, mind_id))

    # ------------------------------------------------------------------ the change feed, webhooks

    def changes(
        self, after: int = 0, *, limit: int | None = None, mind_id: str | None = None
    ) -> MemoryChanges:
        """`GET /memory/changes`: the mind's changes after `after` (a seq), oldest first; ask for
        `after=page.next_after` next. A position older than what is kept raises `Gone`."""
        return self._run(self._routes.changes(after, limit, mind_id))

    def create_webhook(
        self, url: str, *, events: Sequence[str] | None = None, mind_id: str | None = None
    ) -> WebhookCreated:
        """`POST /webhooks` (users only): `.secret` verifies deliveries (`synapse_memory.webhooks.verify`),
        shown once. No `events`: every type; no `mind_id`: every mind."""
        return self._run(self._routes.create_webhook(url, events, mind_id))

    def webhooks(self) -> Webhooks:
        """`GET /webhooks`: never their secrets; `disabled_at` set once one failed for 5 days."""
        return self._run(self._routes.webhooks())

    def delete_webhook(self, webhook_id: str) -> None:
        """`DELETE /webhooks/{webhookId}`."""
        return self._run(self._routes.delete_webhook(webhook_id))

    def test_webhook(self, webhook_id: str) -> None:
        """`POST /webhooks/{webhookId}/test`: a signed `webhook.test` delivery is queued."""
        return self._run(self._routes.test_webhook(webhook_id))

    def webhook_deliveries(self, webhook_id: str, *, limit: int | None = None) -> Deliveries:
        """`GET /webhooks/{webhookId}/deliveries`: the latest attempts, newest first."""
        return self._run(self._routes.webhook_deliveries(webhook_id, limit))

    def export(self) -> Export:
        """`GET /me/export`: everything stored for the user, every mind, in one answer (small
        accounts; past what one answer carries it is `PayloadTooLarge`: use `create_export`)."""
        return self._run(self._routes.export())

    # ------------------------------------------------------------------ exports of any size (users only)

    def create_export(self) -> ExportStarted:
        """`POST /me/exports`: the server writes everything of the user to a JSON Lines file in the
        background (`.export_id`; asked again while one is being written, the same export)."""
        return self._run(self._routes.create_export())

    def get_export(self, export_id: str) -> ExportJob:
        """`GET /me/exports/{exportId}`: `.status` pending, ready or failed; once ready `.url` (good for
        an hour from this answer), `.bytes`, `.records`, `.expires_at`. `NotFound` past its 24 hours."""
        return self._run(self._routes.get_export(export_id))

    def wait_export(
        self,
        export_id: str,
        *,
        timeout: float = _core.EXPORT_WAIT,
        poll: float = _core.EXPORT_POLL,
        progress: Callable[[ExportJob], None] | None = None,
    ) -> ExportJob:
        """`get_export` until the export is ready: the ready `ExportJob`. Raises `ExportFailed` when
        the server could not write it, `ExportTimeout` after `timeout` seconds. The waits between looks
        start at half a second and double up to `poll`; `progress` is called with every answer."""
        limit, wait = _core.poll_waits(timeout, poll)
        deadline = time.monotonic() + limit
        while True:
            job = self.get_export(export_id)
            if progress is not None:
                progress(job)
            if job.status == "ready":
                return job
            if job.status == "failed":
                raise _core.export_failed(export_id)
            left = deadline - time.monotonic()
            if left <= 0:
                raise _core.export_timeout(export_id, job.status, timeout)
            time.sleep(min(wait, left))
            wait = min(wait * 2, poll)

    def _download(self, source: ExportSource) -> Generator[bytes]:
        """The file's bytes as they arrive, from its presigned URL: no token, no API header."""
        request = _core.download_request(source, self._http.timeout)
        try:
            response = self._http.send(request, stream=True, auth=None)
        except httpx.TransportError as exc:
            raise _core.download_broken(exc, request) from None
        try:
            if not response.is_success:
                response.read()
                raise _core.download_error(response)
            got = 0
            try:
                for chunk in response.iter_bytes():
                    got += len(chunk)
                    yield chunk
            except httpx.TransportError as exc:
                raise _core.download_broken(exc, request) from None
            short = _core.short_download(source, got, response)
            if short is not None:
                raise short
        finally:
            response.close()

    def download_export(self, source: ExportSource, out: BinaryOut) -> int:
        """Stream the export file (a ready `ExportJob`, or its `url`) into `out`, a binary file, byte
        for byte; the number of bytes written. The URL is presigned storage: the request carries no
        token and none of the client's headers. `ExportDownloadError` for an error answer (403 once the
        URL is past its hour: `get_export` again for a new one)."""
        written = 0
        with contextlib.closing(self._download(source)) as chunks:
            for chunk in chunks:
                out.write(chunk)
                written += len(chunk)
        return written

    def iter_export(self, source: ExportSource) -> Iterator[dict[str, Any]]:
        """The export file's lines, parsed, as they download: the header
        (`{"format": "synapse-export", "version": 1, "user_id", "created_at"}`), then one record a
        line, each with its `"type"` (mind, memory, session, message, summary, key, provider, webhook)."""
        lines = _core.Lines()
        with contextlib.closing(self._download(source)) as chunks:
            for chunk in chunks:
                yield from lines.feed(chunk)
        yield from lines.end()

    def delete_me(self) -> int:
        """`DELETE /me`: delete everything stored for the user; the number of items deleted."""
        return self._run(self._routes.delete_me())

    def health(self) -> Health:
        """`GET /health` (no token needed)."""
        return self._run(self._routes.health())
