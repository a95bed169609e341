"""API.md "Input rules (second release)", at the level of the models: tag normalisation, NUL in
text, JSON numbers that are numbers. (The JSON pre-check: test_json_body.py; through the routes:
tests/integration/test_input_rules.py.)"""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from synapse.core.models.base import check_tag, normalize_tag, normalize_tags
from synapse.core.models.chat import ChatMessage, IngestIn, RecallIn, SummarizeIn
from synapse.core.models.memory import MemoryIn, MemoryPatch

MEMORY = {"category": "fact", "key": "k", "content": "fine"}


def problems(model: Any, data: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """The (loc, msg) of each error pydantic finds, or [] when the data is valid."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [(tuple(e["loc"]), e["msg"]) for e in exc.errors()]
    return []


# --- tags ---------------------------------------------------------------------------------------

CAFE_NFC = unicodedata.normalize("NFC", "café")
CAFE_NFD = unicodedata.normalize("NFD", "café")


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        (" Docker ", "docker"),
        ("ｄｏｃｋｅｒ", "docker"),  # fullwidth (NFKC)
        ("do\u200bcker", "docker"),  # zero-width space (Cf)
        ("\ufeffdocker\u200d", "docker"),  # BOM, zero-width joiner (Cf)
        ("doc\u0000ker\u0007", "docker"),  # NUL, BEL (Cc)
        ("soft\u00adhyphen", "softhyphen"),  # soft hyphen (Cf)
        (CAFE_NFD, CAFE_NFC),
        ("CAFÉ", CAFE_NFC),
        ("Straße", "strasse"),  # case folding, not lower-casing
        ("\u3000ＤＯＣＫＥＲ\u3000", "docker"),  # an ideographic space is a space after NFKC
        ("ﬁle", "file"),  # a ligature
        ("อาหาร", "อาหาร"),  # Thai is kept as it is
        ("k8s swarm", "k8s swarm"),  # inner spaces are kept
    ],
)
def test_a_tag_is_normalised(sent: str, stored: str) -> None:
    assert normalize_tag(sent) == stored
    assert check_tag(sent) == stored


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12))
def test_normalisation_is_stable_and_leaves_no_invisible_characters(text: str) -> None:
    once = normalize_tag(text)
    # a stored tag looked up again finds itself
    assert normalize_tag(once) == once
    # canonically equivalent texts (NFC, NFD) are one tag
    assert normalize_tag(unicodedata.normalize("NFD", text)) == once
    assert not any(unicodedata.category(ch) in ("Cc", "Cf") for ch in once)
    assert once == once.strip()


@pytest.mark.parametrize("blank", ["", "   ", "\u200b", "\u0000", "\ufeff \u200c", "\u3000"])
def test_a_tag_empty_after_normalisation_is_refused_on_writes_and_reads(blank: str) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        check_tag(blank)
    for model, data in (
        (MemoryIn, {**MEMORY, "tags": ["ok", blank]}),
        (MemoryPatch, {"tags": [blank]}),
        (RecallIn, {"query": "x", "tags": [blank]}),
    ):
        found = problems(model, data)
        assert found and found[0][0][0] == "tags", (model, found)


def test_tags_are_one_tag_each_and_keep_their_first_order() -> None:
    body = MemoryIn.model_validate(
        {**MEMORY, "tags": ["ｄｏｃｋｅｒ", CAFE_NFD, "docker", "do\u200bcker", CAFE_NFC, "DOCKER"]}
    )
    assert body.tags == ["docker", CAFE_NFC]
    assert RecallIn.model_validate({"query": "x", "tags": ["Ｄｏｃｋｅｒ"]}).tags == ["docker"]


def test_tag_limits_count_the_list_as_sent_and_measure_each_tag_after_normalisation() -> None:
    # 20 tags are fine, 21 are not, even when they are one tag after merging (the list as sent)
    assert MemoryIn.model_validate({**MEMORY, "tags": [f"t{i}" for i in range(20)]})
    assert problems(MemoryIn, {**MEMORY, "tags": ["t"] * 21})[0][0] == ("tags",)
    # 50 characters once normalised: 50 fullwidth letters, or 50 letters with invisible ones between
    assert MemoryIn.model_validate({**MEMORY, "tags": ["ｘ" * 50, "\u200b".join("y" * 50)]})
    assert problems(MemoryIn, {**MEMORY, "tags": ["x" * 51]})[0] == (
        ("tags", 0),
        "Value error, a tag is at most 50 characters",
    )
    # a ligature that grows past 50 when normalised is measured as stored
    assert problems(MemoryIn, {**MEMORY, "tags": ["x" * 49 + "ﬃ"]})


def test_a_lone_surrogate_in_a_tag_is_refused_not_stored() -> None:
    assert problems(MemoryIn, {**MEMORY, "tags": ["\ud800docker"]})[0][0] == ("tags", 0)
    # (the service's own tags, e.g. extracted ones, simply lose it)
    assert normalize_tags(["\ud800docker"]) == ["docker"]


def test_the_service_own_tags_still_drop_empties_silently() -> None:
    # ingest normalises extracted tags with normalize_tags: the extractor is not the client
    assert normalize_tags(["Docker", "", "\u200b", "ｄｏｃｋｅｒ", " k8s "]) == ["docker", "k8s"]


# --- NUL in text --------------------------------------------------------------------------------

NUL_TEXT = "before\u0000after"


@pytest.mark.parametrize(
    ("model", "data", "loc"),
    [
        (MemoryIn, {**MEMORY, "content": NUL_TEXT}, ("content",)),
        (MemoryPatch, {"content": NUL_TEXT}, ("content",)),
        (RecallIn, {"query": NUL_TEXT}, ("query",)),
        (
            IngestIn,
            {"sessionId": "s", "messages": [{"role": "user", "content": NUL_TEXT}]},
            ("messages", 0, "content"),
        ),
        (
            SummarizeIn,
            {"sessionId": "s", "messages": [{"role": "user", "content": NUL_TEXT}]},
            ("messages", 0, "content"),
        ),
    ],
)
def test_content_and_queries_with_nul_are_refused(
    model: Any, data: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    found = problems(model, data)
    assert found and found[0][0] == loc, found
    assert "NUL" in found[0][1]


def test_other_control_characters_and_zero_width_ones_stay_in_content() -> None:
    text = "tab\tnew\nline zero\u200bwidth bell\u0007"
    assert MemoryIn.model_validate({**MEMORY, "content": text}).content == text
    assert ChatMessage.model_validate({"role": "user", "content": text}).content == text


# --- JSON numbers are numbers -------------------------------------------------------------------


@pytest.mark.parametrize("sent", ["0.5", True, False, "true", [0.5], {"v": 0.5}])
def test_confidence_must_be_a_json_number(sent: Any) -> None:
    for model, data in ((MemoryIn, {**MEMORY, "confidence": sent}), (MemoryPatch, {"confidence": sent})):
        found = problems(model, data)
        assert found and found[0][0] == ("confidence",), (sent, found)


@pytest.mark.parametrize("sent", [float("inf"), float("-inf"), float("nan"), 1.5, -0.1, 1e308])
def test_confidence_must_be_finite_and_between_0_and_1(sent: Any) -> None:
    # (1e999 in a body reads as infinity; NaN is not JSON at all, but a Python caller could send it)
    found = problems(MemoryIn, {**MEMORY, "confidence": sent})
    assert found == [(("confidence",), "Value error, must be a finite number between 0 and 1")], found
    # an integer too large for a float is refused too
    assert problems(MemoryIn, {**MEMORY, "confidence": 10**400})[0][0] == ("confidence",)


def test_confidence_takes_integers_and_floats() -> None:
    for sent, kept in ((0, 0.0), (1, 1.0), (0.25, 0.25), (None, None)):
        assert MemoryIn.model_validate({**MEMORY, "confidence": sent}).confidence == kept


@pytest.mark.parametrize("sent", ["5", True, 5.5, "five"])
def test_limit_in_a_body_must_be_a_json_integer(sent: Any) -> None:
    found = problems(RecallIn, {"query": "x", "limit": sent})
    assert found and found[0][0] == ("limit",), (sent, found)


def test_limit_in_a_body_takes_integers_including_5_point_0() -> None:
    # (JSON Schema's integer: a number with no fractional part)
    assert RecallIn.model_validate({"query": "x", "limit": 5}).limit == 5
    assert RecallIn.model_validate({"query": "x", "limit": 5.0}).limit == 5


@pytest.mark.parametrize("sent", [1767225600, 1767225600.5, True])
def test_a_timestamp_in_a_body_is_a_string(sent: Any) -> None:
    found = problems(MemoryIn, {**MEMORY, "expires_at": sent})
    assert found and found[0][0] == ("expires_at",), found
    assert MemoryIn.model_validate({**MEMORY, "expires_at": "2026-12-02T10:00:00Z"}).expires_at
