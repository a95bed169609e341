"""The webhook URL guard (services/webhooks/urls.py) and one attempt's transport: https to public
addresses only, resolved and checked, the checked address connected to, no redirects, a time limit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.receiver import running_receiver
from synapse.core.config import settings
from synapse.services.webhooks import urls


@pytest.fixture
def names() -> Iterator[dict[str, list[str]]]:
    """A resolver the test fills in: name → addresses (no DNS is asked)."""
    table: dict[str, list[str]] = {}

    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError("no such name")
        return table[host]

    urls.use_resolver(resolve)
    yield table
    urls.use_resolver(None)


@pytest.fixture
def allow_private(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("LOCAL_WEBHOOK_ALLOW_PRIVATE", "true")
    settings.cache_clear()
    yield
    settings.cache_clear()


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.9",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fd00:ec2::254",
        "fe80::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_inward_addresses_are_not_public(address: str) -> None:
    assert not urls.is_public(address)


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
def test_outward_addresses_are_public(address: str) -> None:
    assert urls.is_public(address)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://93.184.215.14/hook", "https"),
        ("ftp://93.184.215.14/hook", "https"),
        ("https://127.0.0.1/hook", "public"),
        ("https://169.254.169.254/latest/meta-data", "public"),
        ("https://[fd00:ec2::254]/", "public"),
        ("https://user:pw@93.184.215.14/hook", "credentials"),
        ("https:///nohost", "host"),
        ("https://unknown.test/hook", "resolve"),
        ("https://inward.test/hook", "public"),
        ("https://mixed.test/hook", "public"),
    ],
)
def test_unsafe_urls_are_refused_with_a_reason(names: dict[str, list[str]], url: str, why: str) -> None:
    # Given names that resolve inward (wholly, or one address of several)
    names["inward.test"] = ["10.0.0.5"]
    names["mixed.test"] = ["93.184.215.14", "192.168.0.7"]
    # When the URL is checked, Then it is refused, saying why
    with pytest.raises(urls.UnsafeUrl, match=why):
        urls.check(url)


def test_a_public_name_is_checked_and_its_address_kept(names: dict[str, list[str]]) -> None:
    names["hooks.example.com"] = ["93.184.215.14"]
    target = urls.check("https://hooks.example.com/in?x=1")
    assert (target.host, target.port, target.path, target.address) == (
        "hooks.example.com",
        443,
        "/in?x=1",
        "93.184.215.14",
    )


def test_dns_rebinding_is_caught_at_delivery(names: dict[str, list[str]]) -> None:
    # Given a name that was public when registered
    names["rebind.test"] = ["93.184.215.14"]
    urls.check("https://rebind.test/hook")
    # When it resolves inward by the time of a delivery
    names["rebind.test"] = ["127.0.0.1"]
    answer = urls.post("https://rebind.test/hook", b"{}", {})
    # Then nothing is sent and the attempt fails, saying why
    assert answer.status_code is None
    assert answer.error is not None and "public" in answer.error


def test_the_local_setting_allows_http_to_loopback(allow_private: None) -> None:
    assert urls.check("http://127.0.0.1:9/hook").address == "127.0.0.1"


def test_a_delivery_connects_to_the_checked_address_and_keeps_the_host(
    allow_private: None, names: dict[str, list[str]]
) -> None:
    # Given a receiver on loopback, and a name the guard resolves to it
    with running_receiver() as receiver:
        names["hooks.test"] = ["127.0.0.1"]
        # When a delivery is posted to the name
        answer = urls.post(f"http://hooks.test:{receiver.port}/hook", b'{"a":1}', {"webhook-id": "msg_1"})
        # Then it arrived at the checked address, with the URL's Host and the body as sent
        assert answer.status_code == 200 and answer.error is None
        (got,) = receiver.requests
        assert got.headers["Host"] == f"hooks.test:{receiver.port}"
        assert got.body == b'{"a":1}' and got.headers["webhook-id"] == "msg_1"


def test_redirects_are_failures_and_not_followed(allow_private: None) -> None:
    with running_receiver() as receiver:
        receiver.status, receiver.headers = 302, {"Location": "http://169.254.169.254/"}
        answer = urls.post(receiver.url, b"{}", {})
        assert answer.status_code == 302 and answer.error is not None and answer.error.startswith("HTTP 302")
        assert len(receiver.requests) == 1


def test_only_a_short_excerpt_of_a_failed_answer_is_kept(allow_private: None) -> None:
    with running_receiver() as receiver:
        receiver.status, receiver.answer = 500, b"secret-ish " * 1000
        answer = urls.post(receiver.url, b"{}", {})
        assert answer.status_code == 500
        assert answer.error is not None and len(answer.error) <= urls.EXCERPT + len("HTTP 500: ")


def test_a_slow_receiver_times_out(allow_private: None) -> None:
    with running_receiver() as receiver:
        receiver.pause = 1.5
        answer = urls.post(receiver.url, b"{}", {}, timeout=0.5)
        assert answer.status_code is None and answer.error is not None and "no answer" in answer.error


def test_the_local_setting_resolves_nothing_at_registration(
    allow_private: None, names: dict[str, list[str]]
) -> None:
    # a name is only resolved when a delivery connects (locally nothing is refused by address)
    assert urls.check("http://not-registered.test/hook", registering=True).host == "not-registered.test"
    with pytest.raises(urls.UnsafeUrl, match="resolve"):
        urls.check("http://not-registered.test/hook")


def test_on_aws_a_name_is_resolved_and_checked_at_registration(names: dict[str, list[str]]) -> None:
    names["inward.test"] = ["10.0.0.5"]
    with pytest.raises(urls.UnsafeUrl, match="public"):
        urls.check("https://inward.test/hook", registering=True)
