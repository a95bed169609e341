"""The Python SDK (`synapse_memory`, clients/python) against the real local server (`python -m local`).

Every test is a new user (a JWT for a fresh `sub`), so the tests share the session's server and not
its data.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from synapse_memory import (
    AsyncSynapse,
    Conflict,
    Forbidden,
    Message,
    NotFound,
    Proposal,
    Synapse,
    Unauthorized,
    ValidationError,
)
from tests.e2e.conftest import LocalServer

TIMEOUT = 60.0
ROOT = Path(__file__).resolve().parents[2]


def uid(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture
def user(local_server: LocalServer) -> Iterator[tuple[str, Synapse]]:
    """A new user, and a client with their JWT."""
    user_id = uid("sdk")
    with Synapse(local_server.url, token=local_server.make_jwt(user_id), timeout=TIMEOUT) as client:
        yield user_id, client


def agent_of(
    local_server: LocalServer, mem: Synapse, scopes: list[str], mind_id: str | None = None
) -> Synapse:
    key = mem.create_key(uid("bot"), scopes, mind_id=mind_id)  # type: ignore[arg-type]
    return Synapse(local_server.url, token=key.key, timeout=TIMEOUT)


def test_structured_memory_store_update_get_list_verify_history_restore_delete(
    local_server: LocalServer, user: tuple[str, Synapse]
) -> None:
    user_id, mem = user
    first = mem.store(
        "project", "synapse_status", "v1.5.0 deployed on vps1", tags=["Synapse", "deploy"], priority="high"
    )
    assert (first.source, first.verified, first.confidence, first.version) == ("user", True, 1.0, 1)
    assert first.tags == ["synapse", "deploy"] and first.user_id == user_id and first.mind_id == "default"

    # the same (category, key) again is an update of the same memory
    again = mem.store("project", "synapse_status", "v1.6.0 deployed, CI green")
    assert again.id == first.id and again.version == 2 and again.created_at == first.created_at
    assert again.priority == "high"  # kept: not sent
    assert mem.get(first.id).content == "v1.6.0 deployed, CI green"

    # an agent's update of the (verified) memory is a proposal that awaits the user (Review); the user
    # accepts it (her version: verified); only a user verifies
    with agent_of(local_server, mem, ["memory:read", "memory:write"]) as bot:
        proposal = bot.update(first.id, content="v1.7.0 rolled out", tags=["synapse"])
        assert isinstance(proposal, Proposal) and (proposal.memory_id, proposal.kind) == (first.id, "update")
        assert mem.get(first.id).content == "v1.6.0 deployed, CI green"
        with pytest.raises(Forbidden) as refused:
            bot.verify(first.id)
        assert (refused.value.status, refused.value.code) == (403, "forbidden")
    assert [p.proposal_id for p in mem.proposals().proposals] == [proposal.proposal_id]
    accepted = mem.accept(proposal.proposal_id)
    assert accepted is not None
    assert (accepted.content, accepted.source, accepted.verified, accepted.version) == (
        "v1.7.0 rolled out",
        "user",
        True,
        3,
    )
    verified = mem.verify(first.id)
    assert verified.verified is True and verified.version == 4

    # history: newest first, down to version 1; restore makes a new version with the old text
    versions = mem.history(first.id)
    assert [v.version for v in versions] == [4, 3, 2, 1]
    assert versions[-1].content == "v1.5.0 deployed on vps1" and versions[-1].change == "created"
    assert versions[0].change == "verified"
    restored = mem.restore(first.id, 1)
    assert (restored.content, restored.version, restored.source) == ("v1.5.0 deployed on vps1", 5, "user")
    with pytest.raises(NotFound):
        mem.restore(first.id, 99)

    # expiry: set, listed as expiring, cleared
    tomorrow = datetime.now(UTC) + timedelta(days=1)
    soon = mem.update(first.id, expires_at=tomorrow)
    assert soon.expires_at is not None and abs((soon.expires_at - tomorrow).total_seconds()) < 2
    assert [m.id for m in mem.expiring("2d")] == [first.id]
    assert mem.expiring(timedelta(hours=1)) == []
    assert mem.update(first.id, expires_at=None).expires_at is None

    # list pages with a cursor; iter_memories walks them all
    for i in range(5):
        mem.store("note", f"note_{i}", f"Note number {i}", tags=["notes"])
    page = mem.list(category="note", limit=2)
    assert len(page.memories) == 2 and page.next_cursor
    seen = [m.id for m in page.memories]
    while page.next_cursor:
        page = mem.list(category="note", limit=2, cursor=page.next_cursor)
        seen += [m.id for m in page.memories]
    assert len(seen) == len(set(seen)) == 5
    assert sorted(m.key for m in mem.iter_memories(category="note", page_size=2)) == [
        f"note_{i}" for i in range(5)
    ]
    assert {m.key for m in mem.list(verified=True, limit=100).memories} >= {"synapse_status", "note_0"}

    # delete: gone, and a second delete is a 404
    mem.delete(first.id)
    with pytest.raises(NotFound) as missing:
        mem.get(first.id)
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    with pytest.raises(NotFound):
        mem.delete(first.id)


def test_search_by_tag_and_both_recalls(user: tuple[str, Synapse]) -> None:
    user_id, mem = user
    mem.store("identity", "user_name", "Michael Schäfer", tags=["person"], priority="critical")
    mem.store("preference", "favourite_food", "ชอบกินข้าวมันไก่ร้านประตูน้ำ", tags=["food"])
    mem.store("project", "swarm", "Docker swarm cluster on three nodes", tags=["docker", "infra"])

    found = mem.search("ข้าวมันไก่")
    assert [m.key for m in found] == ["favourite_food"] and found[0].score > 0
    assert [m.key for m in mem.search("swarm", tag="docker")] == ["swarm"]
    assert mem.search("swarm", tag="food") == []
    assert [m.key for m in mem.by_tag("DOCKER")] == ["swarm"]

    recalled = mem.recall("what food do they like?", limit=3)
    assert recalled.memories and any("ข้าวมันไก่" in m.text for m in recalled.memories)
    assert "Michael Schäfer" in (recalled.identity or "")
    top = recalled.memories[0]
    assert top.type in {"identity", "preference", "project"} and top.key
    only = mem.recall("cluster", limit=5, category="project")
    assert [m.type for m in only.memories] == ["project"]

    text = mem.recall_text()
    assert text.startswith(f"Mind: {user_id}\n")
    assert text.index("user_name") < text.index("favourite_food")  # critical first
    assert "swarm" in mem.recall_text(tag="docker") and "user_name" not in mem.recall_text(tag="docker")


def test_ingest_thai_and_english_then_recall_context_summaries_identity(user: tuple[str, Synapse]) -> None:
    user_id, mem = user
    session = uid("s")
    out = mem.ingest(
        session,
        [
            {"role": "user", "content": "ผมชื่อสมชาย อยู่เชียงใหม่"},
            Message(role="assistant", content="ยินดีที่ได้รู้จักครับ"),
            {"role": "user", "content": "ขอบคุณ"},
            {"role": "user", "content": "I moved to Berlin and I work as a nurse"},
        ],
    )
    assert out.nuggets_created >= 2 and out.skipped_transient >= 1 and out.identity_updated
    assert len(out.nuggets) == out.nuggets_created + out.nuggets_updated
    assert {(n.source, n.verified) for n in out.nuggets} == {("agent", False)}
    said = " ".join(n.content for n in out.nuggets)
    assert "สมชาย" in said and "nurse" in said

    # a retry under the same Idempotency-Key is the same ingest (the first answer, nothing new)
    turn = [{"role": "user", "content": "I prefer dark theme"}]
    once = mem.ingest(session, turn, idempotency_key="turn-7")
    twice = mem.ingest(session, turn, idempotency_key="turn-7")
    assert twice.model_dump() == once.model_dump()

    found = mem.recall("what is his job?", limit=3)
    assert any("nurse" in m.text for m in found.memories), found
    assert "สมชาย" in (found.identity or "")
    ident = mem.identity()
    assert ident.user_id == user_id and "สมชาย" in (ident.identity or "")
    assert mem.identity(user_id).identity == ident.identity

    # one chat turn's context: identity, memories, recent messages, and the prompt block
    ctx = mem.context("Where do I live now?", session_id=session, limit=3, recent=2)
    first, _, rest = ctx.prompt.partition("\n\n")  # the current time, then the parts
    assert first.startswith("Current time: ") and first.endswith(" (UTC)")
    assert rest.startswith("Identity:") and "Recent messages:" in ctx.prompt
    assert ctx.identity and "สมชาย" in ctx.identity
    assert len(ctx.recent) == 2 and ctx.recent[-1].content == "I prefer dark theme"
    assert 1 <= len(ctx.memories) <= 3 and ctx.summary is None
    assert mem.context("anything", recent=0).recent == []

    # summaries: none yet, then one on demand
    assert mem.summaries(session) == []
    summary = mem.summarize(session)
    assert summary.chunk_id == f"sum:{session}:chunk_1" and summary.summary.strip()
    given = mem.summarize(session, [{"role": "user", "content": "We agreed to meet on Friday in Berlin"}])
    assert given.chunk_id == f"sum:{session}:chunk_2"
    chunks = mem.summaries(session)
    assert [c.chunk_id for c in chunks] == [summary.chunk_id, given.chunk_id] and chunks[0].msg_count > 0
    assert mem.context("Friday plans", session_id=session).summary == given.summary


def test_time_a_dated_thai_conversation_recalled_by_its_day_and_read_as_of_a_moment(
    user: tuple[str, Synapse],
) -> None:
    _, mem = user
    bangkok = timezone(timedelta(hours=7))
    before = datetime.now(UTC) - timedelta(minutes=5)
    # Given a Thai conversation said on the morning of 4 December 2026 in Bangkok
    said = datetime(2026, 12, 4, 10, 0, tzinfo=bangkok)
    out = mem.ingest(
        uid("s"),
        [
            Message(role="user", content="เมื่อวานผมไปหาหมอฟันที่โรงพยาบาลศิริราช", created_at=said),
            {"role": "user", "content": "พรุ่งนี้ต้องไปประชุมที่เชียงราย", "created_at": said + timedelta(minutes=1)},
        ],
        timezone="Asia/Bangkok",
    )
    # Then each memory is dated by the day its words meant (00:00 in Bangkok), as datetimes
    dated = {n.content: n.valid_at for n in out.nuggets}
    assert dated["ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)"] == datetime(2026, 12, 2, 17, 0, tzinfo=UTC)
    assert dated["ต้องไปประชุมที่เชียงราย (5 ธ.ค. 2569)"] == datetime(2026, 12, 4, 17, 0, tzinfo=UTC)

    # When asked that evening what happened yesterday, yesterday's memory is lifted, and dated
    # (in a mind of two memories the lift need not put it first: see README, "Time")
    def dentist_score(asked: datetime) -> float:
        found = mem.recall("เมื่อวานไปไหนมา", limit=2, reference_time=asked, timezone="Asia/Bangkok")
        (hit,) = [m for m in found.memories if "หมอฟัน" in m.text]
        assert hit.valid_at == datetime(2026, 12, 2, 17, 0, tzinfo=UTC)
        return hit.score

    assert dentist_score(said + timedelta(hours=9)) > dentist_score(said + timedelta(days=7)) + 0.3
    ctx = mem.context("เมื่อวานไปไหนมา", reference_time=said, timezone="Asia/Bangkok")
    assert ctx.prompt.splitlines()[0] == "Current time: 2026-12-04 10:00 (Asia/Bangkok)"
    assert "- (2026-12-03) ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)" in ctx.prompt.splitlines()

    # and as of a moment before the ingest, the mind held none of it
    dentist = next(n for n in out.nuggets if "หมอฟัน" in n.content)
    assert mem.list(as_of=before).memories == []
    assert list(mem.iter_memories(as_of=before)) == []
    with pytest.raises(NotFound):
        mem.get(dentist.id, as_of=before)
    assert mem.recall("หมอฟัน", as_of=before).memories == []
    assert mem.get(dentist.id, as_of=datetime.now(UTC)).content == dentist.content


def test_minds_per_client_per_call_and_a_mind_key_refusing_another_mind(
    local_server: LocalServer, user: tuple[str, Synapse]
) -> None:
    user_id, mem = user
    mind = mem.create_mind("Support bot", description="tickets")
    assert mind.mind_id.startswith("m_") and mind.description == "tickets"
    with pytest.raises(Conflict) as taken:
        mem.create_mind("support BOT")
    assert (taken.value.status, taken.value.code) == (409, "conflict")

    # per call, and per client (with_mind): the memory lives in that mind only
    there = mem.store("fact", "queue", "Tickets go to L2 after 24 h", tags=["tickets"], mind_id=mind.mind_id)
    assert there.mind_id == mind.mind_id
    assert mem.by_tag("tickets") == []
    bot_view = mem.with_mind(mind.mind_id)
    assert [m.key for m in bot_view.by_tag("tickets")] == ["queue"]
    assert bot_view.get(there.id).content == "Tickets go to L2 after 24 h"
    with pytest.raises(NotFound):
        mem.get(there.id)
    assert bot_view.recall_text().startswith("Mind: Support bot\n")
    assert mem.recall_text().startswith(f"Mind: {user_id}\n")
    with pytest.raises(NotFound):
        mem.list(mind_id="m_000000000000")

    minds = mem.minds()
    assert [m.mind_id for m in minds] == ["default", mind.mind_id]
    assert minds[1].memories == 1 and minds[1].name == "Support bot"

    # a Mind Key acts in its mind; naming another mind is 403
    with agent_of(local_server, mem, ["memory:read", "memory:write"], mind_id=mind.mind_id) as bot:
        assert [m.key for m in bot.list().memories] == ["queue"]
        with pytest.raises(Forbidden) as refused:
            bot.list(mind_id="default")
        assert refused.value.status == 403
        with pytest.raises(Forbidden):
            bot.with_mind("default").store("fact", "x", "y")
        # deleting the mind deletes its keys: the bot is refused at once
        mem.delete_mind(mind.mind_id)
        with pytest.raises(Unauthorized):
            bot.list()
    assert [m.mind_id for m in mem.minds()] == ["default"]
    with pytest.raises(Conflict):
        mem.delete_mind("default")


def test_a_minds_timezone_dates_memories_and_the_timeline_pages_them_over_http(
    local_server: LocalServer, user: tuple[str, Synapse]
) -> None:
    # Given a user whose default mind lives in Bangkok, and a second mind in UTC
    from datetime import date

    user_id, mem = user
    patched = mem.update_mind("default", timezone="Asia/Bangkok", description="บ้าน")
    assert (patched.name, patched.timezone, patched.description) == (user_id, "Asia/Bangkok", "บ้าน")
    with pytest.raises(ValidationError) as bad:
        mem.update_mind("default", timezone="Asia/Atlantis")
    assert bad.value.details[0]["loc"] == ["body", "timezone"]
    assert mem.minds()[0].timezone == "Asia/Bangkok"
    other = mem.create_mind("Work", timezone="UTC")
    # When memories about days are stored (a date alone: 00:00 in the mind's timezone)
    dentist = mem.store("note", "dentist", "ไปหาหมอฟัน (3 ธ.ค. 2568)", valid_at=date(2025, 12, 3))
    mem.store("note", "moved", "ย้ายไปกรุงเทพฯ", valid_at="2025-11-10T08:00:00Z")
    mem.store("note", "meeting", "ประชุมที่เชียงราย", valid_at="2025-12-05")
    mem.store("note", "elsewhere", "Work trip", valid_at=date(2025, 12, 4), mind_id=other.mind_id)
    # Then the date is Bangkok's midnight, in UTC
    assert dentist.valid_at == datetime(2025, 12, 2, 17, 0, tzinfo=UTC)
    # And the timeline pages the mind's memories in time order within [from, to)
    first = mem.timeline(start=date(2025, 11, 1), end=date(2026, 1, 1), limit=2)
    assert [m.key for m in first.memories] == ["moved", "dentist"] and first.next_cursor
    rest = mem.timeline(start=date(2025, 11, 1), end=date(2026, 1, 1), limit=2, cursor=first.next_cursor)
    assert [m.key for m in rest.memories] == ["meeting"] and rest.next_cursor is None
    assert [m.key for m in mem.timeline(mind_id=other.mind_id).memories] == ["elsewhere"]
    # And a PUT moves a memory in the timeline; its history keeps where it was
    mem.update(dentist.id, valid_at="2026-01-15")
    december = mem.timeline(start="2025-12-01", end="2026-01-01")
    assert [m.key for m in december.memories] == ["meeting"]
    assert [v.valid_at for v in mem.history(dentist.id)][1] == dentist.valid_at
    with pytest.raises(ValidationError):
        mem.timeline(start="2026-01-01", end="2025-01-01")


def test_keys_providers_export_and_delete_me(local_server: LocalServer, user: tuple[str, Synapse]) -> None:
    _, mem = user
    mem.store("fact", "home_city", "Lives in Chiang Mai")
    made = mem.create_key("read-only bot", ["memory:read"])
    assert made.key.startswith("gts_live_") and made.scopes == ["memory:read"] and made.mind_id == "default"
    listed = mem.keys()
    assert [k.key_id for k in listed] == [made.key_id] and made.key not in repr(listed)
    with Synapse(local_server.url, token=made.key) as reader:
        assert [m.key for m in reader.list().memories] == ["home_city"]
        with pytest.raises(Forbidden):
            reader.store("fact", "x", "y")  # no memory:write
        with pytest.raises(Forbidden):
            reader.keys()  # user only
        with pytest.raises(ValueError, match="user_id"):
            reader.identity()
        mem.revoke_key(made.key_id)
        with pytest.raises(Unauthorized):
            reader.list()
    assert mem.keys() == []

    stored = mem.set_provider("gemini", "AIzaSyExampleExampleExample9xYz")
    assert stored.provider == "gemini" and stored.hint.endswith("9xYz") and "Example" not in stored.hint
    assert [p.provider for p in mem.providers()] == ["gemini"]
    mem.delete_provider("gemini")
    assert mem.providers() == []

    export = mem.export()
    assert [m.key for m in export.memories] == ["home_city"]
    assert export.identity is None or isinstance(export.identity, str)
    assert mem.delete_me() >= 1
    assert mem.list().memories == []


def test_an_export_of_any_size_is_written_waited_on_and_downloaded(
    local_server: LocalServer, user: tuple[str, Synapse]
) -> None:
    user_id, mem = user
    # Given a user with a memory in Thai (a U+2028 inside it), a conversation and a second mind
    mem.store("fact", "home_city", "อยู่เชียงใหม่\u2028ใกล้ดอยสุเทพ", tags=["บ้าน"])
    mem.ingest(uid("s"), [{"role": "user", "content": "ผมชื่อสมชาย ทำงานเป็นพยาบาล"}])
    mind = mem.create_mind("งาน")
    mem.store("project", "ward", "Night shifts on ward 7", mind_id=mind.mind_id)
    # When an export is asked for, waited on and downloaded
    started = mem.create_export()
    assert started.status == "pending" and len(started.export_id) == 32
    seen: list[str] = []
    ready = mem.wait_export(started.export_id, timeout=TIMEOUT, progress=lambda j: seen.append(j.status))
    out = io.BytesIO()
    written = mem.download_export(ready, out)
    # Then the file is as big as the server says, a header line and then `records` records
    assert seen[-1] == "ready" and ready.url and ready.expires_at is not None
    data = out.getvalue()
    assert written == len(data) == ready.bytes
    assert data.endswith(b"\n") and data.count(b"\n") == (ready.records or 0) + 1
    records = list(mem.iter_export(ready))
    header = records[0]
    assert (header["format"], header["version"], header["user_id"]) == ("synapse-export", 1, user_id)
    memories = {r["key"]: r for r in records if r.get("type") == "memory"}
    assert memories["home_city"]["content"] == "อยู่เชียงใหม่\u2028ใกล้ดอยสุเทพ"
    assert memories["ward"]["mind_id"] == mind.mind_id and memories["home_city"]["history"] == []
    assert {"mind", "memory", "session", "message"} <= {r.get("type") for r in records}
    assert [json.loads(line) for line in data.split(b"\n") if line] == records
    # And an unknown export is NotFound; an agent may not ask for one
    with pytest.raises(NotFound):
        mem.get_export(uuid.uuid4().hex)
    with agent_of(local_server, mem, ["memory:read"]) as bot, pytest.raises(Forbidden):
        bot.create_export()


def test_the_async_client_exports_too(local_server: LocalServer) -> None:
    user_id = uid("sdkx")

    async def main() -> tuple[bytes, list[dict[str, object]]]:
        async with AsyncSynapse(
            local_server.url, token=local_server.make_jwt(user_id), timeout=TIMEOUT
        ) as mem:
            await mem.store("preference", "food", "ชอบข้าวซอย")
            started = await mem.create_export()
            ready = await mem.wait_export(started.export_id, timeout=TIMEOUT)
            out = io.BytesIO()
            await mem.download_export(ready, out)
            return out.getvalue(), [r async for r in mem.iter_export(ready.url or "")]

    data, records = asyncio.run(main())
    assert records[0]["user_id"] == user_id
    assert [(r["key"], r["content"]) for r in records if r.get("type") == "memory"] == [("food", "ชอบข้าวซอย")]
    assert "ชอบข้าวซอย".encode() in data


def test_errors_map_to_their_exceptions(local_server: LocalServer, user: tuple[str, Synapse]) -> None:
    _, mem = user
    with pytest.raises(ValidationError) as bad:
        mem.store("fact", "Not A Key!", "content")
    err = bad.value
    assert (err.status, err.code) == (422, "validation_error")
    assert any(d["loc"][-1] == "key" for d in err.details), err.details
    with pytest.raises(ValidationError):
        mem.update("whatever", content="x", tags=[" "])
    with pytest.raises(NotFound):
        mem.get(str(uuid.uuid4()))

    token = "not-a-token-at-all"
    with Synapse(local_server.url, token=token) as stranger, pytest.raises(Unauthorized) as refused:
        stranger.list()
    assert (refused.value.status, refused.value.code) == (401, "unauthorized")
    assert token not in str(refused.value) and token not in repr(refused.value)
    with Synapse(local_server.url) as anonymous:
        assert anonymous.health().status == "ok"
        with pytest.raises(Unauthorized):
            anonymous.recall("anything")


def test_the_async_client_main_path(local_server: LocalServer) -> None:
    user_id = uid("sdka")

    async def main() -> None:
        async with AsyncSynapse(
            local_server.url, token=local_server.make_jwt(user_id), timeout=TIMEOUT
        ) as mem:
            stored = await mem.store("identity", "user_name", "Somchai Jaidee", priority="critical")
            assert (await mem.get(stored.id)).content == "Somchai Jaidee"
            session = uid("s")
            out = await mem.ingest(
                session, [{"role": "user", "content": "I moved to Berlin and I work as a nurse"}]
            )
            assert out.nuggets_created >= 1
            recalled, ctx = await asyncio.gather(
                mem.recall("what is the job?", limit=3), mem.context("where do I live?", session_id=session)
            )
            assert any("nurse" in m.text for m in recalled.memories)
            assert "Somchai Jaidee" in ctx.prompt and ctx.recent
            keys = [m.key async for m in mem.iter_memories(category="identity", page_size=1)]
            assert "user_name" in keys and len(keys) == len(set(keys)) >= 2
            mind = await mem.create_mind("async mind")
            await mem.with_mind(mind.mind_id).store("fact", "k1", "in the other mind")
            assert [m.key for m in (await mem.list(mind_id=mind.mind_id)).memories] == ["k1"]
            with pytest.raises(NotFound):
                await mem.get(str(uuid.uuid4()))
            assert (await mem.recall_text()).startswith(f"Mind: {user_id}\n")
            assert await mem.delete_me() >= 2

    asyncio.run(main())


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_examples_run_against_the_server(
    local_server: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The chat turn of clients/python/README.md and the five lines of README.md, as written, with the
    server's URL and a new user's JWT in place of the placeholders (and a stand-in for the LLM)."""
    token = local_server.make_jwt(uid("sdkdoc"))
    chat_turn = python_blocks(ROOT / "clients" / "python" / "README.md")[0]
    code = chat_turn.replace('"http://127.0.0.1:3000"', repr(local_server.url)).replace(
        '"gts_live_..."', repr(token)
    )
    prompts: list[str] = []

    def call_your_llm(system: str, user: str) -> str:
        prompts.append(system)
        return "ข้าวซอยครับ"

    exec(compile(code, "clients/python/README.md", "exec"), {"call_your_llm": call_your_llm})
    assert capsys.readouterr().out.strip() == "ข้าวซอยครับ" and prompts[0].startswith(
        "What you know about the user:"
    )

    # (the SDK's five lines; the README's other Python, a webhook receiver, needs a web framework)
    [five_lines] = [b for b in python_blocks(ROOT / "README.md") if "from synapse_memory import Synapse" in b]
    code = five_lines.replace('"http://127.0.0.1:3000"', repr(local_server.url))
    exec(compile(code, "README.md", "exec"), {"KEY": token})
    assert "เชียงใหม่" in capsys.readouterr().out
