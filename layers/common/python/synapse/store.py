"""The only module that builds keys or calls DynamoDB.

One table; everything of a user lives in the partition `mem:<userId>` (see DESIGN.md, "Data").
AWS errors are translated here into the project's own exceptions.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from synapse import aws
from synapse.config import settings
from synapse.errors import NotFound, UpstreamUnavailable, ValidationFailed
from synapse.models import Category, Memory, Priority, Source, iso, parse_iso, utcnow

if TYPE_CHECKING:
    import numpy as np
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]

# uuid5 namespace of memory ids: id = uuid5(NS, userId \x1f category \x1f key)
_MEMORY_NS = uuid.UUID("5a3e2f1c-8b7d-4c6e-9f0a-1b2c3d4e5f60")
_THROTTLED = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
}
# The attributes a memory answer needs (the vector stays behind: it is most of the item's bytes)
_MEMORY_ATTRS = (
    "sk, category, #k, content, tags, priority, #src, verified, confidence, "
    "expires_at, session_id, created_at, updated_at"
)
_MEMORY_NAMES = {"#k": "key", "#src": "source"}


# --- keys ---------------------------------------------------------------------------------


def memory_id(user_id: str, category: str, key: str) -> str:
    """The stable id of (user, category, key): storing the same key again updates, never duplicates."""
    return str(uuid.uuid5(_MEMORY_NS, f"{user_id}\x1f{category}\x1f{key}"))


def user_pk(user_id: str) -> str:
    return f"mem:{user_id}"


def idempotency_pk(user_id: str) -> str:
    """The user's partition in the idempotency table (Powertools' `static_pk_value`; its sort key is
    the request's hash): DELETE /me finds the user's cached ingest answers there."""
    return user_pk(user_id)


_SERVICE_ID = re.compile(r"^[0-9a-f-]{1,64}$")


def _known_shape(value: str, missing: str) -> str:
    """An id from a request path: one of the shape this service makes (uuids, hex), else NotFound
    before DynamoDB is asked (an oversized key would come back as a ValidationException, a 500)."""
    if not _SERVICE_ID.match(value):
        raise NotFound(missing)
    return value


def nugget_sk(mem_id: str) -> str:
    return f"nug:{mem_id}"


def apikey_pk(key_hash: str) -> str:
    return f"key:{key_hash}"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# --- client -------------------------------------------------------------------------------


@cache
def client() -> DynamoDBClient:
    """One client per container, created on first use (standard retry mode absorbs throttling)."""
    return cast("DynamoDBClient", aws.client("dynamodb", connect_timeout=3, read_timeout=10))


def reset() -> None:
    """Forget the cached client and session (tests switch between moto contexts)."""
    client.cache_clear()
    aws.reset()


def _table() -> str:
    return settings().table_name


@contextmanager
def _translate() -> Iterator[None]:
    """AWS failures become UpstreamUnavailable: never a stack trace to the caller."""
    try:
        yield
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "") in _THROTTLED:
            raise UpstreamUnavailable("The database is busy; try again shortly.", retry_after=2) from exc
        raise
    except BotoCoreError as exc:
        raise UpstreamUnavailable("The database is unreachable; try again shortly.", retry_after=5) from exc


def _is_condition_failure(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


# --- attribute codec ----------------------------------------------------------------------


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: float | int) -> dict[str, str]:
    return {"N": str(value)}


def _plain(attr: Mapping[str, Any]) -> Any:
    """A DynamoDB attribute value → Python (numbers to float/int, no Decimal leaks)."""
    ((kind, value),) = attr.items()
    if kind == "S":
        return value
    if kind == "N":
        number = Decimal(value)
        return int(number) if number == number.to_integral_value() and "." not in value else float(number)
    if kind == "BOOL":
        return value
    if kind == "NULL":
        return None
    if kind == "B":
        return value
    if kind == "L":
        return [_plain(v) for v in value]
    if kind == "M":
        return {k: _plain(v) for k, v in value.items()}
    if kind == "SS":
        return list(value)
    if kind == "NS":
        return [_plain({"N": v}) for v in value]
    raise ValueError(f"unsupported attribute type {kind}")


def plain_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in item.items()}


def _memory_from(user_id: str, item: Mapping[str, Any]) -> Memory:
    return memory_from_plain(user_id, plain_item(item))


def memory_from_plain(user_id: str, raw: Mapping[str, Any]) -> Memory:
    return Memory(
        id=raw["sk"].removeprefix("nug:"),
        category=Category(raw["category"]),
        key=raw["key"],
        content=raw["content"],
        tags=raw.get("tags", []),
        priority=Priority(raw.get("priority", "normal")),
        source=Source(raw["source"]),
        verified=bool(raw.get("verified", False)),
        confidence=float(raw.get("confidence", 1.0)),
        expires_at=parse_iso(raw["expires_at"]) if raw.get("expires_at") else None,
        user_id=user_id,
        session_id=raw.get("session_id"),
        created_at=parse_iso(raw["created_at"]),
        updated_at=parse_iso(raw["updated_at"]),
    )


@dataclass(frozen=True)
class Vector:
    """An embedding as stored (`VECTOR_FORMAT` bytes), with its model and dimension."""

    data: bytes
    model: str
    dim: int


# Stored vector layout ("i8t"): a 4-byte tag of the model and dimension, a float32 scale
# (little-endian), then one int8 per dimension; value = int8 * scale. Half the bytes of float16 (so
# half the read units of a cold recall), it decodes straight into one matrix, and on unit vectors
# the cosine ranking is unchanged in practice (bench/ measures top-10 agreement). The tag lets recall
# tell another model's vectors apart inside the matrix, without reading two more attributes per item
# in Python: that per-item work was half of a cold recall at 10k memories.
VECTOR_FORMAT = "i8t"
_HEADER = 8  # tag + scale


def vector_tag(model: str, dim: int) -> bytes:
    return hashlib.sha256(f"{model}/{dim}".encode()).digest()[:4]


def make_vector(vec: np.ndarray, model: str) -> Vector:
    """An embedding → its stored form."""
    import numpy as np  # here, not at the top: most functions never touch a vector (cold start)

    v = np.asarray(vec, dtype=np.float32).ravel()
    peak = float(np.abs(v).max()) if v.size else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    q = np.clip(np.rint(v / scale), -127, 127).astype(np.int8)
    data = vector_tag(model, v.size) + np.array([scale], dtype="<f4").tobytes() + q.tobytes()
    return Vector(data=data, model=model, dim=int(v.size))


def decode_vector(data: bytes) -> np.ndarray:
    import numpy as np

    scale = float(np.frombuffer(data[4:_HEADER], dtype="<f4")[0])
    out: np.ndarray = np.frombuffer(data[_HEADER:], dtype=np.int8).astype(np.float32) * np.float32(scale)
    return out


def decode_matrix(blobs: Sequence[bytes], model: str, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many stored vectors → (indices of the blobs of `model`/`dim`, their int8 matrix, their float32
    scales), in one copy and without a Python loop over the vectors. Other models' blobs are left out."""
    import numpy as np

    width = _HEADER + dim
    n = len(blobs)
    lengths = list(map(len, blobs))
    index = np.arange(n, dtype=np.intp)
    if lengths.count(width) != n:  # another dimension (or format) among them: keep this size only
        index = np.flatnonzero(np.array(lengths) == width)
        blobs = [blobs[i] for i in index.tolist()]
    raw = np.array(blobs, dtype=f"S{width}").view(np.uint8).reshape(len(blobs), width)
    tags = raw[:, :4].copy().view("<u4").ravel()
    mine = tags == np.frombuffer(vector_tag(model, dim), dtype="<u4")[0]
    if not mine.all():
        raw, index = raw[mine], index[mine]
    scales = raw[:, 4:_HEADER].copy().view("<f4").ravel()
    return index, raw[:, _HEADER:].view(np.int8), scales


# --- memories -----------------------------------------------------------------------------


def bump_version(user_id: str) -> None:
    """Every write to a user's memories sets a fresh version token (after the write: a reader that
    saw the old token can only have read older data). Recall caches are checked against it."""
    with _translate():
        client().put_item(
            TableName=_table(),
            Item={"pk": _s(user_pk(user_id)), "sk": _s("ver"), "v": _s(uuid.uuid4().hex)},
        )


def get_version(user_id: str) -> str:
    with _translate():
        item = (
            client()
            .get_item(
                TableName=_table(),
                Key={"pk": _s(user_pk(user_id)), "sk": _s("ver")},
                ConsistentRead=True,
            )
            .get("Item")
        )
    return str(item["v"]["S"]) if item else ""


def _items(kwargs: dict[str, Any]) -> Iterator[Item]:
    """Every item a Query returns, page after page (1 MB each)."""
    while True:
        with _translate():
            page = client().query(**kwargs)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        kwargs = {**kwargs, "ExclusiveStartKey": page["LastEvaluatedKey"]}


def nugget_items(user_id: str) -> Iterator[Item]:
    """Every nugget item of a user, raw (as boto3 returns them), vectors included: what recall scores."""
    kwargs: dict[str, Any] = {
        "TableName": _table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :nug)",
        "ExpressionAttributeValues": {":pk": _s(user_pk(user_id)), ":nug": _s("nug:")},
        # the vector's model and size are in its own bytes (the tag): emb_model/emb_dim are not read
        "ProjectionExpression": _MEMORY_ATTRS + ", emb",
        "ExpressionAttributeNames": _MEMORY_NAMES,
        # consistent: a recall cache built from this read is tagged with the version read before it
        "ConsistentRead": True,
    }
    yield from _items(kwargs)


def _set_fields(
    sets: list[str],
    names: dict[str, str],
    values: dict[str, Any],
    fields: Mapping[str, Any],
    vector: Vector | None,
) -> str:
    """An update expression: `sets`, then every field (None removes it), then the vector."""
    removes: list[str] = []
    for i, (name, value) in enumerate(fields.items()):
        names[f"#f{i}"] = name
        if value is None:
            removes.append(f"#f{i}")
        else:
            values[f":f{i}"] = _attr(value)
            sets.append(f"#f{i} = :f{i}")
    if vector is not None:
        values.update({":emb": {"B": vector.data}, ":embm": _s(vector.model), ":embd": _n(vector.dim)})
        sets += ["emb = :emb", "emb_model = :embm", "emb_dim = :embd"]
    return "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")


def upsert_memory(
    user_id: str,
    *,
    category: Category,
    key: str,
    fields: Mapping[str, Any],
    defaults: Mapping[str, Any],
    now: datetime,
    vector: Vector | None = None,
) -> tuple[Memory, bool]:
    """Create the memory of (category, key), or update it in place. Returns (memory, created).

    `fields` are always written; `defaults` only where the memory has no value yet, so an update
    keeps what the caller did not send. A revision counter tells a create (rev 1) from an update
    in the same atomic write.
    """
    mem_id = memory_id(user_id, category, key)
    names: dict[str, str] = {"#k": "key", "#rev": "rev"}
    values: dict[str, Any] = {
        ":cat": _s(category.value),
        ":key": _s(key),
        ":now": _s(iso(now)),
        ":zero": _n(0),
        ":one": _n(1),
    }
    sets = [
        "category = :cat",
        "#k = :key",
        "updated_at = :now",
        "created_at = if_not_exists(created_at, :now)",
        "#rev = if_not_exists(#rev, :zero) + :one",
    ]
    for i, (name, value) in enumerate(defaults.items()):
        if name in fields or value is None:
            continue
        names[f"#d{i}"] = name
        values[f":d{i}"] = _attr(value)
        sets.append(f"#d{i} = if_not_exists(#d{i}, :d{i})")
    expression = _set_fields(sets, names, values, fields, vector)
    with _translate():
        answer = client().update_item(
            TableName=_table(),
            Key={"pk": _s(user_pk(user_id)), "sk": _s(nugget_sk(mem_id))},
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
    bump_version(user_id)
    item = answer["Attributes"]
    return _memory_from(user_id, item), int(item["rev"]["N"]) == 1


def update_memory(
    user_id: str,
    mem_id: str,
    *,
    fields: Mapping[str, Any],
    now: datetime,
    vector: Vector | None = None,
) -> Memory:
    """Change an existing memory's fields (None removes the attribute). NotFound if it does not exist."""
    _known_shape(mem_id, "No memory with that id.")
    names: dict[str, str] = {"#rev": "rev"}
    values: dict[str, Any] = {":now": _s(iso(now)), ":one": _n(1)}
    sets = ["updated_at = :now", "#rev = #rev + :one"]
    expression = _set_fields(sets, names, values, fields, vector)
    try:
        with _translate():
            answer = client().update_item(
                TableName=_table(),
                Key={"pk": _s(user_pk(user_id)), "sk": _s(nugget_sk(mem_id))},
                UpdateExpression=expression,
                ConditionExpression="attribute_exists(sk)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
    except ClientError as exc:
        if _is_condition_failure(exc):
            raise NotFound("No memory with that id.") from exc
        raise
    bump_version(user_id)
    return _memory_from(user_id, answer["Attributes"])


def get_memory(user_id: str, mem_id: str) -> Memory | None:
    if not _SERVICE_ID.match(mem_id):
        return None
    with _translate():
        answer = client().get_item(
            TableName=_table(),
            Key={"pk": _s(user_pk(user_id)), "sk": _s(nugget_sk(mem_id))},
            ProjectionExpression=_MEMORY_ATTRS,
            ExpressionAttributeNames=_MEMORY_NAMES,
        )
    item = answer.get("Item")
    return _memory_from(user_id, item) if item else None


def delete_memory(user_id: str, mem_id: str) -> Category:
    """Delete a memory; returns its category. NotFound if it does not exist."""
    _known_shape(mem_id, "No memory with that id.")
    try:
        with _translate():
            answer = client().delete_item(
                TableName=_table(),
                Key={"pk": _s(user_pk(user_id)), "sk": _s(nugget_sk(mem_id))},
                ConditionExpression="attribute_exists(sk)",
                ReturnValues="ALL_OLD",
            )
    except ClientError as exc:
        if _is_condition_failure(exc):
            raise NotFound("No memory with that id.") from exc
        raise
    bump_version(user_id)
    return Category(answer["Attributes"]["category"]["S"])


@dataclass(frozen=True)
class MemoryFilter:
    category: Category | None = None
    tag: str | None = None
    source: Source | None = None
    verified: bool | None = None
    live_at: datetime | None = None  # hide memories expired at this time
    expiring_before: datetime | None = None  # only memories with expires_at in (live_at, this]


def _filter_expression(f: MemoryFilter) -> tuple[str | None, dict[str, str], dict[str, Any]]:
    parts: list[str] = []
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    if f.category is not None:
        parts.append("category = :cat")
        values[":cat"] = _s(f.category.value)
    if f.tag is not None:
        parts.append("contains(tags, :tag)")
        values[":tag"] = _s(f.tag)
    if f.source is not None:
        parts.append("#src = :src")
        names["#src"] = "source"
        values[":src"] = _s(f.source.value)
    if f.verified is not None:
        parts.append("verified = :ver")
        values[":ver"] = {"BOOL": f.verified}
    if f.live_at is not None:
        # ISO timestamps of one fixed format compare correctly as strings
        parts.append("(attribute_not_exists(expires_at) OR expires_at > :live)")
        values[":live"] = _s(iso(f.live_at))
    if f.expiring_before is not None:
        parts.append("expires_at <= :before")
        values[":before"] = _s(iso(f.expiring_before))
    return (" AND ".join(parts) or None), names, values


def encode_cursor(payload: Mapping[str, Any]) -> str:
    """An opaque cursor: a position as url-safe base64 JSON (every paged route uses this codec)."""
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict[str, Any]:
    """The payload of a cursor this API made; anything else is a 422 at the cursor."""
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise bad_cursor() from exc
    if not isinstance(payload, dict):
        raise bad_cursor()
    return payload


def bad_cursor() -> ValidationFailed:
    return ValidationFailed.at(["query", "cursor"], "not one this API returned")


def _list_position(cursor: str) -> str:
    sk = decode_cursor(cursor).get("sk")
    if not isinstance(sk, str) or not sk.startswith("nug:"):
        raise bad_cursor()
    return sk


def query_memories(
    user_id: str,
    flt: MemoryFilter,
    *,
    limit: int | None = None,
    cursor: str | None = None,
) -> tuple[list[Memory], str | None]:
    """Memories of a user matching `flt`, in key order, `limit` at most; returns (page, next cursor)."""
    found: list[Memory] = []
    expression, names, values = _filter_expression(flt)
    start = {"pk": _s(user_pk(user_id)), "sk": _s(_list_position(cursor))} if cursor else None
    for item in _query_nuggets(user_id, expression, names, values, start=start):
        found.append(_memory_from(user_id, item))
        if limit is not None and len(found) == limit + 1:
            # one more than asked tells there is a next page, without an extra request
            found.pop()
            return found, encode_cursor({"sk": nugget_sk(found[-1].id)})
    return found, None


def _query_nuggets(
    user_id: str,
    filter_expression: str | None,
    names: dict[str, str],
    values: dict[str, Any],
    *,
    start: dict[str, Any] | None = None,
    projection: str = _MEMORY_ATTRS,
) -> Iterator[Item]:
    """Every nugget item of a user (the prefix query), page by page."""
    kwargs: dict[str, Any] = {
        "TableName": _table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :nug)",
        "ExpressionAttributeValues": {":pk": _s(user_pk(user_id)), ":nug": _s("nug:"), **values},
        "ProjectionExpression": projection,
        "ExpressionAttributeNames": {**_MEMORY_NAMES, **names},
    }
    if filter_expression:
        kwargs["FilterExpression"] = filter_expression
    if start:
        kwargs["ExclusiveStartKey"] = start
    yield from _items(kwargs)


def _attr(value: Any) -> dict[str, Any]:
    """Python → DynamoDB attribute value for the few types memories use."""
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float):
        return _n(value)
    if isinstance(value, datetime):
        return _s(iso(value))
    if isinstance(value, str):
        return _s(value)
    if isinstance(value, bytes):
        return {"B": value}
    if isinstance(value, Sequence):
        return {"L": [_attr(v) for v in value]}
    if isinstance(value, Mapping):
        return {"M": {k: _attr(v) for k, v in value.items()}}
    raise TypeError(f"cannot store {type(value).__name__}")


# --- API keys -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiKeyRecord:
    key_id: str
    user_id: str
    name: str
    scopes: list[str]
    hint: str
    created_at: datetime


def put_api_key(record: ApiKeyRecord, key_hash: str) -> None:
    """The lookup item (by hash, for the authorizer) and the listing item (in the user's partition)."""
    common: dict[str, Any] = {
        "key_id": _s(record.key_id),
        "name": _s(record.name),
        "scopes": {"L": [_s(s) for s in record.scopes]},
        "hint": _s(record.hint),
        "created_at": _s(iso(record.created_at)),
    }
    with _translate():
        client().transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": _table(),
                        "Item": {
                            "pk": _s(apikey_pk(key_hash)),
                            "sk": _s("key"),
                            "user_id": _s(record.user_id),
                            **common,
                        },
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {
                    "Put": {
                        "TableName": _table(),
                        "Item": {
                            "pk": _s(user_pk(record.user_id)),
                            "sk": _s(f"apikey:{record.key_id}"),
                            "key_hash": _s(key_hash),
                            **common,
                        },
                    }
                },
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
    )


def find_api_key(key_hash: str) -> ApiKeyRecord | None:
    with _translate():
        answer = client().get_item(
            TableName=_table(), Key={"pk": _s(apikey_pk(key_hash)), "sk": _s("key")}, ConsistentRead=True
        )
    if "Item" not in answer:
        return None
    raw = plain_item(answer["Item"])
    return _key_record(raw["user_id"], raw)


def list_api_keys(user_id: str) -> list[ApiKeyRecord]:
    return [_key_record(user_id, plain_item(item)) for item in _query_prefix(user_id, "apikey:")]


def delete_api_key(user_id: str, key_id: str) -> None:
    _known_shape(key_id, "No API key with that id.")
    sk = {"pk": _s(user_pk(user_id)), "sk": _s(f"apikey:{key_id}")}
    with _translate():
        listing = client().get_item(TableName=_table(), Key=sk, ConsistentRead=True).get("Item")
    if not listing:
        raise NotFound("No API key with that id.")
    with _translate():
        client().transact_write_items(
            TransactItems=[
                {"Delete": {"TableName": _table(), "Key": sk}},
                {
                    "Delete": {
                        "TableName": _table(),
                        "Key": {"pk": _s(apikey_pk(listing["key_hash"]["S"])), "sk": _s("key")},
                    }
                },
            ]
        )


def _query_prefix(user_id: str, prefix: str) -> Iterator[Item]:
    """Items of a user whose sk starts with `prefix` (the whole partition for "")."""
    kwargs: dict[str, Any] = {
        "TableName": _table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :pre)" if prefix else "pk = :pk",
        "ExpressionAttributeValues": {
            ":pk": _s(user_pk(user_id)),
            **({":pre": _s(prefix)} if prefix else {}),
        },
    }
    yield from _items(kwargs)


# --- conversations: sessions, raw messages, ingest markers, summaries, identity ----------------


def session_sk(session_id: str) -> str:
    return f"ses:{session_id}"


def message_sk(session_id: str, seq: int) -> str:
    return f"msg:{session_id}:{seq:08d}"


def summary_sk(session_id: str, n: int) -> str:
    return f"sum:{session_id}:chunk_{n:04d}"


def chunk_id(sk: str) -> str:
    """A summary chunk's public id, `sum:<sessionId>:chunk_<N>` (API.md): the sort key pads N to four
    digits only so that a session's chunks sort in write order."""
    head, _, n = sk.rpartition("_")
    return f"{head}_{int(n)}"


def _marker_sk(session_id: str, request_hash: str) -> str:
    return f"ing:{session_id}:{request_hash}"


@dataclass(frozen=True)
class StoredMessage:
    seq: int
    role: str
    content: str
    created_at: datetime


@dataclass(frozen=True)
class MessageRange:
    """The sequence numbers one ingest gave its raw messages: first..last (inclusive)."""

    first: int
    last: int
    replayed: bool  # True when this exact request had already stored them (a retry)


def _get(user_id: str, sk: str, projection: str | None = None) -> dict[str, Any] | None:
    kwargs: dict[str, Any] = {
        "TableName": _table(),
        "Key": {"pk": _s(user_pk(user_id)), "sk": _s(sk)},
        "ConsistentRead": True,
    }
    if projection:
        kwargs["ProjectionExpression"] = projection
    with _translate():
        item = client().get_item(**kwargs).get("Item")
    return plain_item(item) if item else None


def append_messages(
    user_id: str,
    session_id: str,
    messages: Sequence[tuple[str, str]],
    *,
    request_hash: str,
    now: datetime,
    ttl_days: int,
    marker_ttl_seconds: int = 3600,
) -> MessageRange:
    """Store one ingest's raw messages and count them into the session, atomically and once.

    One transaction: the session's count moves from the value read to +n (optimistic: a parallel
    ingest of the same session makes us re-read and retry), the messages take the sequence numbers
    in between, and a marker of this request makes a retry of it find its range instead of storing
    the messages twice.
    """
    n = len(messages)
    expires = int(now.timestamp()) + ttl_days * 86400
    for attempt in range(50):
        marker = _get(user_id, _marker_sk(session_id, request_hash))
        # a marker past its ttl is no retry: DynamoDB deletes expired items late (hours, even days)
        if marker is not None and int(marker.get("ttl", 0)) > now.timestamp():
            return MessageRange(first=int(marker["first"]), last=int(marker["last"]), replayed=True)
        session = _get(user_id, session_sk(session_id), "msg_count")
        count = int(session["msg_count"]) if session else 0
        first, last = count + 1, count + n
        pk = _s(user_pk(user_id))
        condition = (
            {
                "ConditionExpression": "msg_count = :count",
                "ExpressionAttributeValues": {":count": _n(count), ":new": _n(last), ":now": _s(iso(now))},
            }
            if session
            else {
                # no count yet; the item may exist all the same (POST /memory/summarize made it)
                "ConditionExpression": "attribute_not_exists(msg_count)",
                "ExpressionAttributeValues": {":new": _n(last), ":now": _s(iso(now))},
            }
        )
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": _table(),
                    "Key": {"pk": pk, "sk": _s(session_sk(session_id))},
                    "UpdateExpression": "SET msg_count = :new, updated_at = :now",
                    **condition,
                }
            },
            {
                "Put": {
                    "TableName": _table(),
                    "Item": {
                        "pk": pk,
                        "sk": _s(_marker_sk(session_id, request_hash)),
                        "first": _n(first),
                        "last": _n(last),
                        "ttl": _n(int(now.timestamp()) + marker_ttl_seconds),
                    },
                    "ConditionExpression": "attribute_not_exists(sk) OR #ttl <= :now_s",
                    "ExpressionAttributeNames": {"#ttl": "ttl"},
                    "ExpressionAttributeValues": {":now_s": _n(int(now.timestamp()))},
                }
            },
        ]
        for i, (role, content) in enumerate(messages):
            items.append(
                {
                    "Put": {
                        "TableName": _table(),
                        "Item": {
                            "pk": pk,
                            "sk": _s(message_sk(session_id, first + i)),
                            "role": _s(role),
                            "content": _s(content),
                            "created_at": _s(iso(now)),
                            "ttl": _n(expires),
                        },
                    }
                }
            )
        if _won(items):
            return MessageRange(first=first, last=last, replayed=False)
        _backoff(attempt)  # another ingest of this session won the race: read again
    raise UpstreamUnavailable("The session is too busy; try again shortly.", retry_after=1)


def _won(items: list[dict[str, Any]]) -> bool:
    """One optimistic transaction: True if written, False if a condition lost a race (read again)."""
    try:
        with _translate():
            client().transact_write_items(TransactItems=items)  # type: ignore[arg-type]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in (
            "TransactionCanceledException",
            "TransactionConflictException",
        ):
            return False
        raise
    return True


def _backoff(attempt: int) -> None:
    import random
    import time

    time.sleep(min(0.5, 0.005 * (2 ** min(attempt, 6))) * random.random())  # noqa: S311


def read_messages(user_id: str, session_id: str, first: int, last: int) -> list[StoredMessage]:
    """Raw messages first..last of a session that are within their TTL (DynamoDB deletes expired
    items late, so an expired message may still be in the table: it is not read)."""
    kwargs: dict[str, Any] = {
        "TableName": _table(),
        "KeyConditionExpression": "pk = :pk AND sk BETWEEN :a AND :b",
        "FilterExpression": "#ttl > :now",
        "ExpressionAttributeNames": {"#ttl": "ttl"},
        "ExpressionAttributeValues": {
            ":pk": _s(user_pk(user_id)),
            ":a": _s(message_sk(session_id, max(first, 0))),
            ":b": _s(message_sk(session_id, last)),
            ":now": _n(int(utcnow().timestamp())),
        },
        "ConsistentRead": True,
    }
    found: list[StoredMessage] = []
    for item in _items(kwargs):
        raw = plain_item(item)
        found.append(
            StoredMessage(
                seq=int(raw["sk"].rsplit(":", 1)[1]),
                role=raw["role"],
                content=raw["content"],
                created_at=parse_iso(raw["created_at"]),
            )
        )
    return found


def session_count(user_id: str, session_id: str) -> int:
    session = _get(user_id, session_sk(session_id), "msg_count")
    return int(session["msg_count"]) if session else 0


@dataclass(frozen=True)
class Summary:
    chunk_id: str
    summary: str
    msg_count: int
    created_at: datetime


def add_summary(
    user_id: str,
    session_id: str,
    *,
    summary: str,
    msg_count: int,
    now: datetime,
    boundary: int | None = None,
) -> Summary | None:
    """Write the session's next chunk (numbered from 1 in write order).

    With `boundary` (the message count an EventBridge event names), at most one chunk is ever
    written for it, however often the event arrives: None is returned for a repeat.
    """
    for attempt in range(50):
        session = _get(user_id, session_sk(session_id), "chunks, boundaries")
        chunks = int(session.get("chunks", 0)) if session else 0
        done = {int(b) for b in (session or {}).get("boundaries", [])}
        if boundary is not None and boundary in done:
            return None
        n = chunks + 1
        values: dict[str, Any] = {":n": _n(n), ":now": _s(iso(now))}
        if session is None:
            condition = "attribute_not_exists(chunks)"
        elif "chunks" in session:
            condition, values[":c"] = "chunks = :c", _n(chunks)
        else:
            condition = "attribute_not_exists(chunks)"
        update = "SET chunks = :n, updated_at = :now"
        if boundary is not None:
            update += " ADD boundaries :b"
            values[":b"] = {"NS": [str(boundary)]}
        sk = summary_sk(session_id, n)
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": _table(),
                    "Key": {"pk": _s(user_pk(user_id)), "sk": _s(session_sk(session_id))},
                    "UpdateExpression": update,
                    "ConditionExpression": condition,
                    "ExpressionAttributeValues": values,
                }
            },
            {
                "Put": {
                    "TableName": _table(),
                    "Item": {
                        "pk": _s(user_pk(user_id)),
                        "sk": _s(sk),
                        "summary": _s(summary),
                        "msg_count": _n(msg_count),
                        "created_at": _s(iso(now)),
                    },
                    "ConditionExpression": "attribute_not_exists(sk)",
                }
            },
        ]
        if _won(items):
            return Summary(chunk_id=chunk_id(sk), summary=summary, msg_count=msg_count, created_at=now)
        _backoff(attempt)  # another writer of this session won the race: read again
    raise UpstreamUnavailable("The session is too busy; try again shortly.", retry_after=1)


def session_boundary_done(user_id: str, session_id: str, boundary: int) -> bool:
    session = _get(user_id, session_sk(session_id), "boundaries")
    return boundary in {int(b) for b in (session or {}).get("boundaries", [])}


def list_summaries(user_id: str, session_id: str) -> list[Summary]:
    found = []
    for item in _query_prefix(user_id, f"sum:{session_id}:chunk_"):
        raw = plain_item(item)
        found.append(
            Summary(
                chunk_id=chunk_id(raw["sk"]),
                summary=raw["summary"],
                msg_count=int(raw["msg_count"]),
                created_at=parse_iso(raw["created_at"]),
            )
        )
    return found


def get_identity(user_id: str) -> tuple[str | None, int | None]:
    """The stored identity line and when it goes stale (epoch seconds; None: never by itself)."""
    with _translate():
        item = (
            client()
            .get_item(
                TableName=_table(),
                Key={"pk": _s(user_pk(user_id)), "sk": _s("identity")},
                ProjectionExpression="#t, stale_at",
                ExpressionAttributeNames={"#t": "text"},
            )
            .get("Item")
        )
    if not item:
        return None, None
    stale_at = item.get("stale_at")
    return str(item["text"]["S"]), int(stale_at["N"]) if stale_at else None


def put_identity(user_id: str, text: str | None, now: datetime, *, stale_at: int | None = None) -> None:
    key = {"pk": _s(user_pk(user_id)), "sk": _s("identity")}
    with _translate():
        if text:
            item = {**key, "text": _s(text), "updated_at": _s(iso(now))}
            if stale_at is not None:
                item["stale_at"] = _n(stale_at)
            client().put_item(TableName=_table(), Item=item)
        else:
            client().delete_item(TableName=_table(), Key=key)


def memory_item(memory: Memory, vector: Vector | None, rev: int) -> dict[str, Any]:
    """A full nugget item (for batched writes, where no update expression is possible)."""
    item: dict[str, Any] = {
        "pk": _s(user_pk(memory.user_id)),
        "sk": _s(nugget_sk(memory.id)),
        "category": _s(memory.category.value),
        "key": _s(memory.key),
        "content": _s(memory.content),
        "tags": _attr(memory.tags),
        "priority": _s(memory.priority.value),
        "source": _s(memory.source.value),
        "verified": {"BOOL": memory.verified},
        "confidence": _n(memory.confidence),
        "created_at": _s(iso(memory.created_at)),
        "updated_at": _s(iso(memory.updated_at)),
        "rev": _n(rev),
    }
    if memory.expires_at is not None:
        item["expires_at"] = _s(iso(memory.expires_at))
    if memory.session_id is not None:
        item["session_id"] = _s(memory.session_id)
    if vector is not None:
        item.update({"emb": {"B": vector.data}, "emb_model": _s(vector.model), "emb_dim": _n(vector.dim)})
    return item


def batch_put(items: Sequence[dict[str, Any]]) -> int:
    """Put items 25 at a time; returns the number of requests made."""
    return _batch_write([{"PutRequest": {"Item": item}} for item in items])


def _batch_write(requests: Sequence[dict[str, Any]], table: str | None = None) -> int:
    """BatchWriteItem 25 requests at a time, re-sending what DynamoDB leaves unprocessed."""
    table = table or _table()
    made = 0
    for start in range(0, len(requests), 25):
        pending: list[Any] = list(requests[start : start + 25])
        attempt = 0
        while pending:
            with _translate():
                answer = client().batch_write_item(RequestItems={table: pending})
            made += 1
            pending = answer.get("UnprocessedItems", {}).get(table, [])
            if pending:
                if attempt >= 8:
                    raise UpstreamUnavailable("The database is busy; try again shortly.", retry_after=2)
                _backoff(attempt)
                attempt += 1
    return made


def put_memories(user_id: str, items: Sequence[dict[str, Any]]) -> int:
    """Full nugget items of one user, batched; then the version bump. Returns the requests made."""
    requests = batch_put(items)
    bump_version(user_id)
    return requests + 1


def memories_with_rev(user_id: str, flt: MemoryFilter | None = None) -> list[tuple[Memory, int]]:
    """Live memories with their revision (ingest needs both to write full items)."""
    expression, names, values = _filter_expression(flt or MemoryFilter())
    return [
        (_memory_from(user_id, item), int(plain_item({"rev": item.get("rev", {"N": "1"})})["rev"]))
        for item in _query_nuggets(
            user_id, expression, {**names, "#rev": "rev"}, values, projection=_MEMORY_ATTRS + ", #rev"
        )
    ]


# --- provider keys, export, deletion -----------------------------------------------------------


@dataclass(frozen=True)
class ProviderRecord:
    provider: str
    ciphertext: bytes
    hint: str
    updated_at: datetime


def put_provider(user_id: str, record: ProviderRecord) -> None:
    with _translate():
        client().put_item(
            TableName=_table(),
            Item={
                "pk": _s(user_pk(user_id)),
                "sk": _s(f"provider:{record.provider}"),
                "ciphertext": {"B": record.ciphertext},
                "hint": _s(record.hint),
                "updated_at": _s(iso(record.updated_at)),
            },
        )


def _provider_from(raw: Mapping[str, Any]) -> ProviderRecord:
    return ProviderRecord(
        provider=raw["sk"].removeprefix("provider:"),
        ciphertext=bytes(raw["ciphertext"]),
        hint=raw["hint"],
        updated_at=parse_iso(raw["updated_at"]),
    )


def get_provider(user_id: str, provider: str) -> ProviderRecord | None:
    raw = _get(user_id, f"provider:{provider}")
    return _provider_from(raw) if raw else None


def list_providers(user_id: str) -> list[ProviderRecord]:
    return [_provider_from(plain_item(item)) for item in _query_prefix(user_id, "provider:")]


def delete_provider(user_id: str, provider: str) -> None:
    try:
        with _translate():
            client().delete_item(
                TableName=_table(),
                Key={"pk": _s(user_pk(user_id)), "sk": _s(f"provider:{provider}")},
                ConditionExpression="attribute_exists(sk)",
            )
    except ClientError as exc:
        if _is_condition_failure(exc):
            raise NotFound("No key is stored for that provider.") from exc
        raise


def user_items(user_id: str) -> Iterator[dict[str, Any]]:
    """Every item of a user's partition, as plain values (vectors included)."""
    for item in _query_prefix(user_id, ""):
        yield plain_item(item)


def delete_user(user_id: str) -> int:
    """Everything of a user: one query over the partition, batched deletes, and the API key lookups
    (which live outside the partition, under the key's hash); first the user's cached ingest answers
    (they hold memory texts). Returns the number of items deleted."""
    table = settings().idempotency_table
    cached = [
        {"id": item["id"], "sk": item["sk"]}
        for item in _items(
            {
                "TableName": table,
                "KeyConditionExpression": "#id = :pk",
                "ExpressionAttributeNames": {"#id": "id", "#sk": "sk"},
                "ExpressionAttributeValues": {":pk": _s(idempotency_pk(user_id))},
                "ProjectionExpression": "#id, #sk",
            }
        )
    ]
    _batch_write([{"DeleteRequest": {"Key": k}} for k in cached], table)
    keys: list[dict[str, Any]] = []
    for item in _query_prefix(user_id, ""):
        keys.append({"pk": item["pk"], "sk": item["sk"]})
        if item["sk"]["S"].startswith("apikey:") and "key_hash" in item:
            keys.append({"pk": _s(apikey_pk(item["key_hash"]["S"])), "sk": _s("key")})
    # the lookups go first: a half-finished deletion must never leave a working key behind
    keys.sort(key=lambda k: not k["pk"]["S"].startswith("key:"))
    _batch_write([{"DeleteRequest": {"Key": k}} for k in keys])
    return len(cached) + len(keys)
