"""bench.locomo.cv: the leave-one-conversation-out machinery on tiny synthetic data.

The properties that make the estimate honest: a fold's choice depends on the training
conversations only (changing the held-out conversation's labels cannot change it), the held-out
score is the choice's score on the held-out conversation, and the grid starts with the service's
defaults (so ties keep today's behaviour).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.locomo import cv, offline
from bench.locomo.api import KeyMap
from synapse.search import fusion, tokenizer
from synapse.search.bm25 import BM25
from synapse.search.fusion import DEFAULTS, RankingParams

K10 = offline.KS.index(10)


def rows(*r10: float) -> np.ndarray:
    """Per-question recall rows with the given recall@10 (and the same value at every k)."""
    return np.repeat(np.array(r10, dtype=np.float64)[:, None], len(offline.KS), axis=1)


# results[choice][conversation]: choice 1 is great on conversation 0 only, choice 2 good everywhere
# else, choice 0 (the defaults) middling everywhere
RESULTS = [
    [rows(0.5, 0.5), rows(0.5), rows(0.5, 0.5, 0.5)],
    [rows(1.0, 1.0), rows(0.0), rows(0.0, 0.0, 0.0)],
    [rows(0.0, 0.0), rows(0.9), rows(0.8, 0.8, 0.8)],
]


def test_each_fold_picks_on_the_other_conversations_and_scores_the_held_out_one() -> None:
    res = cv.leave_one_out(RESULTS)
    assert [f.held_out for f in res.folds] == [0, 1, 2]
    # without conversation 0, choice 2 wins (0.9 and 0.8 against 0.5 and 0.0)
    assert res.folds[0].choice == 2
    assert res.folds[0].test[K10] == pytest.approx(0.0)  # ... and is poor on conversation 0
    # without conversation 1: choice 1 has 1.0,1.0,0,0,0 = 0.4; choice 2 0,0,.8,.8,.8 = 0.48; 0 has 0.5
    assert res.folds[1].choice == 0
    assert res.folds[1].test[K10] == pytest.approx(0.5)
    assert res.folds[2].choice == 1  # (1+1+0)/3 = 0.667 beats (0+0+0.9)/3 and 0.5
    assert res.folds[2].test[K10] == pytest.approx(0.0)
    assert res.held_out[K10] == pytest.approx((0.0 + 0.5 + 0.0) / 3)
    assert res.pooled[K10] == pytest.approx((0 * 2 + 0.5 * 1 + 0 * 3) / 6)
    # in-sample: the defaults over all questions, and the single best choice (optimistic)
    assert res.in_sample[K10] == pytest.approx(0.5)
    assert res.best_in_sample_choice == 2
    assert res.best_in_sample[K10] == pytest.approx(0.9 * 1 / 6 + 0.8 * 3 / 6)


@pytest.mark.parametrize("held_out", [0, 1, 2])
def test_a_fold_never_sees_its_own_conversations_labels(held_out: int) -> None:
    """Whatever the held-out conversation's recall under any choice, the fold picks the same."""
    before = cv.leave_one_out(RESULTS).folds[held_out].choice
    rng = np.random.default_rng(held_out)
    for _ in range(20):
        poisoned = [list(per_conv) for per_conv in RESULTS]
        for per_conv in poisoned:
            per_conv[held_out] = rng.random(per_conv[held_out].shape)
        fold = cv.leave_one_out(poisoned).folds[held_out]
        assert fold.choice == before
        assert np.allclose(fold.test, poisoned[fold.choice][held_out].mean(axis=0))


def test_choose_breaks_ties_towards_the_first_choice_and_weighs_questions() -> None:
    assert cv.choose([[rows(0.5)], [rows(0.5)]]) == 0
    # conversation sizes matter: 3 questions at 0.6 outweigh 1 question at 1.0
    assert cv.choose([[rows(1.0), rows(0.4, 0.4, 0.4)], [rows(0.0), rows(0.6, 0.6, 0.6)]]) == 0
    assert cv.choose([[rows(0.0), rows(0.4, 0.4, 0.4)], [rows(0.2), rows(0.6, 0.6, 0.6)]]) == 1


def test_grids_start_with_the_service_defaults_and_hold_no_duplicates() -> None:
    for grid in (cv.hybrid_grid(), cv.hybrid_bm25_grid(), cv.bm25_grid()):
        assert grid[0] == DEFAULTS
        assert len(set(grid)) == len(grid)
    assert any(p.feedback_docs == 0 for p in cv.hybrid_grid())  # "no feedback" is a choice too


def test_defaults_are_the_values_the_readme_reports() -> None:
    """The service's values: fusion and feedback as before, BM25 k1 0.9 / b 0.5 (README)."""
    assert RankingParams() == DEFAULTS
    assert (DEFAULTS.method, DEFAULTS.dense_weight, DEFAULTS.rrf_k) == ("minmax", 0.5, 60.0)
    assert (DEFAULTS.feedback_docs, DEFAULTS.feedback_terms, DEFAULTS.feedback_weight) == (3, 20, 0.35)
    assert (DEFAULTS.bm25_k1, DEFAULTS.bm25_b) == (0.9, 0.5)
    assert (fusion.DEFAULT_DENSE_WEIGHT, fusion.FEEDBACK_DOCS) == (0.5, 3)  # the old names follow
    nudges = (DEFAULTS.priority_nudge, DEFAULTS.recency_nudge, DEFAULTS.recency_half_life_days)
    assert nudges == (0.02, 0.02, 30.0)


TINY = {
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice! I started pottery classes."},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "Miso loves the window."},
        {"speaker": "Bo", "dia_id": "D1:4", "text": "My pottery bowl cracked in the kiln."},
        {"speaker": "Ann", "dia_id": "D1:5", "text": "I moved to Lisbon last week."},
    ],
    "qa": [
        {"question": "What is Ann's cat called?", "evidence": ["D1:1"], "category": 1},
        {"question": "What does Bo make in pottery?", "evidence": ["D1:2", "D1:4"], "category": 4},
        {"question": "Where did Ann move?", "evidence": ["D1:5"], "category": 2},
    ],
}


@pytest.fixture
def views(tmp_path: Path) -> list[cv.ServiceView]:
    out = []
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(TINY))
    for conv in offline.load(tmp_path):
        view = cv.service_view(conv, None, KeyMap.of(conv).keys)
        rng = np.random.default_rng(len(out))
        view.dense = rng.uniform(-1, 1, (view.n_questions, len(view.tokens))).astype(np.float32)
        out.append(view)
    return out


def test_service_view_tokens_are_what_the_service_indexes(views: list[cv.ServiceView]) -> None:
    conv_doc = "[1:56 pm on 8 May, 2023] Ann: I adopted a cat named Miso."
    assert views[0].tokens[0] == tokenizer.tokenize(tokenizer.search_text(conv_doc, "d1_1", []))
    # content "[date] speaker: text" and the key's words "d1 1", as corpus.build tokenizes them
    assert views[0].tokens[0][-2:] == ["d1", "1"]
    assert "miso" in views[0].tokens[0]


def test_hybrid_scorer_is_the_services_relevance_then_boost(views: list[cv.ServiceView]) -> None:
    v = views[0]
    bm25 = BM25(v.tokens)
    for qi in range(v.n_questions):
        want = fusion.relevance(bm25, v.tokens, v.query_tokens[qi], v.dense[qi])
        n = len(v.tokens)
        want = fusion.boost(want, np.ones(n, np.int8), np.zeros(n, np.float32))
        assert np.array_equal(cv.hybrid_scorer(v, bm25, qi, DEFAULTS), want)


def test_estimate_reports_every_method_and_fold(
    views: list[cv.ServiceView], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cv, "hybrid_grid", lambda: [DEFAULTS, RankingParams(feedback_docs=0)])
    report = cv.estimate(views, log=lambda _msg: None)
    assert set(report["methods"]) == {"hybrid", "hybrid, k1/b only", "bm25", "dense"}
    for m in report["methods"].values():
        assert [f["held_out"] for f in m["folds"]] == ["a", "b"]
        assert set(m["held_out"]) == {"R@5", "R@10", "R@25"}
    assert report["methods"]["dense"]["held_out"] == report["methods"]["dense"]["in_sample_defaults"]
    # and per question category (2 is temporal): the categories' figures weighted by their questions
    # are the overall figure
    for m in report["methods"].values():
        cats = m["by_category"]["in_sample_defaults"]
        assert set(cats) == {"1", "2", "4"} and set(m["by_category"]["held_out_pooled"]) == {"1", "2", "4"}
        weights = {"1": 1, "2": 1, "4": 1}  # one question of each category per conversation
        pooled = sum(cats[c]["R@10"] * w for c, w in weights.items()) / 3
        assert pooled == pytest.approx(m["in_sample_defaults"]["R@10"], abs=1e-3)


def test_folds_pick_only_among_allowed_choices() -> None:
    """The Thai constraint: a choice that is not allowed is never picked, even where it is best."""
    res = cv.leave_one_out(RESULTS, allowed=[True, False, True])
    assert all(f.choice != 1 for f in res.folds)
    assert res.folds[2].choice == 0  # choice 1 would have won this fold
    assert res.best_in_sample_choice == 2
    assert cv.leave_one_out(RESULTS, allowed=[True, False, False]).best_in_sample_choice == 0
