"""A test can hand the service its own AWS client (DESIGN: clients "can be passed in by tests"):
here a botocore Stubber's, so store code runs with no AWS and no moto."""

from __future__ import annotations

from collections.abc import Iterator

import botocore.session
import pytest
from botocore.stub import Stubber

from synapse.aws import clients as aws
from synapse.core import state
from synapse.core.config import settings
from synapse.store import conversations, db
from synapse.store.keys import Space


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    monkeypatch.setenv("MEMORY_TABLE", "t")
    settings.cache_clear()
    ddb = botocore.session.get_session().create_client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(ddb) as stub:
        aws.use_client("dynamodb", ddb)
        state.reset()
        yield stub
        stub.assert_no_pending_responses()
    aws.use_client("dynamodb", None)
    state.reset()
    settings.cache_clear()


def test_store_uses_the_client_a_test_gives(stubbed: Stubber) -> None:
    # Given the identity item DynamoDB would return
    stubbed.add_response(
        "get_item",
        {"Item": {"text": {"S": "ชื่อ มานี, likes tea"}, "stale_at": {"N": "1800000000"}}},
        {
            "TableName": "t",
            "Key": {"pk": {"S": "mem:alice"}, "sk": {"S": "identity"}},
            "ProjectionExpression": "#t, stale_at",
            "ExpressionAttributeNames": {"#t": "text"},
        },
    )
    # When the store reads it, Then the answer came through the given client
    assert conversations.get_identity(Space("alice")) == ("ชื่อ มานี, likes tea", 1800000000)


def test_without_a_given_client_the_store_makes_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    given = object()
    aws.use_client("dynamodb", given)
    state.reset()
    try:
        assert db.client() is given
    finally:
        aws.use_client("dynamodb", None)
        state.reset()
    own = db.client()
    assert own is not given and own.meta.service_model.service_name == "dynamodb"
    state.reset()
