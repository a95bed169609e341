"""The project's own exceptions. `http.resolver` maps each to the error envelope in one place."""

from __future__ import annotations

from typing import Any


class SynapseError(Exception):
    """Base of every error that becomes an HTTP answer."""

    status: int = 500
    code: str = "internal_error"

    def __init__(self, message: str, details: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidJson(SynapseError):
    status, code = 400, "invalid_json"


class Unauthorized(SynapseError):
    status, code = 401, "unauthorized"


class Forbidden(SynapseError):
    status, code = 403, "forbidden"


class NotFound(SynapseError):
    status, code = 404, "not_found"


class Conflict(SynapseError):
    status, code = 409, "conflict"


class Gone(SynapseError):
    """A position (of the change feed) older than what is kept."""

    status, code = 410, "gone"


class PayloadTooLarge(SynapseError):
    status, code = 413, "payload_too_large"


class ValidationFailed(SynapseError):
    status, code = 422, "validation_error"

    @classmethod
    def at(cls, loc: list[str | int], msg: str) -> ValidationFailed:
        """One problem at `loc` (e.g. ["query", "tag"]); `msg` is a clause ("must not be blank")."""
        return cls(cls.sentence(loc, msg), details=[{"loc": loc, "msg": msg}])

    @staticmethod
    def sentence(loc: list[str | int], msg: str) -> str:
        """The envelope's one human sentence: "Invalid tag: must not be blank." """
        where = ".".join(str(p) for p in loc[1:]) or "request"
        return f"Invalid {where}: {msg.rstrip('.')}."


class RateLimited(SynapseError):
    status, code = 429, "rate_limited"


class UpstreamUnavailable(SynapseError):
    """Gemini or AWS stayed down after retries; the client should retry later."""

    status, code = 503, "upstream_unavailable"

    def __init__(self, message: str, retry_after: int = 5) -> None:
        super().__init__(message)
        self.retry_after = retry_after
