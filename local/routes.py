"""Route matching the way API Gateway HTTP APIs do it: the most specific route wins."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from local.template import RouteDef


@dataclass(frozen=True)
class Match:
    route: RouteDef
    path_parameters: dict[str, str]

    @property
    def route_key(self) -> str:
        return f"{self.route.method} {self.route.path}"


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s != ""]


def _match_path(pattern: str, path: str) -> dict[str, str] | None:
    pat = _segments(pattern)
    got = _segments(path)
    params: dict[str, str] = {}
    for i, seg in enumerate(pat):
        if seg.startswith("{") and seg.endswith("+}"):  # greedy {proxy+}: the rest of the path
            rest = got[i:]
            if not rest:
                return None
            params[seg[1:-2]] = unquote("/".join(rest))
            return params
        if i >= len(got):
            return None
        if seg.startswith("{") and seg.endswith("}"):
            params[seg[1:-1]] = unquote(got[i])
        elif seg != got[i]:
            return None
    if len(got) != len(pat):
        return None
    return params


def _specificity(route: RouteDef) -> tuple[int, ...]:
    """Static segments beat {param}, which beats {greedy+}; an exact method beats ANY."""
    ranks = []
    for seg in _segments(route.path):
        if seg.startswith("{") and seg.endswith("+}"):
            ranks.append(0)
        elif seg.startswith("{"):
            ranks.append(1)
        else:
            ranks.append(2)
    return (*ranks, 1 if route.method != "ANY" else 0)


class RouteTable:
    def __init__(self, routes: list[RouteDef]) -> None:
        self.routes = list(routes)

    def match(self, method: str, path: str) -> Match | None:
        """The most specific route for this method and path, or None (API Gateway answers 404)."""
        method = method.upper()
        best: tuple[tuple[int, ...], Match] | None = None
        for route in self.routes:
            if route.method not in (method, "ANY"):
                continue
            params = _match_path(route.path, path)
            if params is None:
                continue
            score = _specificity(route)
            if best is None or score > best[0]:
                best = (score, Match(route, params))
        return None if best is None else best[1]
