"""Isolation across minds, proven like isolation across users: random sequences of memory routes as
two users, each with two minds, acting through their JWT (with X-Mind-Id) or through Mind Keys.

A model keeps what each (user, mind) holds. After every call the answer is checked against it: a key
of mind A never reads, writes, counts or searches mind B's memories; a user's JWT reaches every mind
of theirs and none of anyone else's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from harness.lambdas import user
from tests.conftest import Call

KEYS = ["home", "editor"]  # the same (category, key) in every mind: must never collide
WORDS = ["lisbon", "กาแฟ", "guitar"]


@dataclass
class Mind:
    uid: str
    mind_id: str
    name: str
    key: dict[str, str] = field(default_factory=dict)  # the Mind Key's authorizer context
    memories: dict[str, str] = field(default_factory=dict)  # id → content
    verified: set[str] = field(default_factory=set)  # ids a person wrote last (an agent only proposes)


def _mind_key(call: Call, uid: str, mind_id: str) -> dict[str, str]:
    from synapse.services.account import auth

    made = call(
        "keys_create",
        "POST",
        "/keys",
        body={"name": f"bot {mind_id}", "scopes": ["memory:read", "memory:write"], "mind_id": mind_id},
        who=user(uid),
    )
    assert made["statusCode"] == 201, made["body"]
    return auth.verify_api_key(made["json"]["key"]).context()


def run_isolation(call: Call) -> None:
    class MindIsolation(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            tok = uuid.uuid4().hex[:8]
            self.minds: list[Mind] = []
            for i in range(2):
                uid = f"m{i}{tok}"
                self.minds.append(Mind(uid=uid, mind_id="default", name=uid))
                made = call("minds_create", "POST", "/minds", body={"name": f"side {i}"}, who=user(uid))
                assert made["statusCode"] == 201, made["body"]
                self.minds.append(Mind(uid=uid, mind_id=made["json"]["mind_id"], name=f"side {i}"))
            for mind in self.minds:
                mind.key = _mind_key(call, mind.uid, mind.mind_id)
            self.n = 0

        def caller(self, i: int, through_key: bool) -> tuple[Mind, dict[str, str], dict[str, str]]:
            """A mind, and how to act in it: its Mind Key, or its user's JWT with X-Mind-Id."""
            mind = self.minds[i]
            if through_key:
                return mind, mind.key, {}
            return mind, user(mind.uid), {"x-mind-id": mind.mind_id}

        def check_clean(self, mind: Mind, answer: dict[str, Any], allow: str = "") -> None:
            text = answer.get("body") or ""
            assert answer["statusCode"] < 500, text
            for other in self.minds:
                if other is mind:
                    continue
                leaked = [i for i in other.memories if i != allow and i in text]
                leaked += [c for c in other.memories.values() if c in text]
                assert not leaked, ("leaks", leaked, text[:300])

        def all_ids(self) -> list[tuple[int, str]]:
            return [(i, m) for i, mind in enumerate(self.minds) for m in mind.memories]

        @rule(
            i=st.integers(0, 3),
            through_key=st.booleans(),
            key=st.sampled_from(KEYS),
            word=st.sampled_from(WORDS),
        )
        def create(self, i: int, through_key: bool, key: str, word: str) -> None:
            mind, who, headers = self.caller(i, through_key)
            self.n += 1
            body = {
                "category": "fact",
                "key": key,
                "content": f"{mind.mind_id} {word} #{self.n} {uuid.uuid4().hex[:6]}",
            }
            answer = call("memory_create", "POST", "/memory", body=body, who=who, headers=headers)
            self.check_clean(mind, answer)
            if answer["statusCode"] == 202:  # an agent's change of a verified memory (Review)
                assert through_key and answer["json"]["proposal"]["memory_id"] in mind.verified
                return
            assert answer["json"]["mind_id"] == mind.mind_id
            old = [m for m, c in mind.memories.items() if m == answer["json"]["id"]]
            assert answer["statusCode"] == (200 if old else 201)
            assert not (through_key and answer["json"]["id"] in mind.verified)
            mind.memories[answer["json"]["id"]] = body["content"]
            if through_key:
                mind.verified.discard(answer["json"]["id"])
            else:
                mind.verified.add(answer["json"]["id"])

        @precondition(lambda self: any(m.memories for m in self.minds))
        @rule(i=st.integers(0, 3), through_key=st.booleans(), data=st.data())
        def get(self, i: int, through_key: bool, data: st.DataObject) -> None:
            mind, who, headers = self.caller(i, through_key)
            j, mem_id = data.draw(st.sampled_from(self.all_ids()))
            answer = call(
                "memory_get",
                "GET",
                f"/memory/{mem_id}",
                route="/memory/{id}",
                path_params={"id": mem_id},
                who=who,
                headers=headers,
            )
            self.check_clean(mind, answer, allow=mem_id)
            if self.minds[j] is mind:
                assert answer["json"]["content"] == mind.memories[mem_id]
            else:
                assert answer["statusCode"] == 404

        @precondition(lambda self: any(m.memories for m in self.minds))
        @rule(i=st.integers(0, 3), through_key=st.booleans(), data=st.data())
        def delete(self, i: int, through_key: bool, data: st.DataObject) -> None:
            mind, who, headers = self.caller(i, through_key)
            j, mem_id = data.draw(st.sampled_from(self.all_ids()))
            answer = call(
                "memory_delete",
                "DELETE",
                f"/memory/{mem_id}",
                route="/memory/{id}",
                path_params={"id": mem_id},
                who=who,
                headers=headers,
            )
            self.check_clean(mind, answer, allow=mem_id)
            if self.minds[j] is mind and through_key and mem_id in mind.verified:
                assert answer["statusCode"] == 202  # a proposal: the verified memory stays
            elif self.minds[j] is mind:
                assert answer["statusCode"] == 204
                del mind.memories[mem_id]
                mind.verified.discard(mem_id)
            else:
                assert answer["statusCode"] == 404

        @rule(i=st.integers(0, 3), through_key=st.booleans(), word=st.sampled_from(WORDS))
        def read_everything(self, i: int, through_key: bool, word: str) -> None:
            mind, who, headers = self.caller(i, through_key)
            listed = call("memory_list", "GET", "/memory", query={"limit": "100"}, who=who, headers=headers)
            self.check_clean(mind, listed)
            assert {m["id"] for m in listed["json"]["memories"]} == set(mind.memories)
            found = call(
                "memory_search", "GET", "/memory/search", query={"q": word}, who=who, headers=headers
            )
            self.check_clean(mind, found)
            assert {m["id"] for m in found["json"]["memories"]} <= set(mind.memories)
            recalled = call(
                "memory_recall",
                "POST",
                "/memory/recall",
                body={"query": word, "limit": 50},
                who=who,
                headers=headers,
            )
            self.check_clean(mind, recalled)
            assert {m["id"] for m in recalled["json"]["memories"]} == set(mind.memories)
            text = call("memory_recall_text", "GET", "/memory/recall", who=who, headers=headers)
            self.check_clean(mind, text)
            assert text["body"].startswith(f"Mind: {mind.name}\n")
            assert f"Memories: {len(mind.memories)} total" in text["body"]

        @rule(i=st.integers(0, 3), j=st.integers(0, 3))
        def reach_another_mind(self, i: int, j: int) -> None:
            # a mind id names a mind of the caller's own user ("default" is everyone's own default):
            # a Mind Key naming any other mind is 403; a user naming a mind id of another user is 404
            mind, named = self.minds[i], self.minds[j].mind_id
            headers = {"x-mind-id": named}
            mine = {m.mind_id: m for m in self.minds if m.uid == mind.uid}
            by_key = call("memory_list", "GET", "/memory", who=mind.key, headers=headers)
            by_user = call("memory_list", "GET", "/memory", who=user(mind.uid), headers=headers)
            self.check_clean(mind, by_key)
            if named == mind.mind_id:
                assert {m["id"] for m in by_key["json"]["memories"]} == set(mind.memories)
            else:
                assert by_key["statusCode"] == 403
            if named in mine:  # one of the user's own minds: theirs to read
                assert {m["id"] for m in by_user["json"]["memories"]} == set(mine[named].memories)
            else:
                self.check_clean(mind, by_user)
                assert by_user["statusCode"] == 404

        @rule(i=st.integers(0, 3))
        def count(self, i: int) -> None:
            mind = self.minds[i]
            answer = call("minds_list", "GET", "/minds", who=user(mind.uid))
            mine = [m for m in self.minds if m.uid == mind.uid]
            assert {(m["mind_id"], m["memories"]) for m in answer["json"]["minds"]} == {
                (m.mind_id, len(m.memories)) for m in mine
            }

    run_state_machine_as_test(
        MindIsolation,
        settings=settings(
            max_examples=15,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )


@pytest.mark.slow
def test_no_mind_sees_changes_or_counts_another_minds_memories(call: Call) -> None:
    run_isolation(call)
