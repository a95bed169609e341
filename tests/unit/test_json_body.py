"""API.md "Input rules (second release)": a body nested deeper than 64 levels, or holding NaN or
Infinity, is 400 invalid_json, found before any recursion (it was a 500: RecursionError)."""

from __future__ import annotations

import time

import pytest

from synapse.core.errors import InvalidJson
from synapse.http import body

# --- JSON depth ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ('"[[[["', 0),
        ("[]", 1),
        ('{"a": 1}', 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('["\\"[[", {"x": "]]}}"}]', 2),  # brackets and escaped quotes inside strings do not count
        ('["\\\\", []]', 2),  # an escaped backslash ends before the quote
        ("[" * 64 + "]" * 64, 64),
    ],
)
def test_json_depth_counts_arrays_and_objects_outside_strings(text: str, depth: int) -> None:
    assert body.json_depth(text) == depth


def test_64_levels_are_read_and_65_are_invalid_json() -> None:
    assert body.parse_json(("[" * 64 + "]" * 64).encode()) is not None
    assert body.parse_json(('{"a":' * 63 + "[1]" + "}" * 63).encode())["a"]
    for deep in ("[" * 65 + "]" * 65, '{"a":' * 65 + "1" + "}" * 65):
        with pytest.raises(InvalidJson, match="deeper than 64 levels"):
            body.parse_json(deep.encode())


def test_a_body_nested_100000_levels_is_invalid_json_quickly_not_a_recursion_error() -> None:
    # Given bodies at the 256 KiB limit that json.loads could only read by recursing 100,000 times
    for text in ("[" * 120_000 + "]" * 120_000, '{"a":' * 50_000 + "1" + "}" * 50_000, "[" * 200_000):
        started = time.perf_counter()
        # Then the answer is invalid_json, and the check is a linear scan (well under a second)
        with pytest.raises(InvalidJson):
            body.parse_json(text.encode())
        assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_not_json(literal: str) -> None:
    with pytest.raises(InvalidJson, match=f"{literal} is not a JSON number"):
        body.parse_json(f'{{"confidence": {literal}}}'.encode())


def test_a_number_too_large_for_a_float_is_json_and_left_to_the_models() -> None:
    # 1e999 is valid JSON syntax; it reads as infinity and the model refuses it (below)
    assert body.parse_json(b'{"confidence": 1e999}') == {"confidence": float("inf")}


def test_utf16_and_broken_utf8_are_invalid_json() -> None:
    for raw in ('{"a": 1}'.encode("utf-16"), b'{"a": "\xff"}'):
        with pytest.raises(InvalidJson):
            body.parse_json(raw)
