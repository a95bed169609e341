"""The structured memory routes against moto, called as API Gateway would call each function."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from harness.lambdas import ALICE, LambdaContext, agent, http_event, load_function, user
from tests.conftest import TABLE, Call
from tests.integration.test_review import review_off

MEMORY = {
    "category": "project",
    "key": "synapse_status",
    "content": "v1.5.0 deployed on vps1",
    "tags": ["Synapse", " deployment "],
}


def create(call: Call, body: dict[str, Any], who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call("memory_create", "POST", "/memory", body=body, who=who)


def by_id(call: Call, mem_id: str, who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call(
        "memory_get", "GET", f"/memory/{mem_id}", route="/memory/{id}", path_params={"id": mem_id}, who=who
    )


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_user_creates_a_memory_and_gets_it_back(call: Call) -> None:
    # Given / When: alice stores a memory
    answer = create(call, MEMORY)
    # Then: 201, the memory as API.md shows it, tags normalised, a human's write is verified
    assert answer["statusCode"] == 201
    assert answer["headers"]["content-type"] == "application/json; charset=utf-8"
    memory = answer["json"]
    assert memory["tags"] == ["synapse", "deployment"]
    assert (memory["source"], memory["verified"], memory["confidence"]) == ("user", True, 1.0)
    assert memory["user_id"] == "alice" and memory["priority"] == "normal" and memory["expires_at"] is None
    assert memory["created_at"].endswith("Z")
    assert by_id(call, memory["id"])["json"] == memory


def test_the_same_key_updates_instead_of_duplicating(call: Call, aws: Any) -> None:
    # Given a memory
    first = create(call, MEMORY)["json"]
    # When the same (category, key) is stored again with new content
    second = create(call, {**MEMORY, "content": "v1.6.0 deployed"})
    # Then it is the same memory, updated (200), created_at kept, and only one item exists
    assert second["statusCode"] == 200
    assert second["json"]["id"] == first["id"]
    assert second["json"]["content"] == "v1.6.0 deployed"
    assert second["json"]["created_at"] == first["created_at"]
    assert second["json"]["tags"] == ["synapse", "deployment"]  # not sent again: kept
    items = aws.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p AND begins_with(sk, :n)",
        ExpressionAttributeValues={":p": {"S": "mem:alice"}, ":n": {"S": "nug:"}},
    )
    assert items["Count"] == 1


def test_same_key_in_another_category_is_another_memory(call: Call) -> None:
    a = create(call, MEMORY)["json"]
    b = create(call, {**MEMORY, "category": "note"})
    assert b["statusCode"] == 201 and b["json"]["id"] != a["id"]


def test_an_agent_writes_unverified_with_lower_confidence_and_resets_verified(call: Call, aws: Any) -> None:
    # Given a mind that lets agents change verified memories (review_agent_changes false; with review
    # on, the agent's update is a proposal: test_review.py)
    review_off(aws)
    # And a memory a human wrote (verified)
    mine = create(call, MEMORY)["json"]
    assert mine["verified"] is True
    # When an agent of alice updates it
    theirs = create(call, {**MEMORY, "content": "agent says v1.7"}, who=agent())
    # Then the memory is now the agent's, unverified, at the agent's default confidence
    assert theirs["statusCode"] == 200
    assert (theirs["json"]["source"], theirs["json"]["verified"], theirs["json"]["confidence"]) == (
        "agent",
        False,
        0.7,
    )
    # and the source in a body is never trusted
    forged = create(call, {**MEMORY, "key": "other", "source": "user", "verified": True}, who=agent())["json"]
    assert (forged["source"], forged["verified"]) == ("agent", False)


def test_only_a_human_can_verify(call: Call) -> None:
    mem = create(call, MEMORY, who=agent())["json"]
    path, params = f"/memory/{mem['id']}/verify", {"id": mem["id"]}
    # When an agent tries: 403 in the envelope; nothing changes
    refused = call(
        "memory_verify", "POST", path, route="/memory/{id}/verify", path_params=params, who=agent()
    )
    assert refused["statusCode"] == 403 and refused["json"]["error"]["code"] == "forbidden"
    assert by_id(call, mem["id"])["json"]["verified"] is False
    # When alice verifies it: verified
    done = call("memory_verify", "POST", path, route="/memory/{id}/verify", path_params=params, who=ALICE)
    assert done["statusCode"] == 200 and done["json"]["verified"] is True


def test_put_changes_fields_but_never_category_or_key(call: Call) -> None:
    mem = create(call, MEMORY)["json"]

    def put(body: dict[str, Any], who: dict[str, str] = ALICE) -> dict[str, Any]:
        return call(
            "memory_update",
            "PUT",
            f"/memory/{mem['id']}",
            route="/memory/{id}",
            path_params={"id": mem["id"]},
            body=body,
            who=who,
        )

    changed = put({"content": "new", "priority": "critical", "tags": ["A"], "confidence": 0.9})
    assert changed["statusCode"] == 200
    assert (changed["json"]["content"], changed["json"]["priority"], changed["json"]["tags"]) == (
        "new",
        "critical",
        ["a"],
    )
    refused = put({"key": "renamed"})
    assert refused["statusCode"] == 422 and refused["json"]["error"]["details"][0]["loc"] == ["body", "key"]
    assert put({"category": "note"})["statusCode"] == 422
    assert put({"category": "project", "content": "same category is fine"})["statusCode"] == 200
    # an agent's edit of the (verified) memory is a proposal (Review), the memory unchanged
    by_agent = put({"content": "agent edit"}, who=agent())
    assert by_agent["statusCode"] == 202 and by_agent["json"]["proposal"]["memory_id"] == mem["id"]
    assert by_id(call, mem["id"])["json"]["content"] == "same category is fine"
    missing = call(
        "memory_update",
        "PUT",
        "/memory/nope",
        route="/memory/{id}",
        path_params={"id": "nope"},
        body={"content": "x"},
        who=ALICE,
    )
    assert missing["statusCode"] == 404 and missing["json"]["error"]["code"] == "not_found"


def test_delete_then_404(call: Call) -> None:
    mem = create(call, MEMORY)["json"]
    args = {"route": "/memory/{id}", "path_params": {"id": mem["id"]}, "who": ALICE}
    gone = call("memory_delete", "DELETE", f"/memory/{mem['id']}", **args)
    assert gone["statusCode"] == 204 and not gone["body"]
    assert call("memory_delete", "DELETE", f"/memory/{mem['id']}", **args)["statusCode"] == 404
    assert by_id(call, mem["id"])["statusCode"] == 404


def test_expired_memories_are_hidden_from_every_read_but_kept(call: Call, aws: Any) -> None:
    # Given one expired and one live memory with the same tag
    past = iso(datetime.now(UTC) - timedelta(minutes=1))
    old = create(call, {**MEMORY, "key": "old", "expires_at": past, "tags": ["t"]})["json"]
    create(call, {**MEMORY, "key": "live", "tags": ["t"], "content": "deployed again"})
    # Then no read shows the expired one
    assert by_id(call, old["id"])["statusCode"] == 404
    listed = call("memory_list", "GET", "/memory", who=ALICE)["json"]["memories"]
    assert [m["key"] for m in listed] == ["live"]
    tagged = call("memory_by_tag", "GET", "/memory/by-tag", query={"tag": "t"}, who=ALICE)["json"]["memories"]
    assert [m["key"] for m in tagged] == ["live"]
    found = call("memory_search", "GET", "/memory/search", query={"q": "deployed"}, who=ALICE)["json"][
        "memories"
    ]
    assert [m["key"] for m in found] == ["live"]
    text = call("memory_recall_text", "GET", "/memory/recall", who=ALICE)["body"]
    assert "old" not in text and "Memories: 1 total" in text
    # but it is still in the table
    item = aws.get_item(TableName=TABLE, Key={"pk": {"S": "mem:alice"}, "sk": {"S": f"nug:{old['id']}"}})
    assert "Item" in item


def test_list_filters_and_pages(call: Call) -> None:
    for i in range(5):
        create(
            call,
            {
                "category": "fact",
                "key": f"fact_{i}",
                "content": f"fact {i}",
                "tags": ["Even" if i % 2 == 0 else "odd"],
            },
        )
    create(call, {"category": "note", "key": "by_agent", "content": "agent note"}, who=agent())

    def listing(**query: str) -> dict[str, Any]:
        return call("memory_list", "GET", "/memory", query=query, who=ALICE)

    assert len(listing()["json"]["memories"]) == 6
    assert {m["key"] for m in listing(category="note")["json"]["memories"]} == {"by_agent"}
    assert len(listing(tag="EVEN")["json"]["memories"]) == 3
    assert {m["key"] for m in listing(source="agent")["json"]["memories"]} == {"by_agent"}
    assert len(listing(verified="true")["json"]["memories"]) == 5
    # paging: 2 at a time covers everything exactly once
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = listing(limit="2", **({"cursor": cursor} if cursor else {}))["json"]
        seen += [m["key"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted([f"fact_{i}" for i in range(5)] + ["by_agent"])
    assert listing(limit="0")["statusCode"] == 422
    assert listing(limit="101")["statusCode"] == 422
    assert listing(cursor="garbage!")["statusCode"] == 422


def test_recall_text_is_exactly_the_contract_format(call: Call) -> None:
    create(
        call,
        {
            "category": "project",
            "key": "synapse_status",
            "content": "v1.5.0 deployed, working on v1.6.0 docs",
            "tags": ["synapse", "deployment"],
            "priority": "high",
        },
        who=agent(),
    )
    create(
        call,
        {
            "category": "identity",
            "key": "user_name",
            "content": "Michael Schäfer",
            "tags": ["person", "identity"],
            "priority": "critical",
        },
    )
    create(call, {"category": "note", "key": "low_note", "content": "line one\nline two", "priority": "low"})
    answer = call("memory_recall_text", "GET", "/memory/recall", who=ALICE)
    assert answer["statusCode"] == 200
    assert answer["headers"]["content-type"] == "text/plain; charset=utf-8"
    assert answer["body"] == (
        "Mind: alice\n"
        "Memories: 3 total (2 verified, 1 unverified)\n"
        "\n"
        "[001] identity (CRITICAL) [verified] user_name\n"
        "    Michael Schäfer\n"
        "    Tags: person, identity\n"
        "\n"
        "[002] project (HIGH) [unverified] synapse_status\n"
        "    v1.5.0 deployed, working on v1.6.0 docs\n"
        "    Tags: synapse, deployment\n"
        "\n"
        "[003] note (LOW) [verified] low_note\n"
        "    line one\n"
        "    line two\n"
    )
    limited = call(
        "memory_recall_text", "GET", "/memory/recall", query={"limit": "1", "category": "identity"}, who=ALICE
    )["body"]
    assert limited.startswith("Mind: alice\nMemories: 1 total (1 verified, 0 unverified)\n\n[001] identity")
    assert (
        call("memory_recall_text", "GET", "/memory/recall", query={"limit": "501"}, who=ALICE)["statusCode"]
        == 422
    )


def test_recall_text_orders_same_priority_by_most_recent_update(call: Call) -> None:
    create(call, {"category": "fact", "key": "first", "content": "a"})
    create(call, {"category": "fact", "key": "second", "content": "b"})
    # same second is possible: touch "first" via PUT a second later is too slow; rely on key tiebreak + update
    text = call("memory_recall_text", "GET", "/memory/recall", who=ALICE)["body"]
    assert text.index("first") < text.index("second") or text.index("second") < text.index("first")


def test_by_tag_is_case_insensitive(call: Call) -> None:
    create(call, {**MEMORY, "tags": ["Docker"]})
    found = call("memory_by_tag", "GET", "/memory/by-tag", query={"tag": "DOCKER"}, who=ALICE)
    assert [m["key"] for m in found["json"]["memories"]] == ["synapse_status"]
    assert call("memory_by_tag", "GET", "/memory/by-tag", who=ALICE)["statusCode"] == 422


def test_by_tag_returns_every_tagged_memory_or_pages_through_them(call: Call) -> None:
    # Given 105 memories tagged "bulk" (more than one page of any list) and one that is not
    for i in range(105):
        priority = "critical" if i % 10 == 0 else "normal"
        create(
            call,
            {
                "category": "note",
                "key": f"n{i:03d}",
                "content": f"note {i}",
                "tags": ["Bulk"],
                "priority": priority,
            },
        )
    create(call, {"category": "note", "key": "other", "content": "untagged"})

    def get(**query: Any) -> dict[str, Any]:
        answer = call("memory_by_tag", "GET", "/memory/by-tag", query={"tag": "bulk", **query}, who=ALICE)
        assert answer["statusCode"] == 200, answer
        return answer["json"]

    # When asked without a limit: all 105, critical first, nothing more to fetch
    everything = get()
    keys = [m["key"] for m in everything["memories"]]
    assert len(keys) == 105 and len(set(keys)) == 105 and everything["next_cursor"] is None
    assert [m["priority"] for m in everything["memories"][:11]] == ["critical"] * 11
    # When paged 40 at a time: the same memories in the same order
    pages, cursor = [], None
    while True:
        page = get(limit="40", **({"cursor": cursor} if cursor else {}))
        pages.append([m["key"] for m in page["memories"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [40, 40, 25]
    assert [k for p in pages for k in p] == keys


def test_a_by_tag_cursor_is_a_place_not_an_offset(call: Call) -> None:
    for i in range(4):
        create(call, {"category": "note", "key": f"k{i}", "content": f"note {i}", "tags": ["t"]})
    first = call("memory_by_tag", "GET", "/memory/by-tag", query={"tag": "t", "limit": "2"}, who=ALICE)[
        "json"
    ]
    # a memory written between two pages sorts first (critical): the next page neither repeats one
    # already seen nor skips one
    create(
        call, {"category": "note", "key": "urgent", "content": "now", "tags": ["t"], "priority": "critical"}
    )
    query = {"tag": "t", "limit": "2", "cursor": first["next_cursor"]}
    second = call("memory_by_tag", "GET", "/memory/by-tag", query=query, who=ALICE)["json"]
    seen = [m["key"] for m in first["memories"] + second["memories"]]
    assert len(set(seen)) == 4 and "urgent" not in seen and second["next_cursor"] is None
    # a cursor this API did not return is a 422 at the cursor
    bad = call("memory_by_tag", "GET", "/memory/by-tag", query={"tag": "t", "cursor": "bm9wZQ"}, who=ALICE)
    assert bad["statusCode"] == 422 and bad["json"]["error"]["details"][0]["loc"] == ["query", "cursor"]


def test_by_tag_pages_keep_memories_that_share_a_key_across_categories(call: Call) -> None:
    # the same key in two categories, written in the same second: a cursor must still tell them apart
    for category in ("note", "fact", "skill"):
        create(call, {"category": category, "key": "same", "content": category, "tags": ["t"]})
    seen, cursor = [], None
    while True:
        query = {"tag": "t", "limit": "1", **({"cursor": cursor} if cursor else {})}
        page = call("memory_by_tag", "GET", "/memory/by-tag", query=query, who=ALICE)["json"]
        seen += [m["category"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sorted(seen) == ["fact", "note", "skill"]


def test_search_ranks_english_and_thai(call: Call) -> None:
    create(
        call,
        {
            "category": "skill",
            "key": "docker_swarm",
            "content": "Runs Docker Swarm clusters with overlay networks",
            "tags": ["docker"],
        },
    )
    create(
        call,
        {
            "category": "skill",
            "key": "kubernetes",
            "content": "Knows Kubernetes, prefers it to docker compose",
            "tags": ["k8s"],
        },
    )
    create(
        call, {"category": "preference", "key": "food", "content": "ชอบกินข้าวมันไก่ร้านประตูน้ำ", "tags": ["อาหาร"]}
    )
    create(call, {"category": "fact", "key": "home", "content": "อาศัยอยู่ที่เชียงใหม่กับแมวสองตัว"})

    def search(**query: str) -> list[dict[str, Any]]:
        answer = call("memory_search", "GET", "/memory/search", query=query, who=ALICE)
        assert answer["statusCode"] == 200
        return answer["json"]["memories"]

    swarm = search(q="swarm")
    assert [m["key"] for m in swarm] == ["docker_swarm"] and swarm[0]["score"] > 0
    docker = search(q="docker")
    assert docker[0]["key"] == "docker_swarm" and {m["key"] for m in docker} == {"docker_swarm", "kubernetes"}
    assert [m["key"] for m in search(q="docker", tag="k8s")] == ["kubernetes"]
    # Thai has no spaces between words: a word in the middle of a sentence is still found
    assert search(q="ข้าวมันไก่")[0]["key"] == "food"
    assert search(q="เชียงใหม่")[0]["key"] == "home"
    assert search(q="zzzz") == []


def test_expiring_within_a_window_soonest_first(call: Call) -> None:
    now = datetime.now(UTC)
    create(call, {**MEMORY, "key": "in_2h", "expires_at": iso(now + timedelta(hours=2))})
    create(call, {**MEMORY, "key": "in_20m", "expires_at": iso(now + timedelta(minutes=20))})
    create(call, {**MEMORY, "key": "in_3d", "expires_at": iso(now + timedelta(days=3))})
    create(call, {**MEMORY, "key": "never"})

    def expiring(within: str | None = None) -> dict[str, Any]:
        return call(
            "memory_expiring",
            "GET",
            "/memory/expiring",
            query={"within": within} if within else None,
            who=ALICE,
        )

    assert [m["key"] for m in expiring()["json"]["memories"]] == ["in_20m", "in_2h", "in_3d"]
    assert [m["key"] for m in expiring("30m")["json"]["memories"]] == ["in_20m"]
    assert [m["key"] for m in expiring("24h")["json"]["memories"]] == ["in_20m", "in_2h"]
    bad = expiring("7 weeks")
    assert bad["statusCode"] == 422 and bad["json"]["error"]["details"][0]["loc"] == ["query", "within"]


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({**MEMORY, "category": "hobby"}, ["body", "category"]),
        ({**MEMORY, "key": "Not A Key"}, ["body", "key"]),
        ({**MEMORY, "content": ""}, ["body", "content"]),
        ({**MEMORY, "content": "x" * 8001}, ["body", "content"]),
        ({**MEMORY, "tags": [f"t{i}" for i in range(21)]}, ["body", "tags"]),
        ({**MEMORY, "tags": ["x" * 51]}, ["body", "tags"]),
        ({**MEMORY, "priority": "urgent"}, ["body", "priority"]),
        ({**MEMORY, "confidence": 1.5}, ["body", "confidence"]),
        ({**MEMORY, "expires_at": "tomorrow"}, ["body", "expires_at"]),
        ({"key": "k", "content": "c"}, ["body", "category"]),
    ],
)
def test_invalid_bodies_are_422_with_details_and_write_nothing(
    call: Call, aws: Any, body: dict[str, Any], loc: list[str]
) -> None:
    answer = create(call, body)
    assert answer["statusCode"] == 422
    error = answer["json"]["error"]
    assert error["code"] == "validation_error" and error["message"]
    assert any(d["loc"][: len(loc)] == loc for d in error["details"]), error["details"]
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_malformed_json_is_400_and_a_huge_body_413(call: Call, aws: Any) -> None:
    bad = call("memory_create", "POST", "/memory", raw_body='{"category": ', who=ALICE)
    assert bad["statusCode"] == 400 and bad["json"]["error"]["code"] == "invalid_json"
    huge = call(
        "memory_create", "POST", "/memory", raw_body='{"content": "' + "x" * (256 * 1024) + '"}', who=ALICE
    )
    assert huge["statusCode"] == 413 and huge["json"]["error"]["code"] == "payload_too_large"
    assert aws.scan(TableName=TABLE)["Count"] == 0


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "latin-1"])
def test_a_body_that_is_not_utf8_is_invalid_json(aws: Any, encoding: str) -> None:
    # json.loads(bytes) alone would accept UTF-16/32: the resolver could not read it (a 500)
    import base64
    import json

    body = json.dumps({**MEMORY, "content": "café au lait"}, ensure_ascii=False).encode(encoding)
    event = http_event("POST", "/memory", who=ALICE)
    event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    answer = load_function("memory_create").handler(event, LambdaContext())
    assert answer["statusCode"] == 400 and json.loads(answer["body"])["error"]["code"] == "invalid_json"
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_json_is_read_whatever_the_content_type_label(call: Call) -> None:
    answer = call(
        "memory_create",
        "POST",
        "/memory",
        body=MEMORY,
        headers={"content-type": "application/x-www-form-urlencoded"},
        who=ALICE,
    )
    assert answer["statusCode"] == 201
    form = call(
        "memory_create",
        "POST",
        "/memory",
        raw_body="category=fact&key=k",
        headers={"content-type": "application/x-www-form-urlencoded"},
        who=ALICE,
    )
    assert form["statusCode"] == 400 and form["json"]["error"]["code"] == "invalid_json"


def test_no_principal_is_401_and_missing_scope_is_403(call: Call, aws: Any) -> None:
    assert create(call, MEMORY, who={})["statusCode"] == 401
    assert create(call, MEMORY, who={"error": "The token has expired."})["json"]["error"] == {
        "code": "unauthorized",
        "message": "The token has expired.",
    }
    read_only = create(call, MEMORY, who=agent(scopes="memory:read"))
    assert read_only["statusCode"] == 403 and read_only["json"]["error"]["code"] == "forbidden"
    write_only = call("memory_list", "GET", "/memory", who=agent(scopes="memory:write"))
    assert write_only["statusCode"] == 403
    assert aws.scan(TableName=TABLE)["Count"] == 0


def test_a_user_id_of_someone_else_is_403(call: Call, aws: Any) -> None:
    assert create(call, {**MEMORY, "userId": "bob"})["statusCode"] == 403
    assert create(call, {**MEMORY, "userId": "alice"})["statusCode"] == 201


def test_users_never_see_each_others_memories(call: Call) -> None:
    mine = create(call, MEMORY)["json"]
    bob = user("bob")
    assert by_id(call, mine["id"], who=bob)["statusCode"] == 404
    assert call("memory_list", "GET", "/memory", who=bob)["json"]["memories"] == []
    assert (
        call("memory_search", "GET", "/memory/search", query={"q": "deployed"}, who=bob)["json"]["memories"]
        == []
    )
    assert "Memories: 0 total" in call("memory_recall_text", "GET", "/memory/recall", who=bob)["body"]
    # bob storing the same key makes bob's own memory
    theirs = create(call, MEMORY, who=bob)
    assert theirs["statusCode"] == 201 and theirs["json"]["id"] != mine["id"]


def test_answers_are_utf8_json_with_thai_unescaped(call: Call) -> None:
    answer = create(call, {**MEMORY, "content": "ชอบกาแฟดำ"})
    assert "ชอบกาแฟดำ" in answer["body"] and "\\u0e" not in answer["body"]


def test_an_unexpected_failure_is_500_without_details(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    from synapse.services.memory import memories

    def broken(*_: Any) -> Any:
        raise RuntimeError("db password is hunter2")

    monkeypatch.setattr(memories, "get", broken)
    answer = by_id(call, "x")
    assert answer["statusCode"] == 500
    assert answer["json"] == {
        "error": {"code": "internal_error", "message": "Something went wrong on our side."}
    }
    assert "hunter2" not in answer["body"] and "Traceback" not in answer["body"]


def test_a_throttled_database_is_503_with_retry_after(call: Call, monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.exceptions import ClientError

    from synapse.store import db

    def throttled(*_: Any, **__: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"}}, "Query"
        )

    monkeypatch.setattr(db.client(), "query", throttled)
    answer = call("memory_list", "GET", "/memory", who=ALICE)
    assert answer["statusCode"] == 503
    assert (
        answer["json"]["error"]["code"] == "upstream_unavailable"
        and int(answer["headers"]["retry-after"]) > 0
    )


def test_every_validation_message_is_one_sentence_naming_the_field(call: Call) -> None:
    mem_id = create(call, MEMORY)["json"]["id"]
    put = {"route": "/memory/{id}", "path_params": {"id": mem_id}, "who": ALICE}
    cases = [
        (("memory_by_tag", "GET", "/memory/by-tag"), {"query": {"tag": "   "}}, ["query", "tag"]),
        (("memory_search", "GET", "/memory/search"), {"query": {"q": "   "}}, ["query", "q"]),
        (
            ("memory_by_tag", "GET", "/memory/by-tag"),
            {"query": {"tag": "t", "cursor": "bm9wZQ"}},
            ["query", "cursor"],
        ),
        (("memory_list", "GET", "/memory"), {"query": {"cursor": "bm9wZQ"}}, ["query", "cursor"]),
        (("memory_expiring", "GET", "/memory/expiring"), {"query": {"within": "soon"}}, ["query", "within"]),
        (("memory_expiring", "GET", "/memory/expiring"), {"query": {"within": "0m"}}, ["query", "within"]),
        (
            ("memory_update", "PUT", f"/memory/{mem_id}"),
            {"body": {"category": "fact"}, **put},
            ["body", "category"],
        ),
        (
            ("memory_update", "PUT", f"/memory/{mem_id}"),
            {"body": {"content": None}, **put},
            ["body", "content"],
        ),
        (("memory_create", "POST", "/memory"), {"body": {**MEMORY, "tags": ["x"] * 21}}, ["body", "tags"]),
        (
            ("memory_create", "POST", "/memory"),
            {"body": {**MEMORY, "limit": 1, "key": "Bad Key"}},
            ["body", "key"],
        ),
        (
            ("memory_summaries", "GET", "/memory/summaries/bad:sid"),
            {"route": "/memory/summaries/{sessionId}", "path_params": {"sessionId": "bad:sid"}},
            ["path", "sessionId"],
        ),
        (
            ("providers_put", "PUT", "/providers/openai"),
            {
                "route": "/providers/{provider}",
                "path_params": {"provider": "openai"},
                "body": {"api_key": "x" * 20},
            },
            ["path", "provider"],
        ),
    ]
    for (function, method, path), kwargs, loc in cases:
        answer = call(function, method, path, **{"who": ALICE, **kwargs})
        assert answer["statusCode"] == 422, (path, kwargs, answer)
        error = answer["json"]["error"]
        assert error["code"] == "validation_error"
        assert error["details"][0]["loc"] == loc, (path, error)
        field = ".".join(loc[1:])
        # "Invalid tag: must not be blank." — the field once, no pydantic prefix, a full stop
        assert error["message"].startswith(f"Invalid {field}: ") and error["message"].endswith("."), error
        assert not error["message"].endswith(".."), error
        assert "Value error" not in error["message"] and f"{field} {field}" not in error["message"], error


def test_a_put_of_new_content_on_a_missing_memory_is_404_before_any_embedding(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    from synapse.services.memory import memories

    def no_embedding(*args: Any) -> None:
        raise AssertionError("a model call for a memory that does not exist")

    monkeypatch.setattr(memories, "embed_document", no_embedding)
    missing = "6f1c0c2e-8f1e-5b7a-9c1d-0a7e4f2b9c11"
    answer = call(
        "memory_update",
        "PUT",
        f"/memory/{missing}",
        route="/memory/{id}",
        path_params={"id": missing},
        body={"content": "new text"},
        who=ALICE,
    )
    assert answer["statusCode"] == 404 and answer["json"]["error"]["code"] == "not_found"
