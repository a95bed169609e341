"""Snapshots, proven (search/snapshot.py, store/snapshots.py, search/cache.py): a container that holds
no corpus loads the mind's snapshot and the change log's tail since it, and what it builds is exactly
what a full read builds, through creates, updates, deletes, verifications, restores, expiries, summary
chunks (log entries with no memory in them), minds, and a mind deleted and made again; nothing deleted
comes back; a snapshot goes with its mind; a reader asks for a new one when it finds none or one far
behind, and never loads one it cannot trust."""

from __future__ import annotations

import threading
import uuid
from datetime import timedelta
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.lambdas import SNAPSHOT_BUCKET
from synapse.core.errors import NotFound, UpstreamUnavailable
from synapse.core.models.base import Category, Change, Source, utcnow
from synapse.core.models.memory import Memory, MemoryIn, MemoryPatch, RestoreIn
from synapse.core.models.minds import MindIn
from synapse.core.principal import ALL_SCOPES, Principal
from synapse.search import cache, snapshot
from synapse.search.corpus import build
from synapse.services.account import minds, privacy
from synapse.services.memory import memories
from synapse.store import changelog, conversations, nuggets, snapshots
from synapse.store.keys import Space, snapshot_key, snapshot_mind_prefix, snapshot_user_prefix
from tests.integration.test_incremental_corpus import MODEL_KEY, WORDS, fake_vector, same_corpus, spy, text


class Seen:
    """What the readers did: SnapshotDue sent (user, mind, epoch, seq, model) and snapshots loaded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.due: list[tuple[Any, ...]] = []
        self.loaded = 0
        unpack = snapshot.unpack

        def loading(*args: Any) -> Any:
            got = unpack(*args)
            self.loaded += 1
            return got

        monkeypatch.setattr(cache.events, "publish_snapshot_due", lambda *a: self.due.append(a))
        monkeypatch.setattr(cache.snapshot, "unpack", loading)


@pytest.fixture
def seen(aws: Any, monkeypatch: pytest.MonkeyPatch) -> Seen:
    monkeypatch.setattr(memories, "embed_document", fake_vector)
    monkeypatch.setattr(cache, "settings", lambda: type("S", (), {"recall_cache": True})())
    return Seen(monkeypatch)


def objects(prefix: str = "snapshots/") -> list[str]:
    listed = boto3.client("s3").list_objects_v2(Bucket=SNAPSHOT_BUCKET, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def fresh_container(monkeypatch: pytest.MonkeyPatch) -> cache.CorpusCache:
    """A container that holds no corpus (a new Lambda container)."""
    container = cache.CorpusCache(10_000)
    monkeypatch.setattr(cache, "CACHE", container)
    return container


def write_snapshot(monkeypatch: pytest.MonkeyPatch, space: Space, model_key: str | None = MODEL_KEY) -> str:
    """The writer, in a container of its own (it loads as any reader, from its own copy)."""
    fresh_container(monkeypatch)
    return cache.write_snapshot(space, model_key)


def person(user: str | None = None) -> Principal:
    return Principal(user or f"u{uuid.uuid4().hex[:10]}", "user", frozenset(ALL_SCOPES))


def put(who: Principal, key: str, content: str, tags: list[str] | None = None) -> str:
    body = MemoryIn(category=Category.fact, key=key, content=content, tags=tags or [])
    return memories.put(who, minds.resolve(who), body)[0].id


# --- the equivalence, through every kind of write ------------------------------------------------------

op = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 7), st.lists(st.integers(0, 30), min_size=1, max_size=6)),
    st.tuples(st.just("edit"), st.integers(0, 7), st.lists(st.integers(0, 30), min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.integers(0, 7), st.just([])),
    st.tuples(st.just("verify"), st.integers(0, 7), st.just([])),
    st.tuples(st.just("restore"), st.integers(0, 7), st.just([])),
    st.tuples(st.just("expire"), st.integers(0, 7), st.just([])),
    # a session's summary chunk: a change-log entry with no memory in it (summary.created)
    st.tuples(st.just("summary"), st.integers(0, 2), st.just([])),
    st.tuples(st.just("mind"), st.just(0), st.just([])),  # a second mind (then used)
    st.tuples(st.just("drop"), st.just(0), st.just([])),  # DELETE /minds of it, and one made anew
    st.tuples(st.just("forget"), st.just(0), st.just([])),  # DELETE /me, and the user starts again
    st.tuples(
        st.just("snapshot"), st.integers(0, 1), st.just([])
    ),  # the writer (0: recall's model, 1: ingest's)
    st.tuples(st.just("cold"), st.just(0), st.just([])),  # a recall on a container without the mind
    st.tuples(st.just("recall"), st.just(0), st.just([])),  # a recall on a container that keeps it
    # (supersessions, when they exist: an op here that supersedes a memory; hidden like an expiry)
)


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(op, min_size=1, max_size=30))
def test_a_snapshot_and_its_tail_build_exactly_what_a_full_read_builds(
    seen: Seen, monkeypatch: pytest.MonkeyPatch, ops: list[tuple[str, int, list[int]]]
) -> None:
    play(monkeypatch, seen, ops)


# every kind of write between snapshots and cold loads, each cold load from a snapshot
FIXED = [
    ("put", 1, [1, 2, 3]), ("snapshot", 0, []), ("cold", 0, []),
    ("put", 2, [4, 4, 5]), ("summary", 0, []), ("edit", 1, [6, 7, 8]), ("cold", 0, []),
    ("verify", 2, []), ("restore", 1, []), ("expire", 2, []), ("delete", 0, []), ("cold", 0, []),
    ("snapshot", 1, []), ("put", 3, [9]), ("cold", 0, []), ("recall", 0, []),
    ("mind", 0, []), ("put", 1, [1]), ("snapshot", 0, []), ("delete", 1, []), ("cold", 0, []),
    ("drop", 0, []), ("put", 2, [2]), ("snapshot", 0, []), ("cold", 0, []),
    ("forget", 0, []), ("put", 4, [3, 4]), ("cold", 0, []), ("snapshot", 0, []), ("cold", 0, []),
]  # fmt: skip


def test_a_fixed_sequence_loads_every_cold_container_from_the_snapshot(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = play(monkeypatch, seen, FIXED)
    # all cold loads but the one right after DELETE /me, before a snapshot of the new epoch was written
    assert loaded == sum(1 for kind, *_ in FIXED if kind == "cold") - 1


def play(monkeypatch: pytest.MonkeyPatch, seen: Seen, ops: list[tuple[str, int, list[int]]]) -> int:
    """Run the operations; after every load compare with a full read. Returns how many cold loads
    came from a snapshot."""
    user = person()
    people = [user]
    warm = cache.CorpusCache(10_000)  # a recall container that keeps its corpora
    ids: dict[tuple[str, int], str] = {}

    def first(who: Principal) -> None:  # a mind starts with a memory (never written: no version)
        ids[(who.mind_id, 0)] = put(who, "k0", "coffee in Berlin" if who.mind_id == "default" else "ข้าวซอย")

    first(user)
    from_snapshot = 0
    for kind, n, words in ops:
        who = people[-1]
        space = minds.resolve(who).space
        key = (who.mind_id, n)
        mem_id = ids.get(key)
        if kind == "put":
            ids[key] = put(who, f"k{n}", text(words), [WORDS[n % 10].lower()])
        elif kind == "mind" and len(people) == 1:
            made = minds.create(user, MindIn(name=f"mind {uuid.uuid4().hex[:6]}"))
            people.append(user.in_mind(made.mind_id))
            first(people[-1])
        elif kind == "drop" and len(people) == 2:
            gone = people.pop()
            minds.delete(user, gone.mind_id)
            assert objects(snapshot_mind_prefix(user.user_id, gone.mind_id)) == []
            made = minds.create(user, MindIn(name=f"mind {uuid.uuid4().hex[:6]}"))
            people.append(user.in_mind(made.mind_id))
            first(people[-1])
        elif kind == "forget":
            privacy.delete(user.user_id)
            assert objects(snapshot_user_prefix(user.user_id)) == []
            people[:] = [user]
            ids.clear()
            first(user)
        elif kind == "summary":
            said = conversations.add_summary(space, f"s{n}", summary="we talked", msg_count=6, now=utcnow())
            assert said is not None
        elif kind == "snapshot":
            assert write_snapshot(monkeypatch, space, MODEL_KEY if n == 0 else None) in ("written", "current")
        elif kind in ("cold", "recall"):
            if kind == "cold":
                fresh_container(monkeypatch)
            else:
                monkeypatch.setattr(cache, "CACHE", warm)
            before = seen.loaded
            got = cache.load(space, MODEL_KEY)
            from_snapshot += kind == "cold" and seen.loaded > before
            same_corpus(got, build(nuggets.read_columns(space), "", MODEL_KEY))
        elif mem_id is not None:
            mind = minds.resolve(who)
            try:
                if kind == "edit":
                    memories.update(who, mind, mem_id, MemoryPatch(content=text(words), priority="high"))
                elif kind == "delete":
                    memories.delete(who, mind, mem_id)
                    del ids[key]
                elif kind == "verify":
                    memories.verify(who, mind, mem_id)
                elif kind == "restore":
                    memories.restore(who, mind, mem_id, RestoreIn(version=1))
                elif kind == "expire":
                    memories.update(who, mind, mem_id, MemoryPatch(expires_at=utcnow() - timedelta(days=1)))
            except NotFound:  # an expired memory is 404 to reads (verify, restore)
                pass
    return from_snapshot


# --- what a cold load reads ----------------------------------------------------------------------------


def test_a_cold_load_reads_the_version_the_snapshot_and_the_changed_memories_only(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind of 40 memories, its snapshot, then two writes
    who = person()
    space = Space(who.user_id)
    for i in range(40):
        put(who, f"k{i}", text([i, i + 1]))
    assert write_snapshot(monkeypatch, space) == "written"
    put(who, "k3", "I moved to Berlin")
    put(who, "new", "a new fact")
    # When a container that holds nothing loads the mind
    fresh_container(monkeypatch)
    calls = spy(monkeypatch)
    got = cache.load(space, MODEL_KEY)
    # Then it read the version (which names the two writes), the snapshot, and those two memories:
    # never the mind's memories
    assert [c[0] for c in calls] == ["get_item", "batch_get_item"]
    assert seen.loaded == 1 and len(got) == 41 and "I moved to Berlin" in got.columns.contents
    (batch,) = calls[1][1]["RequestItems"].values()
    assert len(batch["Keys"]) == 2
    same_corpus(got, build(nuggets.read_columns(space), "", MODEL_KEY))
    # And it asked for no new snapshot: two memories behind is close enough
    assert seen.due == []


def test_a_deleted_memory_never_comes_back_from_a_snapshot(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot holding a memory
    who = person()
    space = Space(who.user_id)
    secret = put(who, "secret", "my password hint is coffee")
    put(who, "other", "tea in Berlin")
    assert write_snapshot(monkeypatch, space) == "written"
    # When the memory is deleted (DELETE /memory/{id}) and a container without the mind loads it
    memories.delete(who, minds.resolve(who), secret)
    fresh_container(monkeypatch)
    got = cache.load(space, MODEL_KEY)
    # Then it came from the snapshot, and the deletion in the change log's tail took the memory out
    assert seen.loaded == 1
    assert secret not in got.columns.ids and "my password hint is coffee" not in got.columns.contents
    same_corpus(got, build(nuggets.read_columns(space), "", MODEL_KEY))
    # And the next snapshot no longer holds it at all
    assert write_snapshot(monkeypatch, space) == "written"
    (key,) = objects(snapshot_user_prefix(who.user_id))
    body = boto3.client("s3").get_object(Bucket=SNAPSHOT_BUCKET, Key=key)["Body"].read()
    assert b"password hint" not in body


# --- a snapshot goes with its mind ---------------------------------------------------------------------


def test_deleting_a_mind_deletes_its_snapshots_and_no_others(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given alice's default mind and a second mind, and bob, each with a snapshot
    alice, bob = person(), person()
    mind = minds.create(alice, MindIn(name="work")).mind_id
    in_mind = alice.in_mind(mind)
    for who in (alice, in_mind, bob):
        put(who, "k", "coffee")
        assert write_snapshot(monkeypatch, minds.resolve(who).space) == "written"
    assert len(objects()) == 3
    # When alice deletes the second mind (DELETE /minds/{id})
    minds.delete(alice, mind)
    # Then its snapshot is gone, and only its
    assert objects(snapshot_mind_prefix(alice.user_id, mind)) == []
    assert (
        len(objects(snapshot_user_prefix(alice.user_id))) == 1
        and len(objects(snapshot_user_prefix(bob.user_id))) == 1
    )


def test_deleting_a_user_deletes_every_snapshot_of_theirs_and_no_others(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given alice with snapshots of two minds, and bob with one
    alice, bob = person(), person()
    in_mind = alice.in_mind(minds.create(alice, MindIn(name="work")).mind_id)
    for who in (alice, in_mind, bob):
        put(who, "k", "coffee")
        assert write_snapshot(monkeypatch, minds.resolve(who).space) == "written"
    # When alice deletes herself (DELETE /me)
    privacy.delete(alice.user_id)
    # Then none of hers is left, and bob's is there
    assert objects(snapshot_user_prefix(alice.user_id)) == []
    assert len(objects(snapshot_user_prefix(bob.user_id))) == 1


def test_a_mind_deletion_interrupted_after_its_items_finishes_on_retry(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind with a snapshot, and S3 failing once when its deletion reaches the snapshots
    alice = person()
    mind = minds.create(alice, MindIn(name="work")).mind_id
    put(alice.in_mind(mind), "k", "coffee")
    assert write_snapshot(monkeypatch, Space(alice.user_id, mind)) == "written"
    real = snapshots._delete_prefix
    failures = iter([True])

    def flaky(prefix: str) -> int:
        if next(failures, False):
            raise UpstreamUnavailable("The snapshot store is unavailable; try again shortly.", retry_after=2)
        return real(prefix)

    monkeypatch.setattr(snapshots, "_delete_prefix", flaky)
    # When DELETE /minds/{id} fails (503) after the items, and the client tries again (404 now)
    with pytest.raises(UpstreamUnavailable):
        minds.delete(alice, mind)
    with pytest.raises(NotFound):
        minds.delete(alice, mind)
    # Then the snapshot went with the retry
    assert objects(snapshot_mind_prefix(alice.user_id, mind)) == []


def test_a_snapshot_written_while_its_mind_is_deleted_goes_too(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a writer that has read a mind, and DELETE /me landing before its write (after the
    # deletion listed the snapshots: there were none yet)
    who = person()
    put(who, "k", "coffee")
    space = Space(who.user_id)
    real_put = snapshots.put

    def deleted_first(*args: Any, **kwargs: Any) -> bool:
        privacy.delete(who.user_id)
        return real_put(*args, **kwargs)

    monkeypatch.setattr(snapshots, "put", deleted_first)
    # When the writer writes
    outcome = write_snapshot(monkeypatch, space)
    # Then it finds the mind gone and deletes what it wrote: no snapshot outlives its mind
    assert outcome == "gone"
    assert objects(snapshot_user_prefix(who.user_id)) == []


def test_a_mind_made_again_never_reads_the_snapshot_of_the_one_before(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot of alice's mind, whose bytes are kept aside
    who = person()
    space = Space(who.user_id)
    put(who, "old", "my old address in Berlin")
    assert write_snapshot(monkeypatch, space) == "written"
    s3 = boto3.client("s3")
    (old_key,) = objects(snapshot_user_prefix(who.user_id))
    old = s3.get_object(Bucket=SNAPSHOT_BUCKET, Key=old_key)["Body"].read()
    # When she deletes everything and starts again (a new epoch of the mind's version), and the old
    # snapshot is back in the bucket, at its own key and even at the new epoch's
    privacy.delete(who.user_id)
    put(who, "new", "tea in Bangkok")
    at = changelog.read(space)
    s3.put_object(Bucket=SNAPSHOT_BUCKET, Key=old_key, Body=old)
    s3.put_object(Bucket=SNAPSHOT_BUCKET, Key=snapshot_key(space, at.epoch), Body=old)
    fresh_container(monkeypatch)
    got = cache.load(space, MODEL_KEY)
    # Then the old memories are not read: the old key is another epoch's, and the object at the new
    # key says it is of the old epoch (refused, the mind read whole, a new snapshot asked for)
    assert got.columns.contents == ["tea in Bangkok"]
    assert seen.loaded == 0 and [d[2:4] for d in seen.due] == [(at.epoch, at.seq)]


# --- the readers' decisions --------------------------------------------------------------------------------


def put_many(who: Principal, count: int, prefix: str) -> None:
    """`count` new memories in one write (one change-log entry, as an ingest writes them)."""
    space = minds.resolve(who).space
    now = utcnow()
    changes = [
        nuggets.Write(
            memory=Memory(
                id=nuggets.id_for(space, Category.fact, f"{prefix}{i}"),
                category=Category.fact,
                key=f"{prefix}{i}",
                content=f"fact {prefix} {i}",
                source=Source.agent,
                verified=False,
                confidence=0.7,
                user_id=who.user_id,
                created_at=now,
                updated_at=now,
            ),
            read=None,
            kind=Change.created,
        )
        for i in range(count)
    ]
    nuggets.save(space, changes)


def test_a_reader_asks_for_a_snapshot_when_there_is_none_or_it_is_far_behind(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    who = person()
    space = Space(who.user_id)
    put(who, "k0", "coffee")
    # Given no snapshot: a cold load reads the mind whole and asks for one, for its model
    fresh_container(monkeypatch)
    cache.load(space, MODEL_KEY)
    at = changelog.read(space)
    assert seen.due == [(who.user_id, "default", at.epoch, at.seq, MODEL_KEY)] and seen.loaded == 0
    # Given a snapshot (seq 1), then one write of SNAPSHOT_TAIL_MAX memories (seq 2): loaded from it,
    # nothing asked
    assert write_snapshot(monkeypatch, space) == "written"
    put_many(who, cache.SNAPSHOT_TAIL_MAX, "a")
    seen.due.clear()
    fresh_container(monkeypatch)
    cache.load(space, MODEL_KEY)
    assert seen.loaded == 1 and seen.due == []
    # Given one more write of one memory (seq 3): more than SNAPSHOT_TAIL_MAX behind, still loaded
    # from it, and a new one asked for
    put(who, "k99", "one more")
    fresh_container(monkeypatch)
    got = cache.load(space, MODEL_KEY)
    assert seen.loaded == 2 and len(seen.due) == 1 and len(got) == cache.SNAPSHOT_TAIL_MAX + 2
    # Given a new snapshot (seq 3) and one write of one memory (seq 4 = SNAPSHOT_EVERY): the snapshot
    # is from before the mind's latest multiple of SNAPSHOT_EVERY writes: asked for again
    assert cache.SNAPSHOT_EVERY == 4 and write_snapshot(monkeypatch, space) == "written"
    seen.due.clear()
    put(who, "k100", "and another")
    fresh_container(monkeypatch)
    loaded = seen.loaded
    cache.load(space, MODEL_KEY)
    assert seen.loaded == loaded + 1 and len(seen.due) == 1
    # And a container that keeps the mind asks when its copy passes such a multiple, not before
    seen.due.clear()
    put(who, "k101", "five")  # seq 5
    cache.load(space, MODEL_KEY)
    assert seen.due == []
    put(who, "k102", "six")
    put(who, "k103", "seven")
    put(who, "k104", "eight")  # seq 8
    cache.load(space, MODEL_KEY)
    assert len(seen.due) == 1 and seen.due[0][3] == 8


def test_a_copy_far_behind_loads_the_snapshot_when_that_is_nearer(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a container that keeps a copy of the mind, then writes of more memories than
    # SNAPSHOT_CATCH_UP_MAX, and a snapshot of the mind written after them
    who = person()
    space = Space(who.user_id)
    put(who, "k0", "coffee")
    keeper = fresh_container(monkeypatch)
    cache.load(space, MODEL_KEY)
    put_many(who, cache.SNAPSHOT_CATCH_UP_MAX + 3, "b")
    assert write_snapshot(monkeypatch, space) == "written"
    put(who, "k1", "tea")
    # When the container loads the mind again
    monkeypatch.setattr(cache, "CACHE", keeper)
    calls = spy(monkeypatch)
    loaded = seen.loaded
    got = cache.load(space, MODEL_KEY)
    # Then it read the snapshot and the one memory written since, not the 7 its copy lacked
    assert seen.loaded == loaded + 1
    (batch,) = [c for c in calls if c[0] == "batch_get_item"]
    assert len(next(iter(batch[1]["RequestItems"].values()))["Keys"]) == 1
    same_corpus(got, build(nuggets.read_columns(space), "", MODEL_KEY))
    # And a copy behind by SNAPSHOT_CATCH_UP_MAX memories or fewer catches up as before
    put_many(who, cache.SNAPSHOT_CATCH_UP_MAX, "c")
    got = cache.load(space, MODEL_KEY)
    assert seen.loaded == loaded + 1
    same_corpus(got, build(nuggets.read_columns(space), "", MODEL_KEY))


def test_the_writer_finds_a_snapshot_at_the_readers_position_current_without_reading(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot at the mind's position
    who = person()
    space = Space(who.user_id)
    put(who, "k0", "coffee")
    assert write_snapshot(monkeypatch, space) == "written"
    at = changelog.read(space)
    # When SnapshotDue arrives from a reader at that position (one that raced the first writer)
    fresh_container(monkeypatch)
    calls = spy(monkeypatch)
    outcome = cache.write_snapshot(space, MODEL_KEY, at.epoch, at.seq)
    # Then it is current, and nothing of the table was read (the HEAD told)
    assert outcome == "current" and calls == []


def test_a_snapshot_further_behind_than_a_catch_up_goes_is_not_used(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a snapshot, then more changed memories than a catch-up reads one by one
    who = person()
    space = Space(who.user_id)
    put(who, "k", "coffee")
    assert write_snapshot(monkeypatch, space) == "written"
    for i in range(cache.catch_up_limit(1) + 1):
        put(who, f"k{i}", f"fact {i}")
    # When a container without the mind loads it
    fresh_container(monkeypatch)
    got = cache.load(space, MODEL_KEY)
    # Then it reads the mind whole, and asks for a new snapshot
    assert seen.loaded == 0 and len(seen.due) == 1
    same_corpus(got, build(nuggets.read_columns(space), "", MODEL_KEY))


def test_another_models_snapshot_a_damaged_one_or_no_store_means_a_full_read(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    who = person()
    space = Space(who.user_id)
    put(who, "k", "coffee")
    # Given a snapshot of another model's vectors: refused, read whole, a snapshot of this model asked
    assert write_snapshot(monkeypatch, space, "another/16") == "written"
    fresh_container(monkeypatch)
    got = cache.load(space, MODEL_KEY)
    assert seen.loaded == 0 and seen.due[-1][4] == MODEL_KEY and len(got.vectors) == 1
    # ... and the writer then writes this model's (a reader of none, ingest, keeps it)
    assert write_snapshot(monkeypatch, space, MODEL_KEY) == "written"
    assert write_snapshot(monkeypatch, space, None) == "current"
    assert snapshots.head(space, changelog.read(space).epoch).model_key == MODEL_KEY  # type: ignore[union-attr]
    # Given a damaged object: refused, read whole
    at = changelog.read(space)
    boto3.client("s3").put_object(
        Bucket=SNAPSHOT_BUCKET, Key=snapshot_key(space, at.epoch), Body=b"SYNSNAP\x00junk"
    )
    fresh_container(monkeypatch)
    same_corpus(cache.load(space, MODEL_KEY), build(nuggets.read_columns(space), "", MODEL_KEY))
    # Given the snapshot store down: read whole, no error
    monkeypatch.setattr(snapshots, "get", lambda *_: (_ for _ in ()).throw(UpstreamUnavailable("down")))
    fresh_container(monkeypatch)
    same_corpus(cache.load(space, MODEL_KEY), build(nuggets.read_columns(space), "", MODEL_KEY))


def test_an_older_snapshot_never_replaces_a_newer_one(seen: Seen, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a writer that read the mind at seq s, and another writer that wrote it at s + 1 before
    # the first one's write
    who = person()
    space = Space(who.user_id)
    put(who, "k", "coffee")
    real_put = snapshots.put
    raced = []

    def overtaken(*args: Any, **kwargs: Any) -> bool:
        if not raced:
            raced.append(True)
            put(who, "k2", "tea")  # the mind moves on, and another container snapshots it
            container = cache.CACHE
            assert write_snapshot(monkeypatch, space) == "written"
            monkeypatch.setattr(cache, "CACHE", container)
        return real_put(*args, **kwargs)

    monkeypatch.setattr(snapshots, "put", overtaken)
    # When the first writer writes
    outcome = write_snapshot(monkeypatch, space)
    # Then its write lost the condition, and the newer snapshot stays
    assert outcome == "current"
    stored = snapshots.head(space, changelog.read(space).epoch)
    assert stored is not None and stored.seq == changelog.read(space).seq
    # And a writer with nothing new to write writes nothing
    assert write_snapshot(monkeypatch, space) == "current"


def test_the_snapshot_is_encrypted_with_the_buckets_key(seen: Seen, monkeypatch: pytest.MonkeyPatch) -> None:
    who = person()
    put(who, "k", "coffee")
    assert write_snapshot(monkeypatch, Space(who.user_id)) == "written"
    (key,) = objects(snapshot_user_prefix(who.user_id))
    head = boto3.client("s3").head_object(Bucket=SNAPSHOT_BUCKET, Key=key)
    assert head["ServerSideEncryption"] == "aws:kms" and head.get("SSEKMSKeyId")


def test_a_reader_never_writes_a_snapshot_and_asks_for_one_while_it_loads(
    seen: Seen, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind with no snapshot, and the S3 calls and the moments of the load recorded
    who = person()
    space = Space(who.user_id)
    for i in range(5):
        put(who, f"k{i}", text([i]))
    s3_calls: list[str] = []
    client = snapshots.client()
    for name in ("get_object", "head_object", "put_object", "delete_object", "delete_objects"):
        real = getattr(client, name)

        def record(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            s3_calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(client, name, record)
    started, sent = threading.Event(), threading.Event()
    overlapped: list[bool] = []

    def publish(*_: Any) -> None:
        # (a send made in the request's own thread, before the read, would wait here in vain)
        overlapped.append(started.wait(timeout=5))
        sent.set()

    monkeypatch.setattr(cache.events, "publish_snapshot_due", publish)
    read_whole = nuggets.read_columns
    during: list[bool] = []

    def reading(*args: Any) -> Any:
        started.set()
        got = read_whole(*args)
        # (the load is still going on here: a send left for after the load would wait here in vain)
        during.append(sent.wait(timeout=5))
        return got

    monkeypatch.setattr(cache.nuggets, "read_columns", reading)
    # When a container that holds nothing loads the mind
    fresh_container(monkeypatch)
    cache.load(space, MODEL_KEY)
    # Then it only looked for the snapshot (no PUT, no DELETE: writing is the writer's, never a request's)
    assert s3_calls == ["get_object"]
    assert objects(snapshot_mind_prefix(who.user_id, "default")) == []
    # And its SnapshotDue went out on the side, while the load went on: neither before it (in the
    # request's way) nor after it
    assert overlapped == [True] and during == [True]
