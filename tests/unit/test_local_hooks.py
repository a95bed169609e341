"""The local run's hooks reach every botocore session the code makes, and never raw_client's."""

from __future__ import annotations

from typing import Any

import boto3
import botocore.session
import pytest

from local.aws import hook_every_session, raw_client
from synapse import aws, state


@pytest.fixture
def restore_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    # hook_every_session patches botocore's Session for the whole process: undone after the test
    monkeypatch.setattr(botocore.session.Session, "__init__", botocore.session.Session.__init__)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    state.reset()


def test_service_and_boto3_sessions_are_hooked_raw_clients_are_not(restore_sessions: None) -> None:
    seen: list[str] = []

    def register(events: Any) -> None:
        events.register("before-call.dynamodb", lambda model, **_: seen.append(model.name))

    # Given the hooks installed, and then a raw client made (as a restart's replay would)
    hook_every_session(register)
    raw = raw_client("dynamodb", endpoint="http://127.0.0.1:9")
    # When the service's client, a boto3 session's client and the raw client are used
    for client in (aws.client("dynamodb"), boto3.session.Session().client("dynamodb"), raw):
        client.meta.events.register("before-send.dynamodb", lambda **_: _answer())
        client.list_tables()
    # Then only the first two were seen
    assert seen == ["ListTables", "ListTables"]


def _answer() -> Any:
    from botocore.awsrequest import AWSResponse

    class Raw:
        def stream(self, **_: Any) -> Any:
            yield b'{"TableNames": []}'

    return AWSResponse("http://local", 200, {}, Raw())
