"""bench.locomo (the API benchmark): key mapping and recall@k math on a tiny synthetic conversation.

No server: these check the pieces the benchmark is made of, and that its recall@k over ranked lists
agrees with the offline harness's `evaluate` over score arrays.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bench.locomo import offline
from bench.locomo.__main__ import category_table, score_ranked, table
from bench.locomo.api import KeyMap, key_for, mean_recall, recall_at_k, turn_memories

TINY = {
    "speaker_a": "Ann",
    "speaker_b": "Bo",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice! I started pottery classes."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "Miso loves the window."},
    ],
    "session_2_date_time": "10:00 am on 12 June, 2023",
    "session_2": [
        {"speaker": "Bo", "dia_id": "D2:1", "text": "My pottery bowl cracked in the kiln."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "Oh no. I moved to Lisbon last week."},
    ],
    "session_10_date_time": "9:00 am on 1 July, 2023",
    "session_10": [{"speaker": "Bo", "dia_id": "D10:12", "text": "The new bowl survived."}],
    "qa": [
        {"question": "What is Ann's cat called?", "answer": "Miso", "evidence": ["D1:1"], "category": 1},
        {"question": "What does Bo make?", "answer": "bowls", "evidence": ["D1:2", "D2:1"], "category": 4},
        {"question": "Where did Ann move?", "answer": "Lisbon", "evidence": ["D2:2"], "category": 2},
        {"question": "Adversarial", "evidence": ["D1:3"], "category": 5},
        {"question": "No evidence here", "answer": "x", "evidence": ["D9:9"], "category": 3},
    ],
}


@pytest.fixture
def conv(tmp_path: Path) -> offline.Conversation:
    (tmp_path / "tiny.json").write_text(json.dumps(TINY))
    [c] = offline.load(tmp_path)
    return c


# --- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dia_id", "key"),
    [("D1:3", "d1_3"), ("D10:12", "d10_12"), ("d2:1", "d2_1"), (" D3:4 ", "d3_4"), ("D1:3:a", "d1_3_a")],
)
def test_key_for_makes_lower_snake_keys_the_api_accepts(dia_id: str, key: str) -> None:
    assert key_for(dia_id) == key


@pytest.mark.parametrize("dia_id", ["", ":", "x" * 101])
def test_key_for_refuses_what_makes_no_valid_key(dia_id: str) -> None:
    with pytest.raises(ValueError):
        key_for(dia_id)


def test_turn_memories_are_context_memories_keyed_by_dia_id(conv: offline.Conversation) -> None:
    # Given the tiny conversation, When its turns become POST /memory bodies
    bodies = turn_memories(conv)

    # Then there is one per turn, in order, as the benchmark stores them
    assert [b["key"] for b in bodies] == ["d1_1", "d1_2", "d1_3", "d2_1", "d2_2", "d10_12"]
    assert {b["category"] for b in bodies} == {"context"}
    assert bodies[0]["content"] == "[1:56 pm on 8 May, 2023] Ann: I adopted a cat named Miso."
    assert bodies[5]["content"] == "[9:00 am on 1 July, 2023] Bo: The new bowl survived."


def test_keymap_reads_returned_keys_back_to_turns(conv: offline.Conversation) -> None:
    km = KeyMap.of(conv)
    # keys that are not this conversation's turns (another memory, a null key) are dropped
    assert km.ranked(["d2_2", "user_name", None, "d1_1", "d10_12"]) == [4, 0, 5]
    assert [conv.dia_ids[i] for i in km.ranked(["d2_2", "d1_1"])] == ["D2:2", "D1:1"]


def test_keymap_refuses_two_turns_with_one_key() -> None:
    with pytest.raises(ValueError):
        KeyMap(["d1_1", "d1_1"])


def test_questions_of_categories_1_to_4_with_evidence_are_kept(conv: offline.Conversation) -> None:
    assert [q.category for q in conv.questions] == [1, 4, 2]
    assert [q.evidence for q in conv.questions] == [{0}, {1, 3}, {4}]
    assert conv.skipped == 1  # evidence D9:9 is not a turn


# --- recall@k ---------------------------------------------------------------------------------


def test_recall_at_k_is_the_share_of_evidence_in_the_first_k() -> None:
    ranked = list(range(30))
    evidence = {2, 7, 20, 40}  # 40 is never returned
    assert recall_at_k(ranked, evidence) == {5: 0.25, 10: 0.5, 25: 0.75}


def test_recall_at_k_counts_a_repeated_hit_once_and_handles_short_lists() -> None:
    assert recall_at_k([3, 3, 3], {3, 4}, ks=(1, 5)) == {1: 0.5, 5: 0.5}
    assert recall_at_k([], {1}, ks=(5,)) == {5: 0.0}


def test_recall_at_k_refuses_a_question_without_evidence() -> None:
    with pytest.raises(ValueError):
        recall_at_k([1, 2], set())


def test_mean_recall_averages_over_questions() -> None:
    rs = [{5: 1.0, 10: 1.0, 25: 1.0}, {5: 0.0, 10: 0.5, 25: 1.0}]
    assert mean_recall(rs) == {5: 0.5, 10: 0.75, 25: 1.0}
    assert mean_recall([]) == {5: 0.0, 10: 0.0, 25: 0.0}


def test_ranked_lists_score_like_the_offline_harness(conv: offline.Conversation) -> None:
    # Given fixed scores over the turns for each question
    rng = np.random.default_rng(7)
    scores = [rng.random(len(conv.docs)) for _ in conv.questions]
    prep = offline.prepare([conv], [])

    # When the offline harness evaluates them, and the API path scores the same ranking as keys
    expected = offline.evaluate(prep, lambda ci, qi: scores[qi], ks=(1, 2, 5))
    km = KeyMap.of(conv)
    ranked = [[km.ranked(km.keys[i] for i in np.argsort(-s, kind="stable"))] for s in scores]
    got = mean_recall(
        (recall_at_k(ranked[qi][0], q.evidence, ks=(1, 2, 5)) for qi, q in enumerate(conv.questions)),
        ks=(1, 2, 5),
    )

    # Then both agree
    assert got == pytest.approx(expected)


def test_score_ranked_gives_overall_and_per_category(conv: offline.Conversation) -> None:
    # question 1 (cat 1): evidence first; question 2 (cat 4): one of two evidence turns at rank 6;
    # question 3 (cat 2): evidence never returned
    ranked = [[[0, 1], [5, 5, 5, 5, 5, 3], [0, 1, 2]]]
    out = score_ranked([conv], ranked)
    assert out["by_category"]["1"] == {5: 1.0, 10: 1.0, 25: 1.0}
    assert out["by_category"]["4"] == {5: 0.0, 10: 0.5, 25: 0.5}
    assert out["by_category"]["2"] == {5: 0.0, 10: 0.0, 25: 0.0}
    assert out["overall"] == pytest.approx({5: 1 / 3, 10: 0.5, 25: 0.5})


def test_table_prints_one_row_per_method() -> None:
    text = table({"API": {5: 0.5, 10: 0.75, 25: 1.0}, "BM25": {5: 0.1, 10: 0.2, 25: 0.3}})
    lines = text.splitlines()
    assert len(lines) == 4
    assert "R@5" in lines[0] and "R@25" in lines[0]
    assert "0.750" in lines[2] and "0.300" in lines[3]


# --- time -------------------------------------------------------------------------------------


def test_turns_are_valid_from_their_sessions_date_and_asked_after_the_last(
    conv: offline.Conversation,
) -> None:
    # Given the tiny conversation, When its turns become POST /memory bodies
    bodies = turn_memories(conv)
    # Then each is valid from its session's date (LoCoMo names no timezone: UTC), and the questions
    # are asked at the last session's date
    assert [b["valid_at"] for b in bodies] == [
        "2023-05-08T13:56:00Z",
        "2023-05-08T13:56:00Z",
        "2023-05-08T13:56:00Z",
        "2023-06-12T10:00:00Z",
        "2023-06-12T10:00:00Z",
        "2023-07-01T09:00:00Z",
    ]
    assert conv.asked_at == datetime(2023, 7, 1, 9, tzinfo=UTC)
    # and without dates (the figures before the Time issue) there is none
    assert all("valid_at" not in b for b in turn_memories(conv, dated=False))


def test_the_offline_harness_scores_per_category_like_the_api_path(conv: offline.Conversation) -> None:
    # Given fixed scores over the turns for each question
    rng = np.random.default_rng(3)
    scores = [rng.random(len(conv.docs)) for _ in conv.questions]
    prep = offline.prepare([conv], [])
    # When scored per category offline, and as ranked lists
    ks = (1, 2, 5)  # six turns: recall@10 would find everything
    found = offline.evaluate_by_category(prep, lambda ci, qi: scores[qi], ks=ks)
    km = KeyMap.of(conv)
    ranked = [km.ranked(km.keys[i] for i in np.argsort(-s, kind="stable")) for s in scores]
    per_q = [(q.category, recall_at_k(ranked[qi], q.evidence, ks=ks)) for qi, q in enumerate(conv.questions)]
    # Then both agree, category by category and overall
    assert set(found) == {"all", "1", "2", "4"}
    assert found["all"] == pytest.approx(mean_recall((r for _, r in per_q), ks=ks))
    for cat in ("1", "2", "4"):
        assert found[cat] == pytest.approx(mean_recall((r for c, r in per_q if str(c) == cat), ks=ks))
    assert len({tuple(r.values()) for r in found.values()}) > 1  # the categories differ here


def test_the_category_table_puts_temporal_beside_the_others() -> None:
    text = category_table(
        {
            "API": {"1": {"R@10": 0.5}, "2": {"R@10": 0.875}, "3": {"R@10": 0.25}, "4": {"R@10": 0.75}},
            "BM25": {"2": {"R@10": 0.125}, "all": {"R@10": 0.1}},
        }
    )
    lines = text.splitlines()
    assert "2 temporal" in lines[0] and "1 multi-hop" in lines[0] and "all" not in lines[0]
    assert lines[2] == "| API | 0.500 | 0.875 | 0.250 | 0.750 |"
    assert lines[3] == "| BM25 | - | 0.125 | - | - |"
