"""The local run's fast paths in moto's DynamoDB answer exactly what moto's stock code answers."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core import serialize
from moto.core.serialize import XFormedAttributePicker
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.utilities import dynamo_to_dict

from local import moto_speed

TABLE = "t"
VECTOR = bytes(range(256)) * 3 + b"\x00\xff"


def _item(i: int, user: str) -> dict[str, Any]:
    return {
        "pk": {"S": f"mem:{user}"},
        "sk": {"S": f"nug:{i:05d}"},
        "content": {"S": f"ชอบกาแฟดำ ไม่ใส่น้ำตาล — likes black coffee #{i}"},
        "emb": {"B": VECTOR[i % 7 :]},
        "n": {"N": str(i * 1.5)},
        "ok": {"BOOL": i % 2 == 0},
        "none": {"NULL": True},
        "tags": {"L": [{"S": "drink"}, {"S": "เช้า"}, {"M": {"deep": {"B": b"\x01\x02"}}}]},
        "meta": {"M": {"source": {"S": "user"}, "blob": {"B": b"\x00"}, "nums": {"NS": ["1", "2.5"]}}},
        "ss": {"SS": ["a", "ข"]},
        "bs": {"BS": [b"\x00\x01", b"\xfe"]},
    }


@pytest.fixture
def stock() -> Iterator[None]:
    moto_speed.uninstall()
    yield


@pytest.fixture
def fast() -> Iterator[None]:
    moto_speed.install()
    yield
    moto_speed.uninstall()


def _strip(answer: Any) -> dict[str, Any]:
    plain = dict(answer)
    plain.pop("ResponseMetadata", None)
    return plain


def _scenario() -> list[Any]:
    """Every read the service makes (and a few it does not), answers as botocore parses them."""
    out: list[Any] = []
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        ddb.create_table(
            TableName=TABLE,
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        # written out of order and interleaved between users: the answers must come back sorted
        for i in reversed(range(60)):
            for user in ("bob", "alice", "ก้อง"):
                ddb.put_item(TableName=TABLE, Item=_item(i, user))
        kwargs: dict[str, Any] = {
            "TableName": TABLE,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :nug)",
            "ExpressionAttributeValues": {":pk": {"S": "mem:alice"}, ":nug": {"S": "nug:"}},
            "Limit": 7,
            "ReturnConsumedCapacity": "TOTAL",
        }
        while True:  # pages, each resumed from the last key
            page = _strip(ddb.query(**kwargs))
            out.append(page)
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        for prefix, limit in (("nug:0001", 3), ("nug:0005", 20), ("msg:", 5), ("nug:", 100)):
            # newest first within a prefix, as the session's last messages are read (and an empty one)
            out.append(
                _strip(
                    ddb.query(
                        TableName=TABLE,
                        KeyConditionExpression="pk = :pk AND begins_with(sk, :p)",
                        ExpressionAttributeValues={":pk": {"S": "mem:bob"}, ":p": {"S": prefix}},
                        ScanIndexForward=False,
                        Limit=limit,
                        ConsistentRead=True,
                    )
                )
            )
        out.append(
            _strip(
                ddb.query(
                    TableName=TABLE,
                    KeyConditionExpression="pk = :pk AND sk BETWEEN :a AND :b",
                    ExpressionAttributeValues={
                        ":pk": {"S": "mem:ก้อง"},
                        ":a": {"S": "nug:00010"},
                        ":b": {"S": "nug:00020"},
                    },
                    ProjectionExpression="sk, emb, #t, ss, bs, nothing, meta.#s, tags[1]",
                    ExpressionAttributeNames={"#t": "tags", "#s": "source"},
                    ScanIndexForward=False,
                )
            )
        )
        out.append(  # top-level attributes only (the fast projection) and with a missing one
            _strip(
                ddb.query(
                    TableName=TABLE,
                    KeyConditionExpression="pk = :pk",
                    ExpressionAttributeValues={":pk": {"S": "mem:alice"}},
                    ProjectionExpression="sk, content, emb, #k, n, ok, #none, meta, ss, bs, absent",
                    ExpressionAttributeNames={"#k": "tags", "#none": "none"},
                    Limit=25,
                )
            )
        )
        out.append(_strip(ddb.scan(TableName=TABLE, Limit=50)))
        out.append(
            _strip(ddb.get_item(TableName=TABLE, Key={"pk": {"S": "mem:bob"}, "sk": {"S": "nug:00003"}}))
        )
        out.append(
            _strip(
                ddb.batch_get_item(
                    RequestItems={
                        TABLE: {
                            "Keys": [
                                {"pk": {"S": "mem:bob"}, "sk": {"S": f"nug:{i:05d}"}} for i in (1, 2, 59)
                            ]
                        }
                    }
                )
            )
        )
        out.append(
            _strip(
                ddb.update_item(
                    TableName=TABLE,
                    Key={"pk": {"S": "mem:bob"}, "sk": {"S": "nug:00004"}},
                    UpdateExpression="SET emb = :e",
                    ExpressionAttributeValues={":e": {"B": b"\x07" * 9}},
                    ReturnValues="ALL_NEW",
                )
            )
        )
        out.append(
            _strip(
                ddb.transact_get_items(
                    TransactItems=[
                        {
                            "Get": {
                                "TableName": TABLE,
                                "Key": {"pk": {"S": "mem:bob"}, "sk": {"S": "nug:00004"}},
                            }
                        }
                    ]
                )
            )
        )
        try:
            ddb.put_item(
                TableName=TABLE,
                Item=_item(1, "bob"),
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            out.append(_strip(exc.response))
        # a transaction that fails on its last action leaves nothing of it; one that passes lands whole
        key = {"pk": {"S": "mem:bob"}, "sk": {"S": "nug:00005"}}
        fresh = {"pk": {"S": "mem:bob"}, "sk": {"S": "nug:99999"}, "content": {"S": "new"}}
        for must_exist in ("attribute_not_exists(sk)", "attribute_exists(sk)"):
            try:
                ddb.transact_write_items(
                    TransactItems=[
                        {"Put": {"TableName": TABLE, "Item": fresh}},
                        {
                            "Update": {
                                "TableName": TABLE,
                                "Key": key,
                                "UpdateExpression": "SET content = :c",
                                "ExpressionAttributeValues": {":c": {"S": "changed"}},
                            }
                        },
                        {
                            "ConditionCheck": {
                                "TableName": TABLE,
                                "Key": {"pk": {"S": "mem:bob"}, "sk": {"S": "nug:00006"}},
                                "ConditionExpression": must_exist,
                            }
                        },
                    ]
                )
                out.append("written")
            except ClientError as exc:
                out.append(_strip(exc.response))
            out.append(_strip(ddb.get_item(TableName=TABLE, Key=key)))
            out.append(_strip(ddb.get_item(TableName=TABLE, Key={k: fresh[k] for k in ("pk", "sk")})))
        table = ddb.describe_table(TableName=TABLE)["Table"]
        out.append({k: table[k] for k in ("KeySchema", "ItemCount", "TableStatus")})
    return out


def _sets_sorted(value: Any) -> Any:
    """Sets have no order in DynamoDB (and moto's stock projection reorders them)."""
    if isinstance(value, dict):
        return {k: sorted(v) if k in ("SS", "NS", "BS") else _sets_sorted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_sets_sorted(v) for v in value]
    return value


def test_answers_are_the_stock_answers(stock: None) -> None:
    expected = _scenario()
    moto_speed.install()
    try:
        got = _scenario()
    finally:
        moto_speed.uninstall()
    assert len(expected) > 10 and expected[0]["Items"][0]["emb"]["B"] == VECTOR
    assert _sets_sorted(got) == _sets_sorted(expected)


def _serialize(cls: type[serialize.ResponseSerializer], result: dict[str, Any]) -> dict[str, Any]:
    from moto.core.utils import get_service_model
    from moto.dynamodb.responses import DynamoHandler

    model = get_service_model("dynamodb")  # moto's model, as its responses use
    picker = XFormedAttributePicker(
        response_transformers=getattr(DynamoHandler, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None)
    )
    body = cls(operation_model=model.operation_model("Query"), value_picker=picker).serialize(result)["body"]
    return dict(json.loads(body))


def test_the_serializer_writes_every_attribute_type_as_the_stock_one(stock: None) -> None:
    items = [{k: DynamoType(v) for k, v in _item(i, "alice").items()} for i in range(3)]
    result = dynamo_to_dict({"Count": 3, "ScannedCount": 3, "Items": items, "LastEvaluatedKey": items[-1]})
    fast = _serialize(moto_speed.DynamoJSONSerializer, result)
    assert fast == _serialize(serialize.JSONSerializer, result)
    assert base64.b64decode(fast["Items"][0]["emb"]["B"]) == VECTOR


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"S": "nug:a"}, {"S": "nug:b"}),
        ({"S": "ก"}, {"S": "a"}),
        ({"S": "x"}, {"S": "x"}),
        ({"B": b"\x00\x01"}, {"B": b"\x00\x02"}),
        ({"N": "10"}, {"N": "9"}),  # numbers: by value, not as text (the stock path)
    ],
)
def test_comparisons_are_the_stock_ones(fast: None, a: dict[str, Any], b: dict[str, Any]) -> None:
    x, y = DynamoType(a), DynamoType(b)
    for name, op in moto_speed._COMPARISONS.items():
        stock_op = getattr(DynamoType, name)._synapse_stock
        assert op(x, y) == stock_op(x, y), name
        assert op(y, x) == stock_op(y, x), name


def test_values_of_different_types_still_go_through_moto(fast: None) -> None:
    text, number = DynamoType({"S": "1"}), DynamoType({"N": "1"})
    assert text != number and not text == number  # noqa: SIM201 - both operators are patched
    with pytest.raises(TypeError):  # as stock moto: str and Decimal do not order
        _ = text < number
    assert (DynamoType({"N": "10"}) > DynamoType({"N": "9"})) is True


def test_install_is_idempotent_and_uninstall_restores_moto(stock: None) -> None:
    stock_lt = DynamoType.__lt__
    moto_speed.install()
    moto_speed.install()
    try:
        assert DynamoType.__lt__._synapse_stock is stock_lt  # type: ignore[attr-defined]
        assert serialize.get_serializer_class("dynamodb", "json") is moto_speed.DynamoJSONSerializer
    finally:
        moto_speed.uninstall()
    assert DynamoType.__lt__ is stock_lt
    assert serialize.get_serializer_class("dynamodb", "json") is serialize.JSONSerializer
