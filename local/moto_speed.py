"""Two hot spots of moto's DynamoDB made fast for the local run, with the same answers.

A recall with a cold cache reads the user's whole partition. Through moto 5.2 that cost ~6 ms an item
here (a 10k-nugget partition: ~40 s), for two reasons:

- its response serializer walks every attribute value through the generic, shape-driven code (name
  aliases, pickers, paths): ~2/3 of the time. DynamoDB's AttributeValue is already wire-shaped once
  moto has turned it into a dict ({"S": ...}, {"B": bytes}, ...): only binaries need base64.
- every Query page sorts the whole table by (hash key, range key), and each comparison of two
  `DynamoType`s first computes `cast_value` through a chain of type checks. For strings and binaries
  (every key of this service's tables) that value is the raw value itself.
- a ProjectionExpression (recall reads only what scoring needs) turns the whole item into Python
  values and back once per projected attribute, then rebuilds it re-checking its size per attribute.

`install()` replaces the serializer for the `dynamodb` service (moto's own registry for service
specific serializers) with one that short-cuts AttributeValue, gives `DynamoType`'s comparisons a
direct path for two S or two B values, and `Item.project` one for projections of top-level
attributes (nested paths and list indexes go through moto's). Everything else is moto's code.
tests/integration/test_local_moto_speed.py checks both against moto's stock code. Only the local run
installs this; the tests' moto (mock_aws) stays stock.
"""

from __future__ import annotations

import base64
import copy
import operator
from collections.abc import Callable
from typing import Any

from moto.core import serialize
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

_RAW_TYPES = frozenset(("S", "B"))  # cast_value(x) is x itself
_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "__eq__": operator.eq,
    "__ne__": operator.ne,
    "__lt__": operator.lt,
    "__le__": operator.le,
    "__gt__": operator.gt,
    "__ge__": operator.ge,
}


def wire_value(value: dict[str, Any]) -> dict[str, Any]:
    """An AttributeValue as moto holds it after `dynamo_to_dict` → its DynamoDB JSON form."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {kind: _b64(inner)}
    if kind == "BS":
        return {kind: [_b64(b) for b in inner]}
    if kind == "M":
        return {kind: {k: wire_value(v) for k, v in inner.items()}}
    if kind == "L":
        return {kind: [wire_value(v) for v in inner]}
    return value


def _b64(data: bytes | str) -> str:
    # as the stock serializer's `_base64` (after `dynamo_to_dict`, binaries are always bytes)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return base64.b64encode(raw).decode("utf-8")


class DynamoJSONSerializer(serialize.JSONSerializer):
    """moto's JSON serializer, with AttributeValue (items, keys, attributes) written directly."""

    def _serialize(self, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if shape.name == "AttributeValue" and isinstance(value, dict) and len(value) == 1:
            serialized[key or shape.name] = wire_value(value)
            return
        super()._serialize(serialized, value, shape, key)


def _direct(name: str, op: Callable[[Any, Any], bool]) -> Callable[[DynamoType, Any], bool]:
    stock = getattr(DynamoType, name)

    def compare(self: DynamoType, other: Any) -> bool:
        kind = self.type
        if kind in _RAW_TYPES and type(other) is DynamoType and other.type == kind:
            return op(self.value, other.value)
        return bool(stock(self, other))

    compare._synapse_stock = stock  # type: ignore[attr-defined]
    return compare


_stock_project = Item.project


def project(self: Item, projection_expressions: list[list[str]]) -> Item:
    """`Item.project` for top-level attributes: the attributes themselves (copied), in the order asked.

    Numbers and sets come back as stored, as without a projection (moto's round trip through Python
    values rewrites "1e2" as "1E+2" and reorders sets; DynamoDB guarantees neither).
    """
    if not all(len(path) == 1 and "[" not in path[0] for path in projection_expressions):
        return _stock_project(self, projection_expressions)
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)  # a subset of an item already within the limit
    for (name,) in projection_expressions:
        if name in self.attrs:
            dict.__setitem__(attrs, name, copy.deepcopy(self.attrs[name]))
    item: Item = object.__new__(Item)
    item.hash_key, item.range_key, item.attrs = self.hash_key, self.range_key, attrs
    return item


project._synapse_stock = _stock_project  # type: ignore[attr-defined]


def install() -> None:
    """Idempotent. Call before moto's server answers its first request."""
    serialize.SERVICE_SPECIFIC_SERIALIZERS.setdefault("dynamodb", {})["json"] = DynamoJSONSerializer
    for name, op in _COMPARISONS.items():
        if not hasattr(getattr(DynamoType, name), "_synapse_stock"):
            setattr(DynamoType, name, _direct(name, op))
    Item.project = project  # type: ignore[method-assign]


def uninstall() -> None:
    """Back to moto's stock code (tests)."""
    serialize.SERVICE_SPECIFIC_SERIALIZERS.get("dynamodb", {}).pop("json", None)
    for name in _COMPARISONS:
        stock = getattr(getattr(DynamoType, name), "_synapse_stock", None)
        if stock is not None:
            setattr(DynamoType, name, stock)
    Item.project = _stock_project  # type: ignore[method-assign]
