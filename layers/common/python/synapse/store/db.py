"""The DynamoDB client and the few ways this package calls it: get, paged query, batched writes,
optimistic transactions. AWS errors become the project's own exceptions here (`raise ... from`)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from synapse.aws import clients as aws
from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.state import per_container

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]

_THROTTLED = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
}


@per_container
def client() -> DynamoDBClient:
    """One client per container, created on first use (standard retry mode absorbs throttling)."""
    return cast("DynamoDBClient", aws.client("dynamodb", connect_timeout=3, read_timeout=10))


def table() -> str:
    return settings().table_name


@contextmanager
def translate() -> Iterator[None]:
    """AWS failures become UpstreamUnavailable: never a stack trace to the caller."""
    try:
        yield
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code", "") in _THROTTLED:
            raise UpstreamUnavailable("The database is busy; try again shortly.", retry_after=2) from exc
        raise
    except BotoCoreError as exc:
        raise UpstreamUnavailable("The database is unreachable; try again shortly.", retry_after=5) from exc


def is_condition_failure(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def get(
    pk: str,
    sk: str,
    projection: str | None = None,
    names: dict[str, str] | None = None,
    *,
    consistent: bool = True,
) -> Item | None:
    """One item, raw."""
    kwargs: dict[str, Any] = {"TableName": table(), "Key": key(pk, sk)}
    if consistent:
        kwargs["ConsistentRead"] = True
    if projection:
        kwargs["ProjectionExpression"] = projection
    if names:
        kwargs["ExpressionAttributeNames"] = names
    with translate():
        item = client().get_item(**kwargs).get("Item")
    return item


def key(pk: str, sk: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def items(kwargs: dict[str, Any]) -> Iterator[Item]:
    """Every item a Query returns, page after page (1 MB each)."""
    while True:
        with translate():
            page = client().query(**kwargs)
        yield from page.get("Items", [])
        if "LastEvaluatedKey" not in page:
            return
        kwargs = {**kwargs, "ExclusiveStartKey": page["LastEvaluatedKey"]}


def query_prefix(pk: str, prefix: str, **extra: Any) -> Iterator[Item]:
    """Items of a partition whose sk starts with `prefix` (the whole partition for "")."""
    values = {":pk": {"S": pk}, **({":pre": {"S": prefix}} if prefix else {})}
    kwargs: dict[str, Any] = {
        "TableName": table(),
        "KeyConditionExpression": "pk = :pk AND begins_with(sk, :pre)" if prefix else "pk = :pk",
        **extra,
        "ExpressionAttributeValues": {**values, **extra.get("ExpressionAttributeValues", {})},
    }
    yield from items(kwargs)


def batch_write(requests: Sequence[dict[str, Any]], table_name: str | None = None) -> int:
    """BatchWriteItem 25 requests at a time, re-sending what DynamoDB leaves unprocessed; returns the
    number of requests made."""
    name = table_name or table()
    made = 0
    for start in range(0, len(requests), 25):
        pending: list[Any] = list(requests[start : start + 25])
        attempt = 0
        while pending:
            with translate():
                answer = client().batch_write_item(RequestItems={name: pending})
            made += 1
            pending = answer.get("UnprocessedItems", {}).get(name, [])
            if pending:
                if attempt >= 8:
                    raise UpstreamUnavailable("The database is busy; try again shortly.", retry_after=2)
                backoff(attempt)
                attempt += 1
    return made


def won(actions: list[dict[str, Any]]) -> bool:
    """One optimistic transaction: True if written, False if a condition lost a race (read again)."""
    try:
        with translate():
            client().transact_write_items(TransactItems=actions)  # type: ignore[arg-type]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in (
            "TransactionCanceledException",
            "TransactionConflictException",
        ):
            return False
        raise
    return True


def backoff(attempt: int) -> None:
    time.sleep(min(0.5, 0.005 * (2 ** min(attempt, 6))) * random.random())  # noqa: S311


def busy() -> UpstreamUnavailable:
    """What a write that kept losing its race answers."""
    return UpstreamUnavailable("The session is too busy; try again shortly.", retry_after=1)
