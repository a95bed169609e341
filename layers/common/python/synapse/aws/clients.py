"""AWS clients from botocore directly: one session per container, the standard retry mode everywhere.

boto3 adds nothing the service code uses (no resources, no S3 transfers), and importing it also imports
s3transfer: a cold-start cost every function would pay for nothing.

DynamoDB items are parsed by `ItemParser`: botocore's JSON parser walks every attribute value through
the ten members of the AttributeValue shape, ~70 ms per 1 MB Query page here, which made parsing the
largest cost of a cold recall (10k memories: 12 pages). An item is already in its final form once the
JSON is loaded, binaries aside, so the parser takes it as it is and base64-decodes the binaries:
~4x faster, the same result (tests/unit/test_aws_parser.py compares it with botocore's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import botocore.session
from botocore.config import Config
from botocore.parsers import JSONParser, ResponseParserFactory

from synapse.core.state import per_container

_AS_IS = frozenset(("S", "N", "BOOL", "NULL", "SS", "NS"))  # strings, booleans and lists of strings


class _NotAnItem(Exception):
    """A value this parser does not know (a new type, a null): botocore's parser takes the item."""


class ItemParser(JSONParser):
    """botocore's JSON-protocol parser, with DynamoDB's items (AttributeMap) taken straight from JSON."""

    _blob_parser: Callable[[str], bytes]  # set by botocore's ResponseParser (base64 by default)

    def _parse_shape(self, shape: Any, node: Any) -> Any:
        if shape.name == "AttributeMap" and type(node) is dict and shape.value.name == "AttributeValue":
            try:
                value = self._value
                return {name: value(v) for name, v in node.items()}
            except (_NotAnItem, TypeError, AttributeError, ValueError):
                pass  # botocore's parser decides, as for any other shape
        return super()._parse_shape(shape, node)  # type: ignore[misc]  # not in botocore-stubs

    def _value(self, node: dict[str, Any]) -> dict[str, Any]:
        if len(node) != 1:
            raise _NotAnItem
        ((kind, value),) = node.items()
        if kind in _AS_IS:
            return node
        if kind == "B":
            return {"B": self._blob_parser(value)}
        if kind == "M":
            return {"M": {k: self._value(v) for k, v in value.items()}}
        if kind == "L":
            return {"L": [self._value(v) for v in value]}
        if kind == "BS":
            return {"BS": [self._blob_parser(v) for v in value]}
        raise _NotAnItem


class _Parsers(ResponseParserFactory):
    _defaults: dict[str, Any]  # botocore's: keyword arguments for every parser

    def create_parser(self, protocol_name: str) -> Any:
        if protocol_name == "json":
            return ItemParser(**self._defaults)
        return super().create_parser(protocol_name)


@per_container
def session() -> botocore.session.Session:
    # region and credentials come from the Lambda environment, as boto3's default session would take them
    sess = botocore.session.get_session()
    sess.register_component("response_parser_factory", _Parsers())
    return sess


_given: dict[str, Any] = {}


def client(service: str, **config: Any) -> Any:
    """A client with standard retries (which absorb throttling) and any other Config options; the
    client a test gave with `use_client`, if any."""
    if service in _given:
        return _given[service]
    return session().create_client(
        service, config=Config(retries={"mode": "standard", "max_attempts": 5}, **config)
    )


def use_client(service: str, given: Any | None) -> None:
    """Tests: make every module's `service` client this one (e.g. with a botocore Stubber), or None
    for real clients again. The modules cache their clients: call `state.reset()` after."""
    if given is None:
        _given.pop(service, None)
    else:
        _given[service] = given
