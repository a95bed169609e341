"""Consolidation: duplicates merged, old low-priority memories summarized per category, verified ones
untouched; every change a version, restorable; the daily run takes the minds written since."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from harness.lambdas import ALICE, LambdaContext, agent, load_function, sample_event, user
from synapse.core.models.base import iso, utcnow
from synapse.store import changelog
from synapse.store.keys import Space
from tests.conftest import TABLE, Call
from tests.integration.test_auth_matrix import snapshot
from tests.integration.test_review import get, on_id
from tests.integration.test_supersession import listed


def consolidate(call: Call, mind_id: str = "default", who: dict[str, str] = ALICE) -> dict[str, Any]:
    return call(
        "minds_consolidate",
        "POST",
        f"/minds/{mind_id}/consolidate",
        route="/minds/{mindId}/consolidate",
        path_params={"mindId": mind_id},
        who=who,
    )


def age(aws: Any, mem_id: str, days: int) -> None:
    """Make a memory look untouched for `days` (what time would do)."""
    aws.update_item(
        TableName=TABLE,
        Key={"pk": {"S": "mem:alice"}, "sk": {"S": f"nug:{mem_id}"}},
        UpdateExpression="SET updated_at = :t",
        ExpressionAttributeValues={":t": {"S": iso(utcnow() - timedelta(days=days))}},
    )


def write(call: Call, key: str, content: str, who: dict[str, str], **extra: Any) -> dict[str, Any]:
    body = {"category": "context", "key": key, "content": content, **extra}
    answer = call("memory_create", "POST", "/memory", body=body, who=who)
    assert answer["statusCode"] in (200, 201), answer["body"]
    return dict(answer["json"])


@pytest.fixture
def mind(call: Call, aws: Any) -> dict[str, dict[str, Any]]:
    """Old low-priority agent memories, a recent one, a verified old one, and a duplicate pair."""
    made = {
        "trip": write(
            call,
            "trip",
            "Visited Kyoto in spring. Loved the temples.",
            agent(),
            priority="low",
            tags=["travel"],
        ),
        "cafe": write(
            call,
            "cafe",
            "Tried a new cafe on Sukhumvit; good flat white.",
            agent(),
            priority="low",
            tags=["coffee"],
        ),
        "fresh": write(call, "fresh", "Working on the quarterly report this week.", agent(), priority="low"),
        "mine": write(call, "mine", "My old note I keep as it is.", ALICE, priority="low"),
        "dup_a": write(call, "dup_a", "Prefers  TEA in the morning", agent()),
        "dup_b": write(call, "dup_b", "prefers tea in the ＭＯＲＮＩＮＧ", agent()),
    }
    for name in ("trip", "cafe", "mine"):
        age(aws, made[name]["id"], 40)
    age(aws, made["dup_a"]["id"], 1)  # (the older of the pair)
    return made


def test_consolidation_summarizes_old_low_priority_memories_and_merges_duplicates(
    call: Call, mind: dict[str, dict[str, Any]]
) -> None:
    # When alice consolidates her mind
    answer = consolidate(call)
    # Then two old memories are summarized into one, and one duplicate merged into the newer
    assert answer["statusCode"] == 200, answer["body"]
    out = answer["json"]
    assert (out["consolidated"], out["merged"]) == (2, 1) and len(out["created"]) == 1
    summary = get(call, out["created"][0])["json"]
    assert (summary["key"], summary["category"], summary["priority"]) == (
        "consolidated_context",
        "context",
        "low",
    )
    assert (summary["source"], summary["verified"]) == ("agent", False)
    assert "Kyoto" in summary["content"] and "Sukhumvit" in summary["content"]
    assert set(summary["tags"]) == {"travel", "coffee"}
    assert (
        on_id(call, "memory_history", "GET", summary["id"], "/history", who=ALICE)["json"]["versions"][0][
            "change"
        ]
        == "consolidated"
    )
    for name in ("trip", "cafe"):
        hidden = get(call, mind[name]["id"])["json"]
        assert hidden["superseded_by"] == summary["id"]
    assert get(call, mind["dup_a"]["id"])["json"]["superseded_by"] == mind["dup_b"]["id"]
    # And the live list holds the summary, the recent, the verified and the newer duplicate only
    assert set(listed(call)) == {summary["id"], mind["fresh"]["id"], mind["mine"]["id"], mind["dup_b"]["id"]}
    # And the verified memory is untouched
    assert get(call, mind["mine"]["id"])["json"]["version"] == 1


def test_a_consolidated_memory_is_restorable(call: Call, mind: dict[str, dict[str, Any]]) -> None:
    consolidate(call)
    trip = get(call, mind["trip"]["id"])["json"]
    back = on_id(call, "memory_restore", "POST", trip["id"], "/restore", body={"version": 1}, who=ALICE)
    assert back["statusCode"] == 200 and back["json"]["superseded_by"] is None
    assert trip["id"] in listed(call)


def test_consolidating_again_changes_nothing_new(
    call: Call, aws: Any, mind: dict[str, dict[str, Any]]
) -> None:
    consolidate(call)
    before = snapshot(aws)
    again = consolidate(call)["json"]
    assert again == {"consolidated": 0, "merged": 0, "created": []}
    assert snapshot(aws) == before


def test_consolidation_is_for_the_users_own_minds(
    call: Call, aws: Any, mind: dict[str, dict[str, Any]]
) -> None:
    before = snapshot(aws)
    assert consolidate(call, who=agent())["statusCode"] == 403
    assert consolidate(call, "m_aaaaaaaaaaaa")["statusCode"] == 404
    assert consolidate(call, "nope")["statusCode"] == 404
    # bob consolidates his own (empty) default mind: alice's is untouched
    assert consolidate(call, who=user("bob"))["json"] == {"consolidated": 0, "merged": 0, "created": []}
    assert snapshot(aws) == before


def test_the_daily_run_takes_the_minds_written_since_their_last_run(
    call: Call, mind: dict[str, dict[str, Any]]
) -> None:
    handler = load_function("consolidate_daily").handler
    # When the schedule fires: alice's mind was written to, so it is consolidated
    first = handler(sample_event("consolidate_daily"), LambdaContext())
    assert first == {"minds": 1, "consolidated": 2, "merged": 1}
    # And the next day, with nothing written since, no mind is due
    assert list(changelog.written_since_consolidation()) == []
    assert handler(sample_event("consolidate_daily"), LambdaContext())["minds"] == 0
    # And a write makes it due again
    write(call, "later", "Something new", agent())
    assert [space for space, _ in changelog.written_since_consolidation()] == [Space("alice")]
