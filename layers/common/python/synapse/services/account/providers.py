"""Users' own provider keys (bring your own Gemini key): stored KMS-encrypted, shown as hints only."""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict

from synapse.aws import kms as secrets
from synapse.core.errors import ValidationFailed
from synapse.core.models.account import ProviderInfo
from synapse.core.models.base import utcnow
from synapse.core.observability import logger
from synapse.core.state import on_reset
from synapse.store.account import credentials

PROVIDERS = ("gemini",)
_KEY = re.compile(r"^[\x21-\x7e]{10,512}$")  # printable ASCII, no spaces
# plaintexts cached per container by (user, ciphertext digest): a changed or deleted key misses.
# Bounded (least recently used out): a warm container serving many users keeps few plaintexts.
_CACHE_SIZE = 256
_cache: OrderedDict[tuple[str, str], str] = OrderedDict()
_lock = threading.Lock()
on_reset(_cache.clear)


def check_provider(provider: str) -> str:
    if provider not in PROVIDERS:
        raise ValidationFailed.at(["path", "provider"], f"must be one of: {', '.join(PROVIDERS)}")
    return provider


def hint(api_key: str) -> str:
    return f"{api_key[:4]}…{api_key[-4:]}"


def put(user_id: str, provider: str, api_key: str) -> ProviderInfo:
    check_provider(provider)
    if not _KEY.match(api_key):
        raise ValidationFailed.at(["body", "api_key"], "must be 10-512 printable characters, no spaces")
    record = credentials.ProviderRecord(
        provider=provider,
        ciphertext=secrets.encrypt(user_id, provider, api_key),
        hint=hint(api_key),
        updated_at=utcnow(),
    )
    credentials.put_provider(user_id, record)
    return _info(record)


def _info(record: credentials.ProviderRecord) -> ProviderInfo:
    return ProviderInfo(provider=record.provider, hint=record.hint, updated_at=record.updated_at)


def list_all(user_id: str) -> list[ProviderInfo]:
    return [_info(r) for r in credentials.list_providers(user_id)]


def delete(user_id: str, provider: str) -> None:
    check_provider(provider)
    credentials.delete_provider(user_id, provider)


def gemini_key_for(user_id: str) -> str | None:
    """The user's own Gemini key if they stored one (used instead of the service key), else None."""
    record = credentials.get_provider(user_id, "gemini")
    if record is None:
        return None
    digest = hashlib.sha256(record.ciphertext).hexdigest()
    with _lock:
        cached = _cache.get((user_id, digest))
        if cached is not None:
            _cache.move_to_end((user_id, digest))
    if cached is not None:
        return cached
    try:
        plain = secrets.decrypt(user_id, "gemini", record.ciphertext)
    except secrets.DecryptionRefused:
        # never usable by this user: behave as if no key were stored, and say so (no secrets logged)
        logger.warning("a stored provider key did not decrypt for its user", extra={"provider": "gemini"})
        return None
    with _lock:
        _cache[(user_id, digest)] = plain
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return plain
