"""The local run's durability: the write journal (kept at moto's server), its replay and compaction,
TTL sweeps, the KMS key."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local.aws import create_table, ensure_kms_key, raw_client, sweep_expired
from local.journal import Journal, JournalError, MotoTap, decode, encode, processed_batch
from local.template import parse
from tests.unit.local_moto import client, moto_server

FIXTURE = Path(__file__).parents[1] / "fixtures" / "local_template" / "template.yaml"
TABLE = "MemoryTable"


def _tables(client) -> None:
    tpl = parse(FIXTURE)
    assert create_table(client, TABLE, tpl.tables["MemoryTable"]) == "ttl"
    assert create_table(client, "IdempotencyTable", tpl.tables["IdempotencyTable"]) == "expiration"


def _key(sk: str) -> dict:
    return {"pk": {"S": "mem:alice"}, "sk": {"S": sk}}


def test_bytes_round_trip_through_the_json_encoding() -> None:
    value = {"Item": {"emb": {"B": b"\x00\xff"}, "bs": {"BS": [b"a", b"b"]}, "n": {"N": "1"}}}
    line = json.dumps(encode(value))
    assert decode(json.loads(line)) == value


def test_unprocessed_batch_requests_are_left_out() -> None:
    put_a = {"PutRequest": {"Item": _key("a")}}
    put_b = {"PutRequest": {"Item": _key("b")}}
    params = {"RequestItems": {TABLE: [put_a, put_b]}}
    assert processed_batch(params, {TABLE: [put_b]}) == {"RequestItems": {TABLE: [put_a]}}
    assert processed_batch(params, {TABLE: [put_a, put_b]}) is None
    assert processed_batch(params, {}) == params


def test_successful_writes_are_journaled_at_motos_server_and_replay_into_fresh_tables(
    tmp_path: Path,
) -> None:
    # Given moto's server with the journal's tap, and a client writing through every write operation
    journal = Journal(tmp_path / "journal.jsonl")
    tap = MotoTap()
    tap.attach(journal)
    with moto_server(tap) as endpoint:
        ddb = client("dynamodb", endpoint)
        _tables(ddb)
        ddb.put_item(TableName=TABLE, Item={**_key("nug:1"), "emb": {"B": b"\x00\x01\xff"}, "c": {"S": "ก"}})
        ddb.update_item(
            TableName=TABLE,
            Key=_key("ses:s1"),
            UpdateExpression="ADD msg_count :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )
        ddb.batch_write_item(
            RequestItems={
                TABLE: [{"PutRequest": {"Item": {**_key(f"msg:{i}"), "v": {"N": str(i)}}}} for i in range(3)]
            }
        )
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": _key("nug:2"),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                {"Delete": {"TableName": TABLE, "Key": _key("msg:0")}},
            ]
        )
        ddb.delete_item(TableName=TABLE, Key=_key("msg:1"))
        ddb.put_item(
            TableName="IdempotencyTable", Item={"id": {"S": "i1"}, "expiration": {"N": "9999999999"}}
        )
        # a failed conditional write is not journaled
        with pytest.raises(ClientError):
            ddb.put_item(TableName=TABLE, Item=_key("nug:1"), ConditionExpression="attribute_not_exists(pk)")
        ddb.get_item(TableName=TABLE, Key=_key("nug:1"))  # reads are not journaled
        ops = [op for op, _ in journal.records()]
        assert ops == [
            "PutItem",
            "UpdateItem",
            "BatchWriteItem",
            "TransactWriteItems",
            "DeleteItem",
            "PutItem",
        ]

        expected = sorted(json.dumps(encode(i), sort_keys=True) for i in _scan(ddb, TABLE))

        # When the journal is replayed into new, empty tables (a raw client: the tap leaves it alone)
        ddb.delete_table(TableName=TABLE)
        ddb.delete_table(TableName="IdempotencyTable")
        plain = raw_client("dynamodb", endpoint=endpoint)
        _tables(plain)
        assert journal.replay(plain) == (6, 0)
        assert len(list(journal.records())) == 6  # the replay did not journal its writes again

        # Then the tables hold what they held before, bytes included
        assert sorted(json.dumps(encode(i), sort_keys=True) for i in _scan(plain, TABLE)) == expected
        item = plain.get_item(TableName=TABLE, Key=_key("nug:1"))["Item"]
        assert item["emb"]["B"] == b"\x00\x01\xff"
        assert plain.get_item(TableName="IdempotencyTable", Key={"id": {"S": "i1"}}).get("Item")

        # And compaction rewrites the journal as one PutItem per item, which replays the same
        assert journal.compact(plain, [TABLE, "IdempotencyTable"]) == len(expected) + 1
        journal.close()
        assert {op for op, _ in journal.records()} == {"PutItem"}
        plain.delete_table(TableName=TABLE)
        plain.delete_table(TableName="IdempotencyTable")
        _tables(plain)
        assert journal.replay(plain) == (len(expected) + 1, 0)
        assert sorted(json.dumps(encode(i), sort_keys=True) for i in _scan(plain, TABLE)) == expected


def test_a_write_is_on_disk_before_its_answer_leaves_motos_server(tmp_path: Path) -> None:
    # Given a journal that records what the file holds at each append
    on_disk_at_append: list[int] = []

    class Watching(Journal):
        def append_many(self, records: list) -> None:
            super().append_many(records)
            on_disk_at_append.append(len(self.path.read_bytes().splitlines()))

    journal = Watching(tmp_path / "journal.jsonl")
    tap = MotoTap()
    tap.attach(journal)
    with moto_server(tap) as endpoint:
        ddb = client("dynamodb", endpoint)
        _tables(ddb)
        # When three writes are acknowledged
        for n in range(3):
            ddb.put_item(TableName=TABLE, Item=_key(f"nug:{n}"))
            # Then each was in the file (flushed and fsync'ed) by the time the client had its answer
            assert on_disk_at_append[-1] == n + 1
            assert len((tmp_path / "journal.jsonl").read_bytes().splitlines()) == n + 1
    journal.close()


def test_parallel_writers_are_journaled_in_the_order_moto_applied_them(tmp_path: Path) -> None:
    # Given four clients appending to one list at once
    journal = Journal(tmp_path / "journal.jsonl")
    tap = MotoTap()
    tap.attach(journal)
    with moto_server(tap) as endpoint:
        _tables(client("dynamodb", endpoint))

        def append(worker: int) -> None:
            mine = client("dynamodb", endpoint)
            for n in range(10):
                mine.update_item(
                    TableName=TABLE,
                    Key=_key("order"),
                    UpdateExpression="SET h = list_append(if_not_exists(h, :empty), :w)",
                    ExpressionAttributeValues={":empty": {"L": []}, ":w": {"L": [{"S": f"{worker}.{n}"}]}},
                )

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(append, range(4)))
        applied = [
            v["S"]
            for v in client("dynamodb", endpoint).get_item(TableName=TABLE, Key=_key("order"))["Item"]["h"][
                "L"
            ]
        ]
    journal.close()
    # Then the journal holds the 40 writes in the order moto applied them
    journaled = [p["ExpressionAttributeValues"][":w"]["L"][0]["S"] for _, p in journal.records()]
    assert len(applied) == 40 and len(set(applied)) == 40
    assert journaled == applied
    # and replaying it ends where moto ended
    with moto_server() as endpoint:
        plain = raw_client("dynamodb", endpoint=endpoint)
        _tables(plain)
        assert journal.replay(plain) == (40, 0)
        item = plain.get_item(TableName=TABLE, Key=_key("order"))["Item"]
        assert [v["S"] for v in item["h"]["L"]] == applied


def test_a_write_that_cannot_be_journaled_is_not_acknowledged(tmp_path: Path) -> None:
    class Full(Journal):
        def append_many(self, records: list) -> None:
            raise OSError(28, "No space left on device")

    tap = MotoTap()
    tap.attach(Full(tmp_path / "journal.jsonl"))
    with moto_server(tap) as endpoint:
        ddb = client("dynamodb", endpoint)
        _tables(ddb)
        with pytest.raises(ClientError) as caught:
            ddb.put_item(TableName=TABLE, Item=_key("nug:1"))
        # a 400 that botocore does not retry (the write is in moto's memory already)
        assert caught.value.response["Error"]["Code"] == "LocalJournalFailure"
        assert caught.value.response["ResponseMetadata"]["RetryAttempts"] == 0
    assert issubclass(JournalError, RuntimeError)


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("PutItem", {"TableName": TABLE, "Item": _key("a")})
    journal.close()
    with (tmp_path / "j.jsonl").open("ab") as fh:
        fh.write(b'{"op":"PutItem","params":{"Tab')
    assert [op for op, _ in journal.records()] == ["PutItem"]


def _scan(client, table: str) -> list[dict]:
    return [i for page in client.get_paginator("scan").paginate(TableName=table) for i in page["Items"]]


@mock_aws
def test_the_ttl_sweep_deletes_expired_items_only() -> None:
    ddb = boto3.client("dynamodb")
    _tables(ddb)
    now = int(time.time())
    ddb.put_item(TableName=TABLE, Item={**_key("msg:old"), "ttl": {"N": str(now - 10)}})
    ddb.put_item(TableName=TABLE, Item={**_key("msg:new"), "ttl": {"N": str(now + 1000)}})
    ddb.put_item(TableName=TABLE, Item=_key("nug:forever"))
    assert sweep_expired(ddb, TABLE, "ttl", ["pk", "sk"], now=now) == 1
    assert sorted(i["sk"]["S"] for i in _scan(ddb, TABLE)) == ["msg:new", "nug:forever"]


def test_the_kms_key_survives_a_restart_with_its_encryption_context(tmp_path: Path) -> None:
    state = tmp_path / "kms.json"
    context = {"userId": "alice", "provider": "gemini"}
    # Given a key made on a first run, and a ciphertext under it
    with mock_aws():
        kms = boto3.client("kms")
        key_id = ensure_kms_key(kms, state)
        blob = kms.encrypt(KeyId=key_id, Plaintext=b"AIza-secret", EncryptionContext=context)[
            "CiphertextBlob"
        ]
    assert oct(state.stat().st_mode & 0o777) == "0o600"
    # When the process restarts (a fresh, empty moto)
    with mock_aws():
        kms = boto3.client("kms")
        assert ensure_kms_key(kms, state) == key_id
        # Then the old ciphertext decrypts, and only with its encryption context
        assert kms.decrypt(CiphertextBlob=blob, EncryptionContext=context)["Plaintext"] == b"AIza-secret"
        with pytest.raises(ClientError):
            kms.decrypt(CiphertextBlob=blob, EncryptionContext={"userId": "bob", "provider": "gemini"})
        assert kms.describe_key(KeyId=key_id)["KeyMetadata"]["KeyId"] == key_id
