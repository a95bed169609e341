"""A mind's corpus packed into one object, the mind's snapshot (`pack`), and back (`unpack`): what a
container that holds no corpus loads instead of reading every memory (search/cache.py adds the
change log's tail since the snapshot's position). Not pickle: a snapshot is data, never code.

Format 1, little-endian throughout:

    MAGIC (8 bytes) | header length (uint32) | header (JSON, UTF-8) | arrays, each 8-byte aligned

The header names the format, the position (epoch, seq), the vectors' model (`model_key`, None: no
vectors), the number of rows and, per array, its dtype, offset (from the start of the object) and
length. The arrays hold the corpus as it is scored, so that loading is a few C-level calls per column,
never a loop over memories:

- text columns (ids, categories, keys, contents, created, the tags, BM25's vocabulary) as one UTF-8
  string each, its values joined by a separator that none of them holds (named in the header): one
  `decode` and one `split` per column;
- tags and tokens in CSR form (offsets per row into the flat list), each memory's tokens as ids into
  the vocabulary, in order; BM25's postings (term → rows and term frequencies) as stored by term,
  so BM25 is restored without tokenizing or counting anything;
- the numeric columns as they are kept (int8 priority, float64 times, uint8 verified);
  every row field of `store.nuggets.Columns` is in it (tests/unit/test_snapshot_format.py checks);
- the vectors of one model: their rows, scales and int8 matrix, last (a reader without a model, the
  ingest, skips them).

A reader refuses (`BadSnapshot`) an object of another format or magic, a header it cannot read, or
arrays whose offsets, lengths or values do not fit: it then reads the mind whole, as without one.
"""

from __future__ import annotations

import gc
import json
import struct
import time
from collections.abc import Iterator, MutableSequence, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, overload

import numpy as np

from synapse.search.bm25 import BM25
from synapse.search.corpus import Corpus, when_of
from synapse.search.vectors import Vectors
from synapse.store import changelog, nuggets

__all__ = ["FORMAT", "MAGIC", "BadSnapshot", "Header", "header", "pack", "unpack"]

MAGIC = b"SYNSNAP\x00"
FORMAT = 1
_LENGTH = struct.Struct("<I")
_START = len(MAGIC) + _LENGTH.size
_ALIGN = 8
# separators a text column may be joined with: the first that none of its values holds is used
_SEPARATORS = ("\x00", "\x1f", "\x1e", "\x1d", "\x1c", "\x01", "\x02", "\x03")
_TEXT_COLUMNS = ("ids", "categories", "keys", "contents", "created")


class BadSnapshot(ValueError):
    """Not a snapshot this code can load (another format, damaged, another model's vectors)."""


@dataclass(frozen=True)
class Header:
    """What a snapshot says about itself."""

    at: changelog.Version  # the position it was packed at (epoch, seq; no `recent`)
    model_key: str | None  # the model of its vectors (None: none)
    rows: int
    fields: dict[str, Any]  # the header as stored


# --- packing -----------------------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.arrays: dict[str, list[Any]] = {}
        self.size = 0  # bytes of the arrays so far (offsets are fixed up once the header's size is known)

    def array(self, name: str, values: np.ndarray, dtype: str) -> None:
        data = np.ascontiguousarray(values, dtype=np.dtype(dtype)).tobytes()
        self.arrays[name] = [dtype, self.size, len(data)]
        pad = -len(data) % _ALIGN
        self.parts.append(data + b"\x00" * pad)
        self.size += len(data) + pad

    def text(self, name: str, values: list[str]) -> None:
        for sep in _SEPARATORS:
            joined = sep.join(values)
            if joined.count(sep) == max(len(values) - 1, 0):
                self.array(name, np.frombuffer(joined.encode("utf-8"), dtype=np.uint8), "|u1")
                self.arrays[name].append(sep)
                return
        raise ValueError(f"no separator is free in the column {name}")


def pack(corpus: Corpus) -> bytes:
    """The corpus as a snapshot of the position it is at (`corpus.at`)."""
    if corpus.at is None:
        raise ValueError("a corpus read outside the cache has no position to pack")
    cols, n = corpus.columns, len(corpus)
    out = _Writer()
    for name in _TEXT_COLUMNS:
        out.text(name, getattr(cols, name))
    out.text("tags", [t for row in cols.tags for t in row])
    out.array("tag_off", _offsets(len(t) for t in cols.tags), "<i8")
    out.array("verified", np.array(cols.verified, dtype=bool), "|u1")
    out.array("priority", corpus.priority, "|i1")
    out.array("updated", corpus.updated, "<f8")
    out.array("expires", corpus.expires, "<f8")
    out.array("valid", np.array(cols.valid, dtype=np.float64), "<f8")
    # each memory's tokens as ids into one vocabulary, in order; BM25's postings built from them as
    # BM25 builds its own (rows ascending within a term): a snapshot is the same whatever the corpus's
    # history of row-by-row changes
    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(t, len(vocab)) for doc in corpus.tokens for t in doc), dtype=np.int64)
    counts = np.fromiter((len(doc) for doc in corpus.tokens), dtype=np.int64, count=n)
    out.text("vocab", list(vocab))
    out.array("tok_off", np.concatenate(([0], np.cumsum(counts))), "<i8")
    out.array("tok_ids", ids, "<i4")
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    pairs, tf = np.unique(ids * max(n, 1) + rows, return_counts=True)
    terms = pairs // max(n, 1)
    out.array("post_off", np.concatenate(([0], np.cumsum(np.bincount(terms, minlength=len(vocab))))), "<i8")
    out.array("post_rows", pairs % max(n, 1), "<i4")
    out.array("post_tf", tf, "<u2")  # (a memory is at most 8,000 characters)
    vec = corpus.vectors
    dim = int(vec.matrix.shape[1]) if vec.matrix.ndim == 2 else 0
    out.array("vec_rows", vec.rows, "<i4")
    out.array("vec_scales", vec.scales, "<f4")
    out.array("vec_matrix", vec.matrix.reshape(-1), "|i1")
    fields = {
        "format": FORMAT,
        "epoch": corpus.at.epoch,
        "seq": corpus.at.seq,
        "model_key": corpus.model_key,
        "rows": n,
        "dim": dim,
        "written": round(time.time(), 3),
    }
    # offsets count from the object's start, after the header, whose length depends on them: settle
    # the header's size first (a few rounds: the offsets only grow)
    start = 0
    while True:
        fixed = {k: [v[0], v[1] + start, *v[2:]] for k, v in out.arrays.items()}
        head = json.dumps({**fields, "arrays": fixed}, separators=(",", ":")).encode()
        need = _START + len(head) + (-(_START + len(head)) % _ALIGN)
        if need == start:
            break
        start = need
    pad = b"\x00" * (start - _START - len(head))
    return b"".join([MAGIC, _LENGTH.pack(len(head)), head, pad, *out.parts])


def _offsets(lengths: Any) -> np.ndarray:
    counts = np.fromiter(lengths, dtype=np.int64)
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


# --- loading -----------------------------------------------------------------------------------------


def header(data: bytes | memoryview) -> Header:
    """The snapshot's header alone (BadSnapshot if it is not one this code reads)."""
    view = memoryview(data)
    if len(view) < _START or bytes(view[: len(MAGIC)]) != MAGIC:
        raise BadSnapshot("not a snapshot")
    (length,) = _LENGTH.unpack(view[len(MAGIC) : _START])
    if _START + length > len(view):
        raise BadSnapshot("truncated header")
    try:
        fields = json.loads(bytes(view[_START : _START + length]))
        if not isinstance(fields, dict) or fields.get("format") != FORMAT:
            raise BadSnapshot(f"format {fields.get('format') if isinstance(fields, dict) else '?'}")
        at = changelog.Version(epoch=str(fields["epoch"]), seq=int(fields["seq"]))
        model = fields["model_key"]
        rows = int(fields["rows"])
        if not isinstance(fields["arrays"], dict) or rows < 0 or not isinstance(model, str | None):
            raise BadSnapshot("bad header")
    except (ValueError, KeyError, TypeError) as exc:
        raise BadSnapshot(f"unreadable header: {type(exc).__name__}") from exc
    return Header(at=at, model_key=model, rows=rows, fields=fields)


class _Reader:
    def __init__(self, data: bytes | memoryview, fields: dict[str, Any]) -> None:
        self.view = memoryview(data)
        self.arrays: dict[str, list[Any]] = fields["arrays"]

    def array(self, name: str, dtype: str, count: int | None = None) -> np.ndarray:
        spec = self.arrays.get(name)
        if not isinstance(spec, list) or len(spec) < 3 or spec[0] != dtype:
            raise BadSnapshot(f"array {name}")
        offset, length = int(spec[1]), int(spec[2])
        size = np.dtype(dtype).itemsize
        if offset < _START or length < 0 or length % size or offset + length > len(self.view):
            raise BadSnapshot(f"array {name} out of bounds")
        if count is not None and length != count * size:
            raise BadSnapshot(f"array {name}: {length // size} values, not {count}")
        return np.frombuffer(self.view, dtype=np.dtype(dtype), count=length // size, offset=offset)

    def text(self, name: str, count: int) -> list[str]:
        raw = self.array(name, "|u1")
        spec = self.arrays[name]
        sep = spec[3] if len(spec) > 3 else None
        if sep not in _SEPARATORS:
            raise BadSnapshot(f"text {name}: separator")
        if count == 0:
            if len(raw):
                raise BadSnapshot(f"text {name}: values beyond the count")
            return []
        try:
            values = raw.tobytes().decode("utf-8").split(sep)
        except UnicodeDecodeError as exc:
            raise BadSnapshot(f"text {name}: not UTF-8") from exc
        if len(values) != count:
            raise BadSnapshot(f"text {name}: {len(values)} values, not {count}")
        return values


def _offsets_ok(off: np.ndarray, rows: int, total: int, name: str) -> list[int]:
    if len(off) != rows + 1 or off[0] != 0 or off[-1] != total or (np.diff(off) < 0).any():
        raise BadSnapshot(f"offsets {name}")
    return list(off.tolist())


def unpack(data: bytes | memoryview, model_key: str | None) -> Corpus:
    """The corpus a snapshot holds, with the vectors of `model_key` (None: without vectors, the way
    ingest reads a mind). BadSnapshot if it cannot be loaded, or holds another model's vectors."""
    head = header(data)
    fields, n = head.fields, head.rows
    if model_key is not None and head.model_key != model_key:
        raise BadSnapshot(f"vectors of {head.model_key!r}, not {model_key!r}")
    r = _Reader(data, fields)
    with _no_gc():
        try:
            cols = nuggets.Columns(
                ids=r.text("ids", n),
                categories=r.text("categories", n),
                keys=r.text("keys", n),
                contents=r.text("contents", n),
                created=r.text("created", n),
            )
            tag_off = r.array("tag_off", "<i8", n + 1)
            flat = r.text("tags", int(tag_off[-1]) if n else 0)
            bounds = _offsets_ok(tag_off, n, len(flat), "tags")
            cols.tags = [flat[a:b] for a, b in pairwise(bounds)]
            verified = r.array("verified", "|u1", n)
            priority = r.array("priority", "|i1", n).copy()
            updated = r.array("updated", "<f8", n).copy()
            expires = r.array("expires", "<f8", n).copy()
            cols.verified = verified.astype(bool).tolist()
            cols.priority = priority.tolist()
            cols.updated = updated.tolist()
            cols.expires = expires.tolist()
            cols.valid = r.array("valid", "<f8", n).tolist()
            tokens, bm25 = _tokens(r, n)
            vectors = _vectors(r, fields, n, model_key)
        except (ValueError, TypeError, IndexError, OverflowError) as exc:
            if isinstance(exc, BadSnapshot):
                raise
            raise BadSnapshot(f"damaged: {type(exc).__name__}") from exc
    return Corpus(
        version=head.at.token,
        model_key=model_key,
        columns=cols,
        tokens=tokens,
        bm25=bm25,
        vectors=vectors,
        priority=priority,
        updated=updated,
        expires=expires,
        when=when_of(cols),  # (derived from the valid and created columns, as a full read derives it)
        at=head.at,
    )


def _tokens(r: _Reader, n: int) -> tuple[Tokens, BM25]:
    tok_off = r.array("tok_off", "<i8", n + 1)
    total = int(tok_off[-1]) if n else 0
    tok_ids = r.array("tok_ids", "<i4", total)
    post_off = r.array("post_off", "<i8")
    if not len(post_off):
        raise BadSnapshot("postings")
    vocab = r.text("vocab", len(post_off) - 1)
    _offsets_ok(post_off, len(vocab), int(post_off[-1]), "postings")
    post_rows = r.array("post_rows", "<i4", int(post_off[-1]))
    post_tf = r.array("post_tf", "<u2", len(post_rows))
    bounds = _offsets_ok(tok_off, n, total, "tokens")
    if total and (int(tok_ids.min()) < 0 or int(tok_ids.max()) >= len(vocab)):
        raise BadSnapshot("token ids")
    if len(post_rows) and (int(post_rows.min()) < 0 or int(post_rows.max()) >= n):
        raise BadSnapshot("posting rows")
    lengths = np.diff(tok_off).astype(np.float32)
    bm25 = BM25.from_postings(vocab, post_off, post_rows, post_tf, lengths, total)
    return Tokens(vocab, tok_ids, bounds), bm25


class Tokens(MutableSequence[list[str]]):
    """Each memory's tokens as a snapshot stores them (ids into the vocabulary), made a list of words
    when a row is first read. A corpus reads the tokens of a few rows only (pseudo-relevance
    feedback's best hits, the rows a catch-up changes): the other rows are never made."""

    __slots__ = ("_bounds", "_ids", "_rows", "_vocab")

    def __init__(self, vocab: list[str], ids: np.ndarray, bounds: list[int]) -> None:
        self._vocab, self._ids, self._bounds = vocab, ids, bounds
        self._rows: list[int | list[str]] = list(range(len(bounds) - 1))  # int: a stored row

    def __len__(self) -> int:
        return len(self._rows)

    def _row(self, i: int) -> list[str]:
        row = self._rows[i]
        if isinstance(row, int):
            vocab = self._vocab
            lo, hi = self._bounds[row], self._bounds[row + 1]
            row = self._rows[i] = [vocab[t] for t in self._ids[lo:hi].tolist()]
        return row

    @overload
    def __getitem__(self, i: int) -> list[str]: ...
    @overload
    def __getitem__(self, i: slice) -> list[list[str]]: ...
    def __getitem__(self, i: int | slice) -> list[str] | list[list[str]]:
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(len(self)))]
        return self._row(i)

    def __setitem__(self, i: Any, value: Any) -> None:
        self._rows[i] = value

    def __delitem__(self, i: Any) -> None:
        del self._rows[i]

    def insert(self, index: int, value: list[str]) -> None:
        self._rows.insert(index, value)

    def __iter__(self) -> Iterator[list[str]]:
        return (self._row(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


@contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic collector off while a snapshot's lists are made (100k lists of tags would start it
    dozens of times, each pass over everything alive: most of the time they took)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _vectors(r: _Reader, fields: dict[str, Any], n: int, model_key: str | None) -> Vectors:
    if model_key is None:
        return Vectors(np.zeros(0, np.intp), np.zeros((0, 0), np.int8), np.zeros(0, np.float32))
    dim = int(fields["dim"])
    rows = r.array("vec_rows", "<i4")
    scales = r.array("vec_scales", "<f4", len(rows))
    matrix = r.array("vec_matrix", "|i1", len(rows) * dim)
    if len(rows) and (int(rows[0]) < 0 or int(rows[-1]) >= n or (np.diff(rows) <= 0).any()):
        raise BadSnapshot("vector rows")
    # copies: a corpus changes its vectors in place when it catches up
    return Vectors(rows.astype(np.intp), matrix.reshape(len(rows), dim).copy(), scales.copy())
