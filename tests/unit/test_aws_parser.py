"""The service's DynamoDB response parser gives exactly what botocore's own JSON parser gives."""

from __future__ import annotations

import base64
import json
from typing import Any

import botocore.session
import pytest
from botocore.parsers import create_parser

from synapse.aws import clients as aws
from synapse.core import state

VECTOR = bytes(range(256)) * 3 + b"\x00\x01\x02\x03\x04\x05\x06\x07"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def wire_item(i: int) -> dict[str, Any]:
    """One item as DynamoDB sends it: every attribute type, nested, Thai and English."""
    return {
        "pk": {"S": "mem:alice"},
        "sk": {"S": f"nug:{i:04d}"},
        "content": {"S": f"ชอบกาแฟดำ ไม่ใส่น้ำตาล — likes black coffee #{i}"},
        "emb": {"B": b64(VECTOR[i % 9 :])},
        "confidence": {"N": "0.85"},
        "verified": {"BOOL": i % 2 == 0},
        "expires_at": {"NULL": True},
        "tags": {"L": [{"S": "drink"}, {"S": "เช้า"}, {"M": {"deep": {"B": b64(b"\x01\x02")}}}]},
        "meta": {"M": {"source": {"S": "user"}, "nums": {"NS": ["1", "2.5"]}, "empty": {"M": {}}}},
        "ss": {"SS": ["a", "ข"]},
        "bs": {"BS": [b64(b"\x00\x01"), b64(b"\xfe")]},
    }


def parse_both(operation: str, body: dict[str, Any]) -> tuple[Any, Any]:
    shape = (
        botocore.session.get_session().get_service_model("dynamodb").operation_model(operation).output_shape
    )
    raw = json.dumps(body).encode()

    def response() -> dict[str, Any]:
        return {"body": raw, "headers": {"x-amzn-requestid": "r1"}, "status_code": 200}

    return aws.ItemParser().parse(response(), shape), create_parser("json").parse(response(), shape)


KEY = {"pk": {"S": "mem:alice"}, "sk": {"S": "nug:0009"}}
CAPACITY = {"TableName": "t", "CapacityUnits": 12.5}


@pytest.mark.parametrize(
    ("operation", "body"),
    [
        (
            "Query",
            {
                "Items": [wire_item(i) for i in range(10)],
                "Count": 10,
                "ScannedCount": 10,
                "LastEvaluatedKey": KEY,
                "ConsumedCapacity": CAPACITY,
            },
        ),
        ("Query", {"Items": [], "Count": 0, "ScannedCount": 0}),
        ("Scan", {"Items": [wire_item(1)], "Count": 1, "ScannedCount": 3}),
        ("GetItem", {"Item": wire_item(3)}),
        ("GetItem", {}),
        ("BatchGetItem", {"Responses": {"t": [wire_item(1), wire_item(2)]}, "UnprocessedKeys": {}}),
        ("TransactGetItems", {"Responses": [{"Item": wire_item(4)}, {}]}),
        ("UpdateItem", {"Attributes": wire_item(5)}),
        # values this parser does not take: botocore's parser takes the item (a type DynamoDB may add
        # one day, a null)
        ("GetItem", {"Item": {"pk": {"S": "x"}, "new": {"VECTOR": [1, 2]}}}),
        ("GetItem", {"Item": {"pk": {"S": "x"}, "odd": None}}),
        ("GetItem", {"Item": {"pk": {"S": "x"}, "two": {"S": "a", "N": "1"}}}),
    ],
)
def test_items_parse_as_botocore_parses_them(operation: str, body: dict[str, Any]) -> None:
    mine, botocores = parse_both(operation, body)
    assert mine == botocores


def test_binaries_come_back_as_bytes() -> None:
    mine, _ = parse_both("Query", {"Items": [wire_item(0)], "Count": 1, "ScannedCount": 1})
    item = mine["Items"][0]
    assert item["emb"]["B"] == VECTOR
    assert item["tags"]["L"][2]["M"]["deep"]["B"] == b"\x01\x02"
    assert item["bs"]["BS"] == [b"\x00\x01", b"\xfe"]


def test_errors_are_parsed_by_botocore() -> None:
    shape = botocore.session.get_session().get_service_model("dynamodb").operation_model("Query").output_shape
    body = json.dumps(
        {"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", "message": "no"}
    )
    response = {"body": body.encode(), "headers": {}, "status_code": 400}
    parsed = aws.ItemParser().parse(dict(response), shape)
    assert parsed["Error"]["Code"] == "ResourceNotFoundException"
    assert parsed == create_parser("json").parse(dict(response), shape)


def test_every_client_of_the_service_parses_with_it() -> None:
    state.reset()
    try:
        factory = aws.session().get_component("response_parser_factory")
        assert isinstance(factory.create_parser("json"), aws.ItemParser)
        assert not isinstance(factory.create_parser("rest-json"), aws.ItemParser)
    finally:
        state.reset()
