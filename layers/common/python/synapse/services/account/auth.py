"""Who is calling: JWT verification (HS256 / JWKS), API keys (issue, hash, verify), scopes."""

from __future__ import annotations

import re
import secrets
import uuid
from typing import TYPE_CHECKING, Any

from synapse.core.config import settings
from synapse.core.errors import QuotaExceeded, Unauthorized, UpstreamUnavailable
from synapse.core.models.account import ApiKeyCreated, ApiKeyInfo, ApiKeyList, KeyIn
from synapse.core.models.base import USER_ID_RE, Scope, utcnow
from synapse.core.principal import ALL_SCOPES, Principal
from synapse.core.state import per_container
from synapse.services.account import minds
from synapse.store import keys
from synapse.store.account import credentials
from synapse.store.keys import DEFAULT_MIND

if TYPE_CHECKING:
    import jwt

_ASYMMETRIC = ["RS256", "ES256"]
_KEY_BODY = re.compile(r"^[A-Za-z0-9_-]{32,128}$")


# --- JWT ----------------------------------------------------------------------------------


@per_container
def _jwks_client(url: str) -> jwt.PyJWKClient:
    # PyJWKClient caches the key set; one per container
    import jwt

    return jwt.PyJWKClient(url, cache_keys=True, lifespan=600, timeout=5)


def verify_jwt(token: str) -> Principal:
    """A user's JWT → Principal. Only the configured algorithms are accepted; `exp` is required."""
    import jwt  # here, not at the top: only the authorizer verifies tokens (cold start)

    cfg = settings()
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise Unauthorized("The token is not a valid JWT.") from exc
    alg = header.get("alg")
    key: Any
    if alg == "HS256" and cfg.jwt_secret:
        key, algorithms = cfg.jwt_secret, ["HS256"]
    elif alg in _ASYMMETRIC and cfg.jwt_jwks_url:
        try:
            signing = _jwks_client(cfg.jwt_jwks_url).get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            # the key set could not be fetched: an outage (503 with Retry-After), not a bad token
            raise UpstreamUnavailable("The token's key set could not be fetched; try again shortly.") from exc
        except (jwt.PyJWKClientError, jwt.PyJWKError) as exc:
            raise Unauthorized("The token's signing key is unknown.") from exc
        # only the algorithm of the key the kid names: a forged header pairing ES256 with an RSA key
        # would otherwise reach the crypto layer and fail there with a TypeError (a 500)
        if signing.algorithm_name != alg:
            raise Unauthorized("The token's algorithm is not the one of its signing key.")
        key, algorithms = signing.key, [alg]
    else:
        raise Unauthorized("The token's algorithm is not accepted.")
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=algorithms,
            issuer=cfg.jwt_issuer,
            audience=cfg.jwt_audience,
            options={"require": ["exp", "sub"], "verify_aud": cfg.jwt_audience is not None},
            leeway=30,
        )
    except jwt.ExpiredSignatureError as exc:
        raise Unauthorized("The token has expired.") from exc
    except jwt.PyJWTError as exc:
        raise Unauthorized("The token is not valid.") from exc
    sub = claims.get("sub")
    if not isinstance(sub, str) or not USER_ID_RE.match(sub):
        raise Unauthorized("The token's subject is not a valid userId.")
    return Principal(user_id=sub, kind="user", scopes=frozenset(ALL_SCOPES))


# --- API keys -----------------------------------------------------------------------------


def is_api_key(token: str) -> bool:
    return token.startswith(settings().api_key_prefix)


def issue_api_key(
    user_id: str, name: str, scopes: list[str], mind_id: str = DEFAULT_MIND
) -> tuple[credentials.ApiKeyRecord, str]:
    """A new key for `user_id`: returns (record, plain key). Only the SHA-256 of the key is stored."""
    plain = settings().api_key_prefix + secrets.token_urlsafe(32)
    record = credentials.ApiKeyRecord(
        key_id=uuid.uuid4().hex[:16],
        user_id=user_id,
        name=name,
        scopes=sorted(set(scopes)),
        hint=f"{settings().api_key_prefix}…{plain[-4:]}",
        created_at=utcnow(),
        mind_id=mind_id,
    )
    credentials.put_api_key(record, keys.hash_secret(plain))
    return record, plain


def verify_api_key(token: str) -> Principal:
    body = token[len(settings().api_key_prefix) :]
    if not _KEY_BODY.match(body):
        raise Unauthorized("The API key is malformed.")
    record = credentials.find_api_key(keys.hash_secret(token))
    if record is None:
        raise Unauthorized("The API key is not valid (unknown or revoked).")
    return Principal(
        user_id=record.user_id,
        kind="agent",
        scopes=frozenset(s for s in record.scopes if s in ALL_SCOPES),
        key_id=record.key_id,
        mind_id=record.mind_id,
    )


def create_api_key(user_id: str, body: KeyIn) -> ApiKeyCreated:
    """POST /keys: the plain key is in this answer only; 409 quota_exceeded past MAX_KEYS."""
    minds.check_exists(user_id, body.mind_id)
    limit = settings().max_keys
    if len(credentials.list_api_keys(user_id)) >= limit:
        raise QuotaExceeded(f"You have {limit} API keys, the limit (MAX_KEYS): delete one first.")
    record, plain = issue_api_key(user_id, body.name, [s.value for s in body.scopes], body.mind_id)
    return ApiKeyCreated(
        key_id=record.key_id,
        key=plain,
        name=record.name,
        scopes=body.scopes,
        created_at=record.created_at,
        mind_id=record.mind_id,
    )


def list_api_keys(user_id: str) -> ApiKeyList:
    """GET /keys: oldest first, hints only."""
    records = sorted(credentials.list_api_keys(user_id), key=lambda r: r.created_at)
    return ApiKeyList(keys=[key_info(r) for r in records])


def key_info(record: credentials.ApiKeyRecord) -> ApiKeyInfo:
    """What a key's owner may see of it: never the key, a hint."""
    return ApiKeyInfo(
        key_id=record.key_id,
        name=record.name,
        scopes=[Scope(s) for s in record.scopes],
        hint=record.hint,
        created_at=record.created_at,
        mind_id=record.mind_id,
    )


def revoke_api_key(user_id: str, key_id: str) -> None:
    """DELETE /keys/{keyId}: the listing and the lookup go together; NotFound for another's key."""
    credentials.delete_api_key(user_id, key_id)


def authenticate(authorization: str | None) -> Principal:
    """The Authorization header → Principal, or Unauthorized."""
    if not authorization:
        raise Unauthorized("Send an Authorization: Bearer <token> header.")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("The Authorization header must be 'Bearer <token>'.")
    return verify_api_key(token) if is_api_key(token) else verify_jwt(token)
