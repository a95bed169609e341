"""Per-container state in one place: the clients and caches a container keeps between invocations.

Each is created lazily, on first use (never at import), through `per_container` or registered with
`on_reset`; `reset()` forgets every one of them. Tests and benchmarks call `reset()` and nothing else
(a changed environment, another moto context), so no list of private names can drift.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import cache
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_resets: list[Callable[[], None]] = []


def on_reset(clear: Callable[[], None]) -> Callable[[], None]:
    """Register how to forget a piece of container state; returns `clear` unchanged."""
    _resets.append(clear)
    return clear


def per_container(fn: F) -> F:
    """`functools.cache`, forgotten by `reset()`: a client or a value built once per container."""
    cached = cache(fn)
    on_reset(cached.cache_clear)
    return cached  # type: ignore[return-value]


def reset(*, keep: Collection[Callable[..., Any]] = ()) -> None:
    """Forget every client and cache of this container (tests, benchmarks, a changed environment),
    but the `per_container` functions in `keep` (a SnapStart restore keeps the warmed session)."""
    kept = {id(fn) for fn in keep}
    for clear in list(_resets):
        if id(getattr(clear, "__self__", None)) not in kept:
            clear()
