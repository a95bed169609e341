"""Embedders: Gemini (batched, MRL-truncated, L2-normalised) and the offline local fallback.

`get_embedder(api_key)` picks Gemini when a key is available (the user's own provider key, or the
service's `GEMINI_API_KEY`), else the local multilingual embedder from `synapse.ai.embeddings_local`.

`google.genai` is imported only inside the functions that call Gemini (it costs ~300 ms of cold start).
The genai client is created once per (API key) per container and can be injected by tests.

Query/document marking (see docs/gemini.md): `gemini-embedding-2` takes no `task_type`; the task goes
into the text itself — queries as ``task: search result | query: {text}``, documents as
``title: none | text: {text}``. Older models (`gemini-embedding-001`, ...) get
`task_type=RETRIEVAL_QUERY` / `RETRIEVAL_DOCUMENT` instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np

from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.state import on_reset, per_container

if TYPE_CHECKING:
    from google import genai

__all__ = [
    "DOCUMENT_PREFIX",
    "MAX_BATCH",
    "QUERY_PREFIX",
    "Embedder",
    "GeminiEmbedder",
    "gemini_client",
    "get_embedder",
    "l2_normalize",
    "upstream_guard",
    "uses_prompt_prefixes",
]

QUERY_PREFIX = "task: search result | query: "
DOCUMENT_PREFIX = "title: none | text: "
MAX_BATCH = 100  # requests per batchEmbedContents call (the API's limit)
RETRY_STATUS_CODES = [408, 429, 500, 502, 503, 504]
EMBEDDING_UNAVAILABLE = "The embedding service is unavailable; try again shortly."
# Gemini answered 400/401/403: retrying the same request will not help, the key or request must change
GEMINI_REFUSED = (
    "Gemini refused the request; if a Gemini key is stored with PUT /providers/gemini, check it "
    "(retrying alone will not help)."
)
REFUSED_RETRY_AFTER = 60


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. Vectors of different `model` values are never compared."""

    model: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32, each row L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """(dim,) float32, L2-normalised."""
        ...


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    normalized: np.ndarray = (m / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return normalized


def uses_prompt_prefixes(model: str) -> bool:
    """True for models that take the task as a text prefix instead of `task_type` (gemini-embedding-2)."""
    model_id = model.rsplit("/", 1)[-1].lower()
    return model_id.startswith("gemini-embedding-2")


# --- the genai client, once per key per container ---------------------------------------------------


_clients: dict[tuple[Any, ...], genai.Client] = {}
_clients_lock = threading.Lock()


def gemini_client(api_key: str) -> genai.Client:
    """The google-genai client for `api_key`, created on first use and kept for the container.

    Base URL, timeout and attempts come from settings; retries back off exponentially on 408/429/5xx,
    timeouts and connection errors, from GEMINI_RETRY_INITIAL_DELAY (0.5 s) up to
    GEMINI_RETRY_MAX_DELAY (2 s) with a little jitter: with the default 3 attempts (GEMINI_ATTEMPTS) a
    dead upstream costs about 1.5 s of waiting plus the attempts themselves (each at most
    GEMINI_TIMEOUT_MS, default 6 s).
    """
    s = settings()
    initial, maximum = s.gemini_retry_initial_delay, s.gemini_retry_max_delay
    ident = (api_key, s.gemini_base_url, s.gemini_timeout_ms, s.gemini_attempts, initial, maximum)
    with _clients_lock:
        client = _clients.get(ident)
        if client is None:
            from google import genai
            from google.genai import types

            client = genai.Client(
                api_key=api_key,
                http_options=types.HttpOptions(
                    base_url=s.gemini_base_url,
                    timeout=s.gemini_timeout_ms,
                    retry_options=types.HttpRetryOptions(
                        attempts=s.gemini_attempts,
                        initial_delay=initial,
                        max_delay=maximum,
                        exp_base=2.0,
                        jitter=min(initial, 0.25),
                        http_status_codes=RETRY_STATUS_CODES,
                    ),
                ),
            )
            _clients[ident] = client
        return client


@on_reset
def _forget_clients() -> None:
    with _clients_lock:
        _clients.clear()


# --- errors --------------------------------------------------------------------------------------------


def _transport_errors() -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        err = getattr(module, "HTTPError", None)
        if isinstance(err, type) and issubclass(err, BaseException):
            found.append(err)
    return (*found, TimeoutError, ConnectionError)


def _retry_after(exc: BaseException, default: int = 5) -> int:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    raw = None
    if headers is not None:
        try:
            raw = headers.get("retry-after") or headers.get("Retry-After")
        except AttributeError:
            raw = None
    try:
        value = int(float(raw)) if raw is not None else default
    except (TypeError, ValueError):
        value = default
    return max(1, min(value, 300))


@contextmanager
def upstream_guard(message: str = EMBEDDING_UNAVAILABLE) -> Iterator[None]:
    """Turn google-genai API errors, timeouts and connection errors into `UpstreamUnavailable`.

    Raised after the client's own retries are spent; chained (`from`) to the original error.
    """
    from google.genai import errors

    transport = _transport_errors()
    try:
        yield
    except errors.ClientError as exc:
        if exc.code in (400, 401, 403):
            raise UpstreamUnavailable(GEMINI_REFUSED, retry_after=REFUSED_RETRY_AFTER) from exc
        raise UpstreamUnavailable(message, retry_after=_retry_after(exc)) from exc  # 429 and the like
    except errors.APIError as exc:
        raise UpstreamUnavailable(message, retry_after=_retry_after(exc)) from exc
    except errors.UnknownApiResponseError as exc:
        raise UpstreamUnavailable(message, retry_after=5) from exc
    except transport as exc:
        raise UpstreamUnavailable(message, retry_after=5) from exc


# --- Gemini ------------------------------------------------------------------------------------------


class GeminiCaller:
    """Something that calls Gemini with one key (or a client a test gives), the client made lazily."""

    def __init__(self, api_key: str | None, client: genai.Client | None) -> None:
        self._api_key = api_key
        self._client = client
        if client is None and not api_key:
            raise ValueError(f"{type(self).__name__} needs an api_key or a client")

    @property
    def client(self) -> genai.Client:
        if self._client is None:
            assert self._api_key is not None
            self._client = gemini_client(self._api_key)
        return self._client


class GeminiEmbedder(GeminiCaller):
    """Gemini embeddings: one `batchEmbedContents` call per (up to 100) documents.

    `output_dimensionality` asks the API for `dim` values (Matryoshka truncation); the vectors are
    truncated again if longer and L2-normalised here, whatever the API did.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        model: str | None = None,
        dim: int | None = None,
        client: genai.Client | None = None,
    ) -> None:
        super().__init__(api_key, client)
        s = settings()
        self.model: str = model or s.embedding_model
        self.dim: int = dim or s.embedding_dim

    def __repr__(self) -> str:  # never shows the key
        return f"GeminiEmbedder(model={self.model!r}, dim={self.dim})"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        chunks = [self._embed(texts[i : i + MAX_BATCH], query=False) for i in range(0, len(texts), MAX_BATCH)]
        return np.vstack(chunks) if len(chunks) > 1 else chunks[0]

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self._embed([text], query=True)[0])

    def _embed(self, texts: Sequence[str], *, query: bool) -> np.ndarray:
        from google.genai import types

        if uses_prompt_prefixes(self.model):
            prefix = QUERY_PREFIX if query else DOCUMENT_PREFIX
            inputs = [prefix + t for t in texts]
            config = types.EmbedContentConfig(output_dimensionality=self.dim)
        else:
            inputs = list(texts)
            config = types.EmbedContentConfig(
                output_dimensionality=self.dim,
                task_type="RETRIEVAL_QUERY" if query else "RETRIEVAL_DOCUMENT",
            )
        # One Content per text: a list of plain strings would be merged by the SDK into ONE
        # multi-part content (one vector for all) for multimodal models like gemini-embedding-2.
        contents: list[types.Content | types.ContentDict] = [
            types.Content(parts=[types.Part(text=t)]) for t in inputs
        ]
        with upstream_guard(EMBEDDING_UNAVAILABLE):
            response = self.client.models.embed_content(model=self.model, contents=contents, config=config)
        values = [e.values for e in (response.embeddings or [])]
        if len(values) != len(texts) or any(not v or len(v) < self.dim for v in values):
            raise UpstreamUnavailable(EMBEDDING_UNAVAILABLE, retry_after=5)
        matrix = np.asarray([v[: self.dim] for v in values if v is not None], dtype=np.float32)
        return l2_normalize(matrix)


# --- the factory -------------------------------------------------------------------------------------


@per_container
def _gemini_embedder(api_key: str) -> GeminiEmbedder:
    return GeminiEmbedder(api_key)


@per_container
def _local_embedder(name: str) -> Embedder | None:
    from synapse.ai.embeddings_local import local_embedder

    factory = cast(Callable[[str], Embedder | None], local_embedder)
    return factory(name)


def get_embedder(api_key: str | None = None) -> Embedder | None:
    """Gemini when a key is at hand (the user's own, else GEMINI_API_KEY); else the local embedder.

    None when neither is available (LOCAL_EMBEDDER=none, or the local package is not installed):
    callers then rank by full text alone.
    """
    key = api_key or settings().gemini_api_key
    if key:
        return _gemini_embedder(key)
    return _local_embedder(settings().local_embedder)
