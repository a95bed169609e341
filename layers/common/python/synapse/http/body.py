"""A request's body as the contract reads it: at most 256 KiB, UTF-8 JSON at most 64 levels deep,
numbers that JSON has (no NaN or Infinity), and an object. Parsed once: the resolver reuses the value
(`json_body`)."""

from __future__ import annotations

import base64
import json
import re
from contextvars import ContextVar
from itertools import accumulate
from typing import Any

from synapse.core.errors import InvalidJson, PayloadTooLarge, ValidationFailed

MAX_BODY_BYTES = 256 * 1024
MAX_JSON_DEPTH = 64

# the body as `accept` parsed it, so that the resolver does not parse it again (`json_body`)
_parsed: ContextVar[tuple[str, Any] | None] = ContextVar("parsed_body", default=None)


def raw(event: dict[str, Any]) -> bytes:
    """The body's bytes; PayloadTooLarge past 256 KiB. Forgets the body of a previous request."""
    _parsed.set(None)
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            data = base64.b64decode(body)
        except ValueError as exc:
            raise InvalidJson("The body is not valid base64-encoded JSON.") from exc
    else:
        data = body.encode()
    if len(data) > MAX_BODY_BYTES:
        raise PayloadTooLarge("The body is larger than 256 KiB.")
    return data


def accept(event: dict[str, Any], data: bytes) -> None:
    """Parse a body that is not empty (InvalidJson, or ValidationFailed for JSON that is not an
    object), and hand it to the resolver as JSON text, whatever its label said."""
    if not data:
        return
    value = parse_json(data)
    if not isinstance(value, dict):
        # every body of the contract is an object; Powertools would validate an array against the
        # body's model by its first element and drop the rest without a word
        raise ValidationFailed.at(["body"], f"must be a JSON object, not {_kind(value)}")
    text = data.decode("utf-8")
    # JSON is read whatever the label (curl -d sends form-urlencoded)
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    headers["content-type"] = "application/json"
    event["headers"] = headers
    event["body"], event["isBase64Encoded"] = text, False
    _parsed.set((text, value))


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"


def json_body(text: str) -> Any:
    """The resolver's JSON deserializer: the value `accept` already parsed from this very body, else
    a parse."""
    parsed = _parsed.get()
    if parsed is not None and (parsed[0] is text or parsed[0] == text):
        return parsed[1]
    return json.loads(text)


# a JSON string (escapes included), matched without backtracking; what is left outside strings is
# structure, numbers and literals
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str) -> int:
    """How deeply arrays and objects nest in a JSON text (`[]` and `{"a": 1}` are 1), by a linear scan:
    no recursion, so a body nested 100,000 levels deep costs what its length costs.

    Brackets inside strings do not count. On text that is not JSON the figure means little, and
    json.loads refuses that text anyway."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _not_a_json_number(name: str) -> Any:
    raise InvalidJson(f"The body is not valid JSON: {name} is not a JSON number.")


def _integer(digits: str) -> int | float:
    """A JSON integer. Past Python's limit on the digits int() reads (4,300 by default: converting
    is quadratic in them) it is read as a float, which is infinite there, like `1e999`: JSON allows
    the number, and a field with bounds refuses it (422) at no more cost than reading it."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


def parse_json(data: bytes) -> Any:
    """The body as JSON, as the contract reads it, or InvalidJson: UTF-8 only, at most 64 levels deep,
    and no NaN or Infinity (Python's json module reads them; JSON has no such numbers)."""
    try:
        # decode first: json.loads(bytes) would also accept UTF-16 and UTF-32, which the
        # resolver then cannot read; the contract's JSON is UTF-8
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJson("The body is not valid JSON.") from exc
    too_deep = InvalidJson(f"The body nests JSON arrays and objects deeper than {MAX_JSON_DEPTH} levels.")
    if json_depth(text) > MAX_JSON_DEPTH:
        raise too_deep
    try:
        return json.loads(text, parse_constant=_not_a_json_number, parse_int=_integer)
    except RecursionError as exc:  # (the scan above makes this unreachable; kept as a guard)
        raise too_deep from exc
    except ValueError as exc:
        raise InvalidJson("The body is not valid JSON.") from exc
