"""Who is calling, as the authorizer established it: a user (JWT) or an agent (API key) and its scopes.

Depends on nothing but the models and errors, so the HTTP layer's entrypoint can check the caller
without importing DynamoDB code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from synapse.core.errors import Forbidden, NotFound, Unauthorized, UpstreamUnavailable
from synapse.core.models.base import DEFAULT_MIND, MIND_ID_PATTERN, USER_ID_RE, Scope, Source

ALL_SCOPES = (Scope.read.value, Scope.write.value)
_MIND_ID = re.compile(MIND_ID_PATTERN)


@dataclass(frozen=True)
class Principal:
    """The caller, as the authorizer established it."""

    user_id: str
    kind: str  # "user" (a human, JWT) or "agent" (an API key)
    scopes: frozenset[str] = field(default_factory=frozenset)
    key_id: str = ""
    # the mind it acts in: a Mind Key's own; for a user, the one the request names (X-Mind-Id)
    mind_id: str = DEFAULT_MIND

    @property
    def is_user(self) -> bool:
        return self.kind == "user"

    @property
    def bound(self) -> bool:
        """An API key acts in its own mind only."""
        return not self.is_user

    @property
    def source(self) -> Source:
        return Source.user if self.is_user else Source.agent

    def require(self, scope: Scope) -> None:
        if scope.value not in self.scopes:
            raise Forbidden(f"This API key lacks the {scope.value} scope.")

    def require_user(self) -> None:
        if not self.is_user:
            raise Forbidden("Only a signed-in user can do this; API keys cannot.")

    def check_user_id(self, user_id: str | None) -> str:
        """A userId named in a body or path must be the caller's own; omitted, it is."""
        if user_id is not None and user_id != self.user_id:
            raise Forbidden("You can only act on your own memories.")
        return self.user_id

    def context(self) -> dict[str, str]:
        """The authorizer's context (simple responses allow only flat string values)."""
        return {
            "userId": self.user_id,
            "kind": self.kind,
            "scopes": " ".join(sorted(self.scopes)),
            "keyId": self.key_id,
            "mindId": self.mind_id,
        }

    def in_mind(self, requested: str | None) -> Principal:
        """The caller acting in the mind a request names (the `X-Mind-Id` header), or its own.
        A Mind Key naming another mind is refused; a mind id of no possible shape is unknown."""
        if not requested or requested == self.mind_id:
            return self
        if self.bound:
            raise Forbidden("This API key acts in its own mind only.")
        if not _MIND_ID.match(requested):
            raise NotFound("No mind with that id.")
        return replace(self, mind_id=requested)

    @classmethod
    def from_context(cls, ctx: dict[str, Any] | None) -> Principal:
        ctx = ctx or {}
        if ctx.get("unavailable"):  # the authorizer could not look the API key up
            raise UpstreamUnavailable(str(ctx["unavailable"]), retry_after=int(ctx.get("retryAfter") or 5))
        user_id, kind = ctx.get("userId"), ctx.get("kind")
        if not isinstance(user_id, str) or not USER_ID_RE.match(user_id) or kind not in ("user", "agent"):
            raise Unauthorized(str(ctx.get("error") or "A valid bearer token is required."))
        return cls(
            user_id=user_id,
            kind=kind,
            scopes=frozenset(str(ctx.get("scopes", "")).split()),
            key_id=str(ctx.get("keyId", "")),
            mind_id=str(ctx.get("mindId") or DEFAULT_MIND),
        )
