"""Exceptions: one per error code of the contract's envelope, all under `SynapseError`.

`{"error": {"code", "message", "details"?}}` becomes `.code`, `.message`, `.details`, with the HTTP
status in `.status`. An answer without the envelope (a proxy's HTML page, API Gateway's own
`{"message": "Unauthorized"}`) is mapped by its status to the same classes. A request that never got
an answer is a `SynapseConnectionError` (`SynapseTimeout` for a timeout).

Nothing here ever holds the token: messages are the server's, or ours, and never echo headers.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "Conflict",
    "ExportDownloadError",
    "ExportFailed",
    "ExportTimeout",
    "Forbidden",
    "InternalError",
    "InvalidJSON",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "SynapseConnectionError",
    "SynapseError",
    "SynapseResponseError",
    "SynapseTimeout",
    "Unauthorized",
    "UpstreamUnavailable",
    "ValidationError",
]

_SNIPPET = 200


class SynapseError(Exception):
    """Any failure of a Synapse call.

    `status` is the HTTP status (None when no answer came), `code` the envelope's code,
    `message` its one sentence, `details` its list (validation errors: `[{"loc": [...], "msg": ...}]`),
    `retry_after` the `Retry-After` seconds when the server sent them, and `method`/`path` the request
    (the path only: never the query string, never a header).
    """

    default_code: ClassVar[str] = "error"
    default_status: ClassVar[int | None] = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: list[Any] | None = None,
        retry_after: float | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status if status is not None else self.default_status
        self.code = code or self.default_code
        self.details: list[Any] = list(details or [])
        self.retry_after = retry_after
        self.method = method
        self.path = path

    def __str__(self) -> str:
        where = f" ({self.method} {self.path})" if self.method and self.path else ""
        status = f"{self.status} " if self.status is not None else ""
        return f"{status}{self.code}: {self.message}{where}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"


class InvalidJSON(SynapseError):
    """400 `invalid_json`: the body was not JSON (or nested too deep)."""

    default_code = "invalid_json"
    default_status = 400


class Unauthorized(SynapseError):
    """401 `unauthorized`: no token, a bad or expired one, or a revoked key."""

    default_code = "unauthorized"
    default_status = 401


class Forbidden(SynapseError):
    """403 `forbidden`: a scope the key lacks, a user-only route called by an agent, another mind."""

    default_code = "forbidden"
    default_status = 403


class NotFound(SynapseError):
    """404 `not_found`: no such memory, version, mind or route."""

    default_code = "not_found"
    default_status = 404


class Conflict(SynapseError):
    """409 `conflict`: a mind name taken, the default mind, the same ingest in progress."""

    default_code = "conflict"
    default_status = 409


class QuotaExceeded(Conflict):
    """409 `quota_exceeded`: a limit is reached (the message names it: MAX_WEBHOOKS, ...)."""

    default_code = "quota_exceeded"
    default_status = 409


class Gone(SynapseError):
    """410 `gone`: a change-feed position older than what the server keeps (7 days)."""

    default_code = "gone"
    default_status = 410


class PayloadTooLarge(SynapseError):
    """413 `payload_too_large`: the body is over 256 KiB."""

    default_code = "payload_too_large"
    default_status = 413


class ValidationError(SynapseError):
    """422 `validation_error`: `details` lists every problem with its `loc`."""

    default_code = "validation_error"
    default_status = 422


class RateLimited(SynapseError):
    """429 `rate_limited` (retried by the client while `Retry-After` allows)."""

    default_code = "rate_limited"
    default_status = 429


class InternalError(SynapseError):
    """500 `internal_error`."""

    default_code = "internal_error"
    default_status = 500


class UpstreamUnavailable(SynapseError):
    """503 `upstream_unavailable`: Gemini or AWS down (retried by the client while `Retry-After` allows)."""

    default_code = "upstream_unavailable"
    default_status = 503


class SynapseConnectionError(SynapseError):
    """No answer: the server could not be reached, or the connection broke."""

    default_code = "connection_error"


class SynapseTimeout(SynapseConnectionError):
    """No answer within the client's timeout."""

    default_code = "timeout"


class SynapseResponseError(SynapseError):
    """A success status whose body is not what the contract says (not JSON, or the wrong shape)."""

    default_code = "invalid_response"


class ExportFailed(SynapseError):
    """`wait_export`: the server could not write the export (its status is "failed"); ask again."""

    default_code = "export_failed"


class ExportTimeout(SynapseError):
    """`wait_export`: the export was still being written when the wait's `timeout` ran out (it goes
    on: wait for the same export id again)."""

    default_code = "export_timeout"


class ExportDownloadError(SynapseError):
    """`download_export` / `iter_export`: the file's URL answered an error (`status` is its HTTP
    status: 403 once the URL is past its hour, 404 once the file is past its 24 hours; ask
    `get_export` for a new URL), or the file came shorter than its `bytes`."""

    default_code = "download_failed"


BY_CODE: dict[str, type[SynapseError]] = {
    cls.default_code: cls
    for cls in (
        InvalidJSON,
        Unauthorized,
        Forbidden,
        NotFound,
        QuotaExceeded,
        Conflict,  # after QuotaExceeded: a 409 without the envelope is a Conflict
        Gone,
        PayloadTooLarge,
        ValidationError,
        RateLimited,
        InternalError,
        UpstreamUnavailable,
    )
}
BY_STATUS: dict[int, type[SynapseError]] = {
    cls.default_status: cls for cls in BY_CODE.values() if cls.default_status is not None
}


def from_answer(
    status: int,
    body: Any,
    text: str,
    *,
    retry_after: float | None = None,
    method: str | None = None,
    path: str | None = None,
) -> SynapseError:
    """The exception for a non-2xx answer: by the envelope's code, else by the status."""
    error = body.get("error") if isinstance(body, dict) else None
    if (
        isinstance(error, dict)
        and isinstance(error.get("code"), str)
        and isinstance(error.get("message"), str)
    ):
        code: str = error["code"]
        cls = BY_CODE.get(code) or BY_STATUS.get(status) or SynapseError
        details = error.get("details")
        return cls(
            error["message"],
            status=status,
            code=code,
            details=details if isinstance(details, list) else None,
            retry_after=retry_after,
            method=method,
            path=path,
        )
    cls = BY_STATUS.get(status) or SynapseError
    snippet = " ".join(text.split())[:_SNIPPET]
    message = f"The server answered HTTP {status} without Synapse's error envelope" + (
        f": {snippet}" if snippet else "."
    )
    code = cls.default_code if cls is not SynapseError else f"http_{status}"
    return cls(message, status=status, code=code, retry_after=retry_after, method=method, path=path)
