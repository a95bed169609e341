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
- a Query gathers the whole table, sorts the whole partition, then walks it comparing every sort key:
  the session's last messages (`begins_with(sk, "msg:s1:")`, newest first, Limit 5) cost as much as
  reading the 10k memories that sort after them.

`install()` replaces the serializer for the `dynamodb` service (moto's own registry for service
specific serializers) with one that short-cuts AttributeValue, gives `DynamoType`'s comparisons a
direct path for two S or two B values, `Item.project` one for projections of top-level
attributes (nested paths and list indexes go through moto's), and a table Query whose sort-key
condition is `begins_with` or `BETWEEN` on strings only the partition's items in that range to sort
and walk (moto's own query then runs on them). Everything else is moto's code.
tests/integration/test_local_moto_speed.py checks both against moto's stock code. Only the local run
installs this; the tests' moto (mock_aws) stays stock.
"""

from __future__ import annotations

import base64
import copy
import operator
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from moto.core import serialize
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table

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


_stock_transact = DynamoDBBackend.transact_write_items
_stock_query = Table.query
_stock_all_items = Table.all_items
# the items one query of one table may look at (set by `query`, read by `all_items`)
_narrowed: ContextVar[tuple[Table, list[Item]] | None] = ContextVar("narrowed", default=None)


def _in_range(self: Table, hash_key: Any, comparison: str, bounds: list[DynamoType]) -> list[Item] | None:
    """The partition's items whose (string) sort key meets a begins_with / BETWEEN condition, or None
    when the query is not one of those (moto's stock path then looks at the whole table)."""
    if hash_key is None or not self.range_key_attr or not bounds or any(b.type != "S" for b in bounds):
        return None
    part = self.items.get(hash_key)
    if part is None:
        return []
    if comparison == "BEGINS_WITH":
        prefix = bounds[0].value
        return [item for key, item in part.items() if key.type == "S" and key.value.startswith(prefix)]
    if comparison == "BETWEEN" and len(bounds) == 2:
        low, high = bounds[0].value, bounds[1].value
        return [item for key, item in part.items() if key.type == "S" and low <= key.value <= high]
    return None


def query(
    self: Table,
    hash_key: Any,
    range_comparison: str | None,
    range_objs: list[DynamoType],
    *args: Any,
    **kwargs: Any,
) -> Any:
    """`Table.query`, run on the items in the sort-key range only (same order, pages and answers)."""
    # (limit, exclusive_start_key, scan_index_forward, projection_expressions, index_name, ...)
    index_name = kwargs.get("index_name", args[4] if len(args) > 4 else None)
    narrowed = None
    if index_name is None and range_comparison:
        narrowed = _in_range(self, hash_key, range_comparison, range_objs)
    if narrowed is None:
        return _stock_query(self, hash_key, range_comparison, range_objs, *args, **kwargs)
    token = _narrowed.set((self, narrowed))
    try:
        return _stock_query(self, hash_key, range_comparison, range_objs, *args, **kwargs)
    finally:
        _narrowed.reset(token)


def all_items(self: Table) -> list[Item]:
    narrowed = _narrowed.get()
    if narrowed is not None and narrowed[0] is self:
        return narrowed[1]
    return _stock_all_items(self)


query._synapse_stock = _stock_query  # type: ignore[attr-defined]


class _NoTableCopy:
    """`copy` as moto's transact_write_items sees it while `transact_write_items` below runs: a Table
    is not deep-copied (the backup of every table a transaction names, once per action: O(table) per
    write); anything else is copied as usual."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: Any = None) -> Any:
        return value if isinstance(value, Table) else copy.deepcopy(value, memo)


def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto's TransactWriteItems with a backup of the items the transaction names only (not of whole
    tables): on failure they are put back as they were, as moto's own rollback would leave them."""
    from moto.dynamodb import models as dynamodb_models

    saved: list[tuple[Table, Any, Any, Item | None]] = []
    for entry in transact_items:
        _, op = next(iter(entry.items()))
        table = self.tables.get(op.get("TableName"))
        if table is None or not table.range_key_attr:
            continue
        key = op.get("Key") or {k: v for k, v in (op.get("Item") or {}).items()}
        if table.hash_key_attr not in key or table.range_key_attr not in key:
            continue
        hash_key, range_key = DynamoType(key[table.hash_key_attr]), DynamoType(key[table.range_key_attr])
        current = table.items.get(hash_key, {}).get(range_key)
        saved.append((table, hash_key, range_key, copy.deepcopy(current)))
    stock_copy = dynamodb_models.copy
    dynamodb_models.copy = _NoTableCopy()  # type: ignore[assignment]
    try:
        _stock_transact(self, transact_items)
    except Exception:
        for table, hash_key, range_key, item in reversed(saved):
            part = table.items.setdefault(hash_key, {})
            if item is None:
                part.pop(range_key, None)
            else:
                part[range_key] = item
        raise
    finally:
        dynamodb_models.copy = stock_copy


def install() -> None:
    """Idempotent. Call before moto's server answers its first request."""
    serialize.SERVICE_SPECIFIC_SERIALIZERS.setdefault("dynamodb", {})["json"] = DynamoJSONSerializer
    for name, op in _COMPARISONS.items():
        if not hasattr(getattr(DynamoType, name), "_synapse_stock"):
            setattr(DynamoType, name, _direct(name, op))
    Item.project = project  # type: ignore[method-assign]
    Table.query = query  # type: ignore[method-assign]
    Table.all_items = all_items  # type: ignore[method-assign]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def uninstall() -> None:
    """Back to moto's stock code (tests)."""
    serialize.SERVICE_SPECIFIC_SERIALIZERS.get("dynamodb", {}).pop("json", None)
    for name in _COMPARISONS:
        stock = getattr(getattr(DynamoType, name), "_synapse_stock", None)
        if stock is not None:
            setattr(DynamoType, name, stock)
    Item.project = _stock_project  # type: ignore[method-assign]
    Table.query = _stock_query  # type: ignore[method-assign]
    Table.all_items = _stock_all_items  # type: ignore[method-assign]
    DynamoDBBackend.transact_write_items = _stock_transact  # type: ignore[method-assign]
