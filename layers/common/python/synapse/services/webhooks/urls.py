"""No way in through webhooks: a receiver's URL must be https to a public address, checked when it is
registered and again at every delivery, and a delivery connects to the very address it checked (DNS
rebinding cannot swap it between the check and the connection), keeps the URL's host for SNI, the
certificate and `Host`, follows no redirect and gives up after 10 seconds.

The local run (`LOCAL_WEBHOOK_ALLOW_PRIVATE`) also allows http and loopback or private addresses, for
receivers on the same machine; AWS never sets it."""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from synapse.core.config import settings

TIMEOUT = 10.0  # seconds for the whole attempt: connect, send, answer
EXCERPT = 200  # characters of a receiver's answer kept in the delivery log, at most
_READ = 4096  # bytes of the answer read at all

Resolver = Callable[[str, int], list[str]]


class UnsafeUrl(ValueError):
    """The URL may not receive webhooks (the message says why, in words a user can act on)."""


def _system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


_resolver: Resolver = _system_resolve


def use_resolver(resolver: Resolver | None) -> None:
    """Tests: resolve names with this function (None: the system's resolver again)."""
    global _resolver
    _resolver = resolver or _system_resolve


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (`address`), and what to say (host, port, path)."""

    scheme: str
    host: str
    port: int
    path: str
    address: str


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    # is_global is false for loopback, private, link-local (169.254.169.254 the metadata service),
    # shared (100.64/10), unique-local (fd00:ec2::254) and reserved ranges
    return ip.is_global and not ip.is_multicast


def check(url: str, *, registering: bool = False) -> Target:
    """The URL's target if it may receive deliveries now; UnsafeUrl otherwise. `registering` (the
    registration) where every address is allowed (the local setting) resolves nothing: there is
    nothing to check yet, and a name is resolved at each delivery anyway."""
    allow_private = settings().webhook_allow_private
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl("is not a valid URL") from exc
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise UnsafeUrl("must be an https URL")
    if not parts.hostname:
        raise UnsafeUrl("must name a host")
    if parts.username or parts.password:
        raise UnsafeUrl("must not carry credentials")
    host = parts.hostname
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        literal = ipaddress.ip_address(host)
        addresses = [str(literal)]
    except ValueError:
        if allow_private and registering:
            return Target(parts.scheme, host, port, parts.path or "/", "")
        try:
            addresses = _resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise UnsafeUrl("does not resolve to an address") from exc
    if not addresses:
        raise UnsafeUrl("does not resolve to an address")
    if not allow_private and not all(is_public(a) for a in addresses):
        # every address must be public: a name that also resolves inward could be steered there
        raise UnsafeUrl("must resolve to public addresses only (not loopback, private, link-local, metadata)")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(parts.scheme, host, port, path, addresses[0])


@dataclass(frozen=True)
class Answer:
    status_code: int | None  # None: no answer
    error: str | None  # None: a 2xx


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """Connects to the checked address; TLS still verifies the certificate against the URL's host."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=ssl.create_default_context())
        self._address = target.address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float = TIMEOUT) -> Answer:
    """One delivery attempt: check the URL again, POST to the checked address, no redirects.
    Only a short excerpt of a failed answer is kept; a 3xx is a failure (redirects are not followed)."""
    try:
        target = check(url)
    except UnsafeUrl as exc:
        return Answer(None, f"refused: the URL {exc}")
    deadline = time.monotonic() + timeout
    conn: http.client.HTTPConnection = (
        _PinnedHTTPS(target, timeout) if target.scheme == "https" else _PinnedHTTP(target, timeout)
    )
    try:
        conn.request("POST", target.path, body=body, headers={**headers, "Content-Type": "application/json"})
        if conn.sock is not None:
            conn.sock.settimeout(max(0.1, deadline - time.monotonic()))
        response = conn.getresponse()
        status = response.status
        if 200 <= status < 300:
            return Answer(status, None)
        if conn.sock is not None:
            conn.sock.settimeout(max(0.1, deadline - time.monotonic()))
        excerpt = response.read(_READ).decode("utf-8", "replace")
        excerpt = " ".join(excerpt.split())[:EXCERPT]
        return Answer(status, f"HTTP {status}" + (f": {excerpt}" if excerpt else ""))
    except TimeoutError:
        return Answer(None, f"no answer within {timeout:g} s")
    except ssl.SSLError as exc:
        return Answer(None, f"TLS failed: {exc.reason or 'handshake'}")
    except (OSError, http.client.HTTPException) as exc:
        return Answer(None, f"connection failed: {type(exc).__name__}")
    finally:
        conn.close()
