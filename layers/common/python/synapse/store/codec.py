"""Codecs of stored values: DynamoDB attribute values ↔ Python, embeddings ↔ bytes, cursors ↔ text."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from synapse.core.models.base import iso

if TYPE_CHECKING:
    import numpy as np

# --- attribute values -----------------------------------------------------------------------------


def s(value: str) -> dict[str, str]:
    return {"S": value}


def n(value: float | int) -> dict[str, str]:
    return {"N": str(value)}


def attr(value: Any) -> dict[str, Any]:
    """Python → DynamoDB attribute value for the few types items use."""
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int | float):
        return n(value)
    if isinstance(value, datetime):
        return s(iso(value))
    if isinstance(value, str):
        return s(value)
    if isinstance(value, bytes):
        return {"B": value}
    if isinstance(value, Sequence):
        return {"L": [attr(v) for v in value]}
    if isinstance(value, Mapping):
        return {"M": {k: attr(v) for k, v in value.items()}}
    raise TypeError(f"cannot store {type(value).__name__}")


def plain(value: Mapping[str, Any]) -> Any:
    """A DynamoDB attribute value → Python (numbers to float/int, no Decimal leaks)."""
    ((kind, raw),) = value.items()
    if kind in ("S", "BOOL", "B"):
        return raw
    if kind == "N":
        number = Decimal(raw)
        return int(number) if number == number.to_integral_value() and "." not in raw else float(number)
    if kind == "NULL":
        return None
    if kind == "L":
        return [plain(v) for v in raw]
    if kind == "M":
        return {k: plain(v) for k, v in raw.items()}
    if kind == "SS":
        return list(raw)
    if kind == "NS":
        return [plain({"N": v}) for v in raw]
    raise ValueError(f"unsupported attribute type {kind}")


def plain_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: plain(v) for k, v in item.items()}


# --- vectors ---------------------------------------------------------------------------------------
# Stored layout ("i8t"): a 4-byte tag of the model and dimension, a float32 scale (little-endian), then
# one int8 per dimension; value = int8 * scale. Half the bytes of float16 (so half the read units of a
# cold recall), it decodes straight into one matrix, and on unit vectors the cosine ranking is
# unchanged in practice (bench/ measures top-10 agreement). The tag lets recall tell another model's
# vectors apart inside the matrix without reading two more attributes per item in Python.
VECTOR_FORMAT = "i8t"
_HEADER = 8  # tag + scale


@dataclass(frozen=True)
class Vector:
    """An embedding as stored (`VECTOR_FORMAT` bytes), with its model and dimension."""

    data: bytes
    model: str
    dim: int


def vector_tag(model: str, dim: int) -> bytes:
    return hashlib.sha256(f"{model}/{dim}".encode()).digest()[:4]


def make_vector(vec: np.ndarray, model: str) -> Vector:
    """An embedding → its stored form."""
    import numpy as np  # here, not at the top: most functions never touch a vector (cold start)

    v = np.asarray(vec, dtype=np.float32).ravel()
    peak = float(np.abs(v).max()) if v.size else 0.0
    scale = peak / 127.0 if peak > 0 else 1.0
    q = np.clip(np.rint(v / scale), -127, 127).astype(np.int8)
    data = vector_tag(model, v.size) + np.array([scale], dtype="<f4").tobytes() + q.tobytes()
    return Vector(data=data, model=model, dim=int(v.size))


def decode_vector(data: bytes) -> np.ndarray:
    import numpy as np

    scale = float(np.frombuffer(data[4:_HEADER], dtype="<f4")[0])
    out: np.ndarray = np.frombuffer(data[_HEADER:], dtype=np.int8).astype(np.float32) * np.float32(scale)
    return out


def decode_matrix(blobs: Sequence[bytes], model: str, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Many stored vectors → (indices of the blobs of `model`/`dim`, their int8 matrix, their float32
    scales), in one copy and without a Python loop over the vectors. Other models' blobs are left out."""
    import numpy as np

    width = _HEADER + dim
    count = len(blobs)
    lengths = list(map(len, blobs))
    index = np.arange(count, dtype=np.intp)
    if lengths.count(width) != count:  # another dimension (or format) among them: keep this size only
        index = np.flatnonzero(np.array(lengths) == width)
        blobs = [blobs[i] for i in index.tolist()]
    raw = np.array(blobs, dtype=f"S{width}").view(np.uint8).reshape(len(blobs), width)
    tags = raw[:, :4].copy().view("<u4").ravel()
    mine = tags == np.frombuffer(vector_tag(model, dim), dtype="<u4")[0]
    if not mine.all():
        raw, index = raw[mine], index[mine]
    scales = raw[:, 4:_HEADER].copy().view("<f4").ravel()
    return index, raw[:, _HEADER:].view(np.int8), scales


# --- cursors ---------------------------------------------------------------------------------------


class BadCursor(ValueError):
    """A cursor this API did not make (the route says where it came from)."""


def encode_cursor(payload: Mapping[str, Any]) -> str:
    """An opaque cursor: a position as url-safe base64 JSON (every paged route uses this codec)."""
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> dict[str, Any]:
    """The payload of a cursor this API made; BadCursor for anything else."""
    try:
        payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError) as exc:
        raise BadCursor from exc
    if not isinstance(payload, dict):
        raise BadCursor
    return payload
