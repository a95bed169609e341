"""A user's credentials: API keys (a lookup item by hash, a listing in the user's partition) and
provider keys (KMS ciphertexts)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from synapse.core.errors import NotFound
from synapse.core.models.base import iso, parse_iso
from synapse.store import db
from synapse.store.codec import plain_item, s
from synapse.store.keys import (
    APIKEY,
    DEFAULT_MIND,
    LOOKUP_SK,
    PROVIDER,
    apikey_pk,
    apikey_sk,
    is_service_id,
    parse_sk,
    provider_sk,
    user_pk,
)

NO_KEY = "No API key with that id."


@dataclass(frozen=True)
class ApiKeyRecord:
    key_id: str
    user_id: str
    name: str
    scopes: list[str]
    hint: str
    created_at: datetime
    mind_id: str = DEFAULT_MIND


def put_api_key(record: ApiKeyRecord, key_hash: str) -> None:
    """The lookup item (by hash, for the authorizer) and the listing item (in the user's partition)."""
    common: dict[str, Any] = {
        "key_id": s(record.key_id),
        "name": s(record.name),
        "scopes": {"L": [s(scope) for scope in record.scopes]},
        "hint": s(record.hint),
        "created_at": s(iso(record.created_at)),
        "mind_id": s(record.mind_id),
    }
    lookup = {**db.key(apikey_pk(key_hash), LOOKUP_SK), "user_id": s(record.user_id), **common}
    listing = {**db.key(user_pk(record.user_id), apikey_sk(record.key_id)), "key_hash": s(key_hash), **common}
    with db.translate():
        db.client().transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": db.table(),
                        "Item": lookup,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {"Put": {"TableName": db.table(), "Item": listing}},
            ]
        )


def _key_record(user_id: str, raw: Mapping[str, Any]) -> ApiKeyRecord:
    return ApiKeyRecord(
        key_id=raw["key_id"],
        user_id=user_id,
        name=raw["name"],
        scopes=list(raw.get("scopes", [])),
        hint=raw.get("hint", ""),
        created_at=parse_iso(raw["created_at"]),
        mind_id=raw.get("mind_id", DEFAULT_MIND),
    )


def find_api_key(key_hash: str) -> ApiKeyRecord | None:
    item = db.get(apikey_pk(key_hash), LOOKUP_SK)
    if item is None:
        return None
    raw = plain_item(item)
    return _key_record(raw["user_id"], raw)


def list_api_keys(user_id: str) -> list[ApiKeyRecord]:
    return [_key_record(user_id, plain_item(item)) for item in db.query_prefix(user_pk(user_id), APIKEY)]


def api_key_from_item(user_id: str, raw: Mapping[str, Any]) -> ApiKeyRecord:
    """An API key listing item as plain values (a user's export) → its record."""
    return _key_record(user_id, raw)


def delete_api_key(user_id: str, key_id: str) -> None:
    """The listing and the lookup go together; NotFound for a key that is not the user's."""
    if not is_service_id(key_id):
        raise NotFound(NO_KEY)
    listing = db.get(user_pk(user_id), apikey_sk(key_id))
    if not listing:
        raise NotFound(NO_KEY)
    with db.translate():
        db.client().transact_write_items(
            TransactItems=[
                {"Delete": {"TableName": db.table(), "Key": db.key(user_pk(user_id), apikey_sk(key_id))}},
                {
                    "Delete": {
                        "TableName": db.table(),
                        "Key": db.key(apikey_pk(listing["key_hash"]["S"]), LOOKUP_SK),
                    }
                },
            ]
        )


# --- provider keys ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderRecord:
    provider: str
    ciphertext: bytes
    hint: str
    updated_at: datetime


def put_provider(user_id: str, record: ProviderRecord) -> None:
    with db.translate():
        db.client().put_item(
            TableName=db.table(),
            Item={
                **db.key(user_pk(user_id), provider_sk(record.provider)),
                "ciphertext": {"B": record.ciphertext},
                "hint": s(record.hint),
                "updated_at": s(iso(record.updated_at)),
            },
        )


def provider_from_item(raw: Mapping[str, Any]) -> ProviderRecord:
    """A provider item as plain values → its record (the ciphertext too: callers show hints only)."""
    return ProviderRecord(
        provider=parse_sk(raw["sk"]).name,
        ciphertext=bytes(raw.get("ciphertext", b"")),
        hint=raw["hint"],
        updated_at=parse_iso(raw["updated_at"]),
    )


def get_provider(user_id: str, provider: str) -> ProviderRecord | None:
    item = db.get(user_pk(user_id), provider_sk(provider))
    return provider_from_item(plain_item(item)) if item else None


def list_providers(user_id: str) -> list[ProviderRecord]:
    return [provider_from_item(plain_item(item)) for item in db.query_prefix(user_pk(user_id), PROVIDER)]


def delete_provider(user_id: str, provider: str) -> None:
    try:
        with db.translate():
            db.client().delete_item(
                TableName=db.table(),
                Key=db.key(user_pk(user_id), provider_sk(provider)),
                ConditionExpression="attribute_exists(sk)",
            )
    except ClientError as exc:
        if db.is_condition_failure(exc):
            raise NotFound("No key is stored for that provider.") from exc
        raise
