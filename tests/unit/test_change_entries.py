"""The change-log entry says what changed, and each change becomes its event (no AWS: the entry's
item as `step` builds it, and PutEvents replaced by a recorder)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from synapse.services.memory import changes
from synapse.store import changelog
from synapse.store.changelog import Change, Version
from synapse.store.keys import Space

ALICE = Space("alice")
WORK = Space("alice", "m_work00000001")


def entry_item(space: Space, read_as: Version, said: Sequence[Change]) -> dict[str, Any]:
    """The log entry a write's transaction puts (the second of `step`'s two actions)."""
    update, put = changelog.step(space, read_as, said)
    assert "Update" in update
    return dict(put["Put"]["Item"])


def record(space: Space, item: dict[str, Any], n: int) -> changes.StreamRecord:
    keys = {"pk": item["pk"], "sk": item["sk"]}
    return changes.StreamRecord(sequence_number=f"{n:021d}", keys=keys, image=item)


# --- the entry ------------------------------------------------------------------------------------


def test_an_entry_keeps_each_memorys_change_and_version_beside_the_ids_the_catch_up_reads() -> None:
    # Given a write of three memories (one of them deleted) at seq 7
    said = [
        Change.memory("a", "created", 1),
        Change.memory("b", "verified", 4),
        Change.memory("c", "deleted", 2),
    ]
    item = entry_item(ALICE, Version("e1", 6), said)
    # Then the entry keeps the ids as before (the catch-up's), the changes and versions aligned with them
    assert [v["S"] for v in item["ids"]["L"]] == ["a", "b", "c"]
    assert [v["S"] for v in item["ch"]["L"]] == ["created", "verified", "deleted"]
    assert [v["N"] for v in item["vs"]["L"]] == ["1", "4", "2"]
    assert item["sk"]["S"] == "chg:000000000007" and item["log_seq"] == {"N": "7"}
    assert "ev" not in item
    # And reading it back gives the same changes, its seq and when it was written
    entry = changelog.decode(item)
    assert entry.seq == 7
    assert list(entry.changes) == said
    assert abs((datetime.now(UTC) - entry.at).total_seconds()) < 5
    assert entry.expires - int(entry.at.timestamp()) == pytest.approx(
        changelog.CHANGE_LOG_DAYS * 86400, abs=5
    )


def test_a_memory_changed_twice_in_one_write_is_logged_once_with_its_last_change() -> None:
    item = entry_item(
        ALICE, Version("e1", 1), [Change.memory("a", "created", 1), Change.memory("a", "updated", 2)]
    )
    assert [v["S"] for v in item["ids"]["L"]] == ["a"]
    assert list(changelog.decode(item).changes) == [Change.memory("a", "updated", 2)]


def test_changes_that_are_not_a_memorys_are_kept_apart_and_leave_the_ids_alone() -> None:
    # Given a summary chunk, a proposal (Review's hook) and a mind's deletion, each in an entry
    said = [Change.summary("chat-1", "sum:chat-1:chunk_2"), Change.proposal("p1", "a"), Change.mind_deleted()]
    item = entry_item(WORK, Version("e1", 3), said)
    # Then no memory id is logged for them (a catch-up reads nothing again)...
    assert item["ids"] == {"L": []}
    assert item["sk"]["S"] == "m_work00000001:chg:000000000004"
    # ...and they read back as they were written, with no memory change among them
    entry = changelog.decode(item)
    assert list(entry.changes) == said
    assert entry.memory_changes() == []


def test_the_version_items_recent_keeps_its_bounds() -> None:
    # Given a version with three recent writes, and a write of two memories and a summary
    at = Version("e1", 3, recent=((1, ("a",)), (2, ("b",)), (3, ("c",))))
    update, _ = changelog.step(
        ALICE, at, [Change.memory("d", "created", 1), Change.summary("s", "sum:s:chunk_1")]
    )
    recent = update["Update"]["ExpressionAttributeValues"][":recent"]["L"]
    # Then it keeps the last three writes, each with its memory ids only
    assert [(e["M"]["s"]["N"], [v["S"] for v in e["M"]["ids"]["L"]]) for e in recent] == [
        ("2", ["b"]),
        ("3", ["c"]),
        ("4", ["d"]),
    ]
    # and a write of more ids than it holds empties it (a reader then reads the log)
    update, _ = changelog.step(ALICE, at, [Change.memory(str(i), "created", 1) for i in range(6)])
    assert update["Update"]["ExpressionAttributeValues"][":recent"] == {"L": []}


def test_an_entry_written_before_entries_said_what_changed_still_reads() -> None:
    # Given an entry of the previous release: ids and ttl only
    legacy = {
        "pk": {"S": "mem:alice"},
        "sk": {"S": "chg:000000000003"},
        "ids": {"L": [{"S": "a"}]},
        "ttl": {"N": str(1_800_000_000)},
    }
    entry = changelog.decode(legacy)
    # Then its seq comes from its key, its changes are unknown, and its time from its ttl
    assert entry.seq == 3
    assert list(entry.changes) == [Change.memory("a", "unknown", 0)]
    assert entry.at == datetime.fromtimestamp(1_800_000_000 - changelog.CHANGE_LOG_DAYS * 86400, UTC)


def test_a_memory_change_without_its_id_or_version_is_refused() -> None:
    with pytest.raises(ValueError):
        changelog.step(ALICE, Version(), [Change(kind="created", memory_id="a")])


def test_a_stream_record_names_its_user_and_mind_and_only_entries_are_read() -> None:
    item = entry_item(WORK, Version("e1", 9), [Change.memory("a", "created", 1)])
    space, entry = changelog.from_stream({"pk": item["pk"], "sk": item["sk"]}, item)
    assert space == WORK and entry.seq == 10
    with pytest.raises(ValueError):
        changelog.from_stream({"pk": {"S": "mem:alice"}, "sk": {"S": "nug:a"}}, {})
    with pytest.raises(ValueError):
        changelog.from_stream({"pk": {"S": "key:abc"}, "sk": {"S": "chg:000000000001"}}, {})


# --- the events -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (Change.memory("a", "created", 1), "memory.created"),
        (Change.memory("a", "updated", 2), "memory.updated"),
        (Change.memory("a", "verified", 3), "memory.verified"),
        (Change.memory("a", "restored", 4), "memory.restored"),
        (Change.memory("a", "deleted", 4), "memory.deleted"),
        (Change.memory("a", "superseded", 2), "memory.superseded"),
        # the words Review adds that have no type of their own, and any to come
        (Change.memory("a", "accepted", 5), "memory.updated"),
        (Change.memory("a", "consolidated", 1), "memory.created"),
        (Change.memory("a", "consolidated", 3), "memory.updated"),
        (Change.summary("s", "sum:s:chunk_1"), "summary.created"),
        (Change.proposal("p", "a"), "proposal.created"),
        (Change.mind_deleted(), "mind.deleted"),
    ],
)
def test_each_change_has_its_event_type(change: Change, expected: str) -> None:
    assert changes.detail_type(change) == expected


def test_an_entrys_events_carry_the_contracts_detail_in_the_entrys_order() -> None:
    # Given an entry of a mind with a memory change, a summary, a proposal and a mind deletion
    said = [
        Change.memory("a", "updated", 2),
        Change.summary("chat-1", "sum:chat-1:chunk_1"),
        Change.proposal("p1", "a"),
        Change.mind_deleted(),
    ]
    entry = changelog.decode(entry_item(WORK, Version("e", 11), said))
    # When its events are built
    built = changes.events_of(WORK, entry)
    # Then each names the user, the mind and the seq, and what its change names; its time is the entry's
    base = {"userId": "alice", "mindId": "m_work00000001", "seq": 12}
    assert [(t, d) for t, d, _ in built] == [
        ("memory.updated", {**base, "memoryId": "a", "version": 2, "change": "updated"}),
        ("summary.created", {**base, "sessionId": "chat-1", "chunkId": "sum:chat-1:chunk_1"}),
        ("proposal.created", {**base, "proposalId": "p1", "memoryId": "a"}),
        ("mind.deleted", base),
    ]
    assert all(when == entry.at for _, _, when in built)


class Bus:
    """PutEvents, recorded: refuses the events whose detail matches `refuse` (once each)."""

    def __init__(self, refuse: set[tuple[str, int]] | None = None) -> None:
        self.calls: list[list[tuple[str, dict[str, Any]]]] = []
        self.refuse = set(refuse or ())

    def put(self, events: Sequence[tuple[str, dict[str, Any], datetime]]) -> list[bool]:
        assert 1 <= len(events) <= 10
        self.calls.append([(t, d) for t, d, _ in events])
        out = []
        for _, detail, _ in events:
            key = (detail["mindId"], detail["seq"])
            out.append(key not in self.refuse)
            self.refuse.discard(key)
        return out

    def put_details(self) -> list[dict[str, Any]]:
        return [d for call in self.calls for _, d in call]


@pytest.fixture
def bus(monkeypatch: pytest.MonkeyPatch) -> Bus:
    recorder = Bus()
    monkeypatch.setattr(changes.events, "put", recorder.put)
    return recorder


def writes(space: Space, first: int, count: int, per: int = 1) -> list[dict[str, Any]]:
    """The entries of `count` writes of `per` memories each, from seq first+1."""
    return [
        entry_item(
            space,
            Version("e", seq - 1),
            [Change.memory(f"{space.mind_id}-{seq}-{i}", "created", 1) for i in range(per)],
        )
        for seq in range(first + 1, first + count + 1)
    ]


def test_a_batch_is_put_in_seq_order_per_mind_ten_events_a_call(bus: Bus) -> None:
    # Given records of two minds, the default mind's in reverse order (never in practice, kept anyway)
    mine = writes(ALICE, 0, 3, per=4)
    work = writes(WORK, 0, 2)
    batch = [record(ALICE, i, n) for n, i in enumerate([*reversed(mine), *work])]
    # When the batch is published
    failed = changes.publish(batch)
    # Then all of it is done, each mind's events in seq order, in calls of at most ten
    assert failed == []
    details = bus.put_details()
    assert len(details) == 14
    for mind in ("default", "m_work00000001"):
        seqs = [d["seq"] for d in details if d["mindId"] == mind]
        assert seqs == sorted(seqs)
    assert [len(c) for c in bus.calls] == [10, 4]


def test_the_first_refused_event_stops_the_batch_and_names_every_record_from_there(
    bus: Bus,
) -> None:
    # Given twelve single-memory writes of one mind, and a bus that refuses seq 4's event once
    items = writes(ALICE, 0, 12)
    batch = [record(ALICE, i, n) for n, i in enumerate(items)]
    bus.refuse = {("default", 4)}
    # When the batch is published
    failed = changes.publish(batch)
    # Then records 4..12 are reported (Lambda retries from the lowest: the checkpoint), and no call
    # was made after the refused one
    assert failed == [batch[i].sequence_number for i in range(3, 12)]
    assert len(bus.calls) == 1
    # And when Lambda retries from there, the rest goes through in order
    assert changes.publish(batch[3:]) == []
    assert [d["seq"] for d in bus.put_details()][10:] == list(range(4, 13))


def test_a_record_whose_events_straddle_a_refused_call_is_reported(bus: Bus) -> None:
    # Given a write of 8 memories, then a write of 5 (its events span the first and second call), and
    # a bus that refuses the second call
    items = [*writes(ALICE, 0, 1, per=8), *writes(ALICE, 1, 1, per=5)]
    batch = [record(ALICE, i, n) for n, i in enumerate(items)]
    bus.refuse = {("default", 2)}
    # Then the second record is reported, the first is done
    assert changes.publish(batch) == [batch[1].sequence_number]
    assert [len(c) for c in bus.calls] == [10]


def test_an_unreadable_record_is_skipped_not_retried_forever(bus: Bus) -> None:
    item = writes(ALICE, 0, 1)[0]
    junk = changes.StreamRecord("000000000000000000001", {"pk": {"S": "mem:alice"}, "sk": {"S": "nug:x"}}, {})
    assert changes.publish([junk, record(ALICE, item, 2)]) == []
    assert [d["seq"] for d in bus.put_details()] == [1]


def test_put_refuses_more_than_ten_and_an_aws_error_accepts_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import EndpointConnectionError

    from synapse.aws import events

    when = datetime(2026, 12, 2, tzinfo=UTC)
    with pytest.raises(ValueError):
        events.put([("memory.created", {}, when)] * 11)

    class Down:
        def put_events(self, **_: Any) -> dict[str, Any]:
            raise EndpointConnectionError(endpoint_url="https://events")

    class Partial:
        def __init__(self) -> None:
            self.entries: list[dict[str, Any]] = []

        def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            self.entries = Entries
            return {
                "FailedEntryCount": 1,
                "Entries": [{"EventId": "1"}, {"ErrorCode": "ThrottlingException"}],
            }

    monkeypatch.setattr(events, "client", lambda: Down())
    assert events.put([("memory.created", {"seq": 1}, when)] * 2) == [False, False]
    partial = Partial()
    monkeypatch.setattr(events, "client", lambda: partial)
    assert events.put([("memory.created", {"seq": 1}, when), ("memory.deleted", {"seq": 2}, when)]) == [
        True,
        False,
    ]
    # the entries are the contract's: source, detail-type, detail as JSON, the time of the commit
    first = partial.entries[0]
    assert (first["Source"], first["DetailType"], json.loads(first["Detail"])) == (
        "synapse.memory",
        "memory.created",
        {"seq": 1},
    )
    assert first["Time"] == when
