"""The memory console in a real browser (Debian's chromium, driven by Playwright) against the local
server: sign in, list, verify, edit, history and restore, keys, export everything, errors in words,
text stays text, a phone-sized screen.

One browser for the module; each test has its own context (its own sessionStorage). Every change made
through the page is checked through the API. Screenshots of the main views go to $CONSOLE_SCREENSHOTS
(`make screenshots` sets it to docs/console), else to a temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jwt as pyjwt
import pytest
import requests

from harness.receiver import running_receiver
from tests.e2e.conftest import LocalServer

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 30_000  # the local server starts a function's worker on its first request
EXPIRED = "Your sign-in has expired — sign in again"
SCRIPT_CONTENT = (
    '<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2"> & <b>bold?</b>'
)
THAI = "ผู้ใช้ชอบกาแฟดำไม่ใส่น้ำตาลและทำงานที่เชียงใหม่ทุกวันจันทร์ถึงศุกร์โดยไม่มีช่องว่างในประโยคยาวมาก"


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the browser tests must run in CI: {why}")
    pytest.skip(f"{why} (make test installs it: apt-get install chromium; pip install playwright)")


try:
    from playwright.sync_api import Browser, BrowserContext, Page, Request, Route, expect, sync_playwright
except ImportError:  # pragma: no cover - make test installs it (the dev group)
    sync_playwright = None  # type: ignore[assignment]


# ---------------------------------------------------------------- the API, as a client


class Api:
    def __init__(self, server: LocalServer, token: str) -> None:
        self.server = server
        self.token = token

    def __call__(self, method: str, path: str, body: Any = None, **headers: str) -> requests.Response:
        return requests.request(
            method,
            f"{self.server.url}{path}",
            headers={**self.server.headers(self.token), **headers},
            data=None if body is None else json.dumps(body),
            timeout=30,
        )

    def remember(self, category: str, key: str, content: str, **extra: Any) -> dict[str, Any]:
        r = self("POST", "/memory", {"category": category, "key": key, "content": content, **extra})
        assert r.status_code in (200, 201), r.text
        return dict(r.json())

    def memory(self, memory_id: str) -> dict[str, Any]:
        r = self("GET", f"/memory/{memory_id}")
        assert r.status_code == 200, r.text
        return dict(r.json())

    def key_names(self) -> set[str]:
        r = self("GET", "/keys")
        assert r.status_code == 200, r.text
        return {k["name"] for k in r.json()["keys"]}

    def agent(self, name: str = "seed agent") -> Api:
        r = self("POST", "/keys", {"name": name, "scopes": ["memory:read", "memory:write"]})
        assert r.status_code == 201, r.text
        return Api(self.server, r.json()["key"])


def seed(api: Api) -> dict[str, dict[str, Any]]:
    """A user's mind as a person would have it: their identity, preferences, an agent's notes."""
    out = {
        "user_name": api.remember("identity", "user_name", "ชื่อ สมชาย ใจดี", priority="critical"),
        "home_city": api.remember("identity", "home_city", "อยู่ เชียงใหม่", tags=["location"]),
        "ui_theme": api.remember("preference", "ui_theme", "Prefers dark theme", tags=["ui"]),
        "coffee": api.remember("preference", "coffee", THAI, tags=["กาแฟ", "food"]),
        "synapse_status": api.remember(
            "project",
            "synapse_status",
            "Synapse v1.5.0 deployed on vps1. CI green.",
            tags=["synapse", "deployment"],
            priority="high",
        ),
    }
    agent = api.agent()
    out["deploy_target"] = agent.remember(
        "fact", "deploy_target", "Deploys go to vps1 through Docker Swarm", tags=["docker", "swarm"]
    )
    out["standup_time"] = agent.remember("context", "standup_time", "Daily stand-up is at 09:30 ICT")
    return out


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if sync_playwright is None:
        _unavailable("Playwright for Python is not installed")
    if not Path(CHROMIUM).exists():
        _unavailable(f"no chromium at {CHROMIUM}")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = os.environ.get("CONSOLE_SCREENSHOTS")
    path = Path(target) if target else tmp_path_factory.mktemp("console-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def user(local_server: LocalServer) -> tuple[str, Api, dict[str, dict[str, Any]]]:
    """A user of their own for this module, with seeded memories; every route the page uses warmed up
    (the local server starts a function's worker on its first request)."""
    sub = f"console-{uuid.uuid4().hex[:8]}"
    api = Api(local_server, local_server.make_jwt(sub))
    seeded = seed(api)
    any_id = seeded["ui_theme"]["id"]
    for method, path in (
        ("GET", "/minds"),
        ("GET", "/memory"),
        ("GET", f"/memory/identity/{sub}"),
        ("GET", "/memory/search?q=docker"),
        ("GET", f"/memory/{any_id}/history"),
        ("GET", "/keys"),
        ("GET", "/me/export"),
        ("GET", "/console"),
    ):
        api(method, path)
    # and the writers (a write that embeds starts the local embedder in its worker: seconds, once)
    warm = api.agent("warm-up").remember("note", "warm_up", "warming up")
    for method, path, body in (
        ("PUT", f"/memory/{warm['id']}", {"content": "warmed up"}),
        ("POST", f"/memory/{warm['id']}/verify", None),
        ("POST", f"/memory/{warm['id']}/restore", {"version": 1}),
        ("DELETE", f"/memory/{warm['id']}", None),
    ):
        r = api(method, path, body)
        assert r.status_code < 300, (method, path, r.text)
    # and Review's routes: an agent's change of a verified memory, accepted (the accept embeds), a
    # decline, the providers and a consolidation (of nothing yet)
    mine = api.remember("note", "warm_review", "warming review up")
    proposed = api.agent("warm-up reviewer")("PUT", f"/memory/{mine['id']}", {"content": "warmed"})
    assert proposed.status_code == 202, proposed.text
    for method, path in (
        ("GET", "/memory/proposals"),
        ("POST", f"/memory/proposals/{proposed.json()['proposal']['proposal_id']}/accept"),
        ("POST", "/memory/proposals/00000000000000000000/decline"),
        ("GET", "/providers"),
        ("POST", "/minds/default/consolidate"),
        ("DELETE", f"/memory/{mine['id']}"),
    ):
        r = api(method, path)
        assert r.status_code < 300 or path.endswith("/decline"), (method, path, r.text)
    return sub, api, seeded


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1200, "height": 860}, locale="en-GB", timezone_id="UTC")
    ctx.set_default_timeout(TIMEOUT_MS)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    """A page that records what must never happen: script errors and CSP violations."""
    pg = context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    pg.on(
        "console",
        lambda msg: (
            problems.append(f"console: {msg.text}")
            if msg.type == "error" and ("Content Security Policy" in msg.text or "Trusted Type" in msg.text)
            else None
        ),
    )
    yield pg
    assert not problems, problems


@pytest.fixture
def sign_in(local_server: LocalServer, page: Page, user: Any) -> Callable[..., Page]:
    """Open the console signed in as the module's user (the token in the fragment)."""

    def open_console(token: str | None = None) -> Page:
        page.goto(f"{local_server.url}/console#token={token or user[1].token}")
        expect(page.locator("#app")).to_be_visible()
        expect(page.locator("#list-status")).to_contain_text("shown")
        return page

    return open_console


def card(page: Page, key: str) -> Any:
    return page.locator(f"li.memory[data-key='{key}']")


# ---------------------------------------------------------------- signing in


def test_sign_in_from_the_fragment_removes_the_token_from_the_address_bar(
    local_server: LocalServer, page: Page, user: Any
) -> None:
    sub, api, seeded = user
    # When the console is opened with the token in the URL fragment
    page.goto(f"{local_server.url}/console#token={api.token}")
    # Then it signs in and lists the seeded memories
    expect(page.locator("#user")).to_have_text(sub)
    for key in ("ui_theme", "synapse_status", "deploy_target"):
        expect(card(page, key)).to_be_visible()
    expect(card(page, "synapse_status").locator(".content")).to_have_text(seeded["synapse_status"]["content"])
    # And the token has left the address bar and the history entry, and is kept in this tab only
    assert "token" not in page.url and page.url.endswith("/console")
    assert page.evaluate("location.hash") == ""
    # (the entry was replaced, not added: back leads to where the tab was before, not to the token)
    page.go_back()
    assert page.url == "about:blank"
    page.go_forward()
    assert "token" not in page.url
    assert page.evaluate("sessionStorage.getItem('synapse.console.token')") == api.token
    assert page.evaluate("localStorage.length") == 0
    # And the identity line of the default mind is shown
    expect(card(page, "ui_theme")).to_be_visible()
    expect(page.locator("#identity")).to_contain_text("ชื่อ สมชาย ใจดี")


def test_sign_in_with_a_pasted_token_and_sign_out(local_server: LocalServer, page: Page, user: Any) -> None:
    _, api, _ = user
    page.goto(f"{local_server.url}/console")
    expect(page.locator("#signin")).to_be_visible()
    page.fill("#token", api.token)
    page.click("#signin-form button[type=submit]")
    expect(card(page, "ui_theme")).to_be_visible()
    # a reload keeps the sign-in (sessionStorage), signing out forgets it
    page.reload()
    expect(card(page, "ui_theme")).to_be_visible()
    page.click("#signout")
    expect(page.locator("#signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('synapse.console.token')") is None


def test_an_expired_token_asks_to_sign_in_again(local_server: LocalServer, page: Page, user: Any) -> None:
    sub = user[0]
    page.goto(f"{local_server.url}/console#token={local_server.make_jwt(sub, days=-1)}")
    expect(page.locator("#signin-message")).to_contain_text(EXPIRED)
    expect(page.locator("#signin")).to_be_visible()
    expect(page.locator("#app")).to_be_hidden()


def test_a_token_the_api_refuses_asks_to_sign_in_again(local_server: LocalServer, page: Page) -> None:
    # a token that looks current to the page, but is not signed with the server's secret: 401
    forged = pyjwt.encode(
        {"sub": "mallory", "exp": int(time.time()) + 3600},
        "not-the-server-secret-" + "0123456789abcdef" * 3,
        "HS256",
    )
    page.goto(f"{local_server.url}/console#token={forged}")
    expect(page.locator("#signin-message")).to_contain_text(EXPIRED)
    assert page.evaluate("sessionStorage.getItem('synapse.console.token')") is None


def test_an_api_key_is_not_a_sign_in(local_server: LocalServer, page: Page) -> None:
    assert local_server.api_key
    page.goto(f"{local_server.url}/console")
    page.fill("#token", local_server.api_key)
    page.click("#signin-form button[type=submit]")
    expect(page.locator("#signin-message")).to_contain_text("agent's API key")


# ---------------------------------------------------------------- memories


def test_unverified_agent_memories_are_marked_and_first_when_asked(sign_in: Callable[..., Page]) -> None:
    page = sign_in()
    expect(card(page, "deploy_target")).to_have_class("memory unverified")
    expect(card(page, "deploy_target").locator(".badge.unverified")).to_contain_text("agent")
    expect(card(page, "ui_theme").locator(".badge.verified")).to_be_visible()
    # When "unverified first" is ticked
    page.check("#f-unverified-first")
    # Then every unverified memory comes before the first verified one
    expect(page.locator("li.memory").first).to_have_class("memory unverified")
    expect(card(page, "ui_theme")).to_be_visible()
    flags = page.locator("li.memory").evaluate_all("els => els.map(e => e.classList.contains('unverified'))")
    assert flags == sorted(flags, reverse=True) and True in flags and False in flags


def test_filters_narrow_the_list(sign_in: Callable[..., Page]) -> None:
    page = sign_in()
    page.select_option("#f-source", "agent")
    expect(card(page, "ui_theme")).to_have_count(0)
    expect(card(page, "deploy_target")).to_be_visible()
    page.select_option("#f-source", "")
    page.select_option("#f-category", "identity")
    expect(card(page, "deploy_target")).to_have_count(0)
    expect(card(page, "user_name")).to_be_visible()
    page.select_option("#f-category", "")
    page.fill("#f-tag", "DOCKER")  # tags are case-folded by the API
    page.press("#f-tag", "Enter")
    expect(page.locator("li.memory")).to_have_count(1)
    expect(card(page, "deploy_target")).to_be_visible()


def test_paging_follows_next_cursor(sign_in: Callable[..., Page], local_server: LocalServer) -> None:
    # a user of its own: one more memory than the page's 25
    api = Api(local_server, local_server.make_jwt(f"pager-{uuid.uuid4().hex[:8]}"))
    for i in range(26):
        api.remember("note", f"paging_{i:02d}", f"note number {i}")
    page = sign_in(api.token)
    expect(page.locator("li.memory")).to_have_count(25)
    expect(page.locator("#list-status")).to_contain_text("more below")
    page.click("#more")
    expect(page.locator("li.memory")).to_have_count(26)
    expect(page.locator("#more")).to_be_hidden()
    keys = page.locator("li.memory").evaluate_all("els => els.map(e => e.dataset.key)")
    assert sorted(keys) == [f"paging_{i:02d}" for i in range(26)]


def test_search(sign_in: Callable[..., Page]) -> None:
    page = sign_in()
    page.fill("#q", "swarm")
    page.click("#search-form button[type=submit]")
    expect(page.locator("#list-status")).to_contain_text("for “swarm”")
    expect(page.locator("li.memory").first).to_have_attribute("data-key", "deploy_target")
    expect(page.locator("li.memory").first.locator(".meta")).to_contain_text("score")
    page.click("#search-clear")
    expect(card(page, "ui_theme")).to_be_visible()


def test_verify_with_one_click(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, seeded = user
    page = sign_in()
    target = card(page, "standup_time")
    target.locator("button.verify").click()
    expect(target.locator(".badge.verified")).to_be_visible()
    expect(target.locator("button.verify")).to_have_count(0)
    assert api.memory(seeded["standup_time"]["id"])["verified"] is True


def test_edit_content_tags_priority_and_expiry(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, seeded = user
    page = sign_in()
    target = card(page, "ui_theme")
    target.locator("button.edit-btn").click()
    form = target.locator("form.edit")
    form.locator("textarea[name=content]").fill("Prefers a dark theme, high contrast")
    form.locator("input[name=tags]").fill("ui, accessibility")
    form.locator("select[name=priority]").select_option("high")
    form.locator("input[name=expires_at]").fill("2031-05-04T10:30")
    form.locator("button.save").click()
    expect(target.locator(".content")).to_have_text("Prefers a dark theme, high contrast")
    memory = api.memory(seeded["ui_theme"]["id"])
    assert memory["content"] == "Prefers a dark theme, high contrast"
    assert memory["tags"] == ["ui", "accessibility"]
    assert memory["priority"] == "high"
    assert memory["expires_at"] == "2031-05-04T10:30:00Z"  # the context's time zone is UTC
    # and clearing the expiry clears it
    target.locator("button.edit-btn").click()
    target.locator("form.edit input[name=expires_at]").fill("")
    target.locator("form.edit button.save").click()
    expect(target.locator(".meta")).not_to_contain_text("expires")
    assert api.memory(seeded["ui_theme"]["id"])["expires_at"] is None


def test_a_refused_edit_says_why(sign_in: Callable[..., Page]) -> None:
    page = sign_in()
    target = card(page, "home_city")
    target.locator("button.edit-btn").click()
    target.locator("form.edit input[name=tags]").fill("x" * 51)
    target.locator("form.edit button.save").click()
    notice = page.locator("#notice")
    expect(notice).to_contain_text("Some of what was entered is not accepted")
    expect(notice.locator("li")).to_contain_text("tags #1")


def test_history_timeline_and_restore(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, _ = user
    first = api.remember("project", "console_release", "Console planned for December")
    r = api("PUT", f"/memory/{first['id']}", {"content": "Console shipped on 3 December"})
    assert r.status_code == 200, r.text
    page = sign_in()
    card(page, "console_release").locator("button.history-btn").click()
    expect(page.locator("#view-history")).to_be_visible()
    versions = page.locator("#timeline li.version")
    expect(versions).to_have_count(2)
    expect(versions.first).to_have_class("version current")
    expect(versions.first.locator(".content")).to_have_text("Console shipped on 3 December")
    expect(versions.nth(1).locator(".content")).to_have_text("Console planned for December")
    # When version 1 is restored
    versions.nth(1).locator("button.restore").click()
    expect(page.locator("#notice")).to_contain_text("Restored version 1 as version 3")
    expect(versions).to_have_count(3)
    expect(versions.first.locator(".badge", has_text="restored")).to_be_visible()
    # Then the API has version 1's content as version 3
    memory = api.memory(first["id"])
    assert (memory["content"], memory["version"]) == ("Console planned for December", 3)
    page.click("#history-back")
    expect(card(page, "console_release").locator(".content")).to_have_text("Console planned for December")


def test_delete_asks_first(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, _ = user
    doomed = api.remember("note", "to_delete", "Delete me")
    page = sign_in()
    target = card(page, "to_delete")
    target.locator("button.delete-btn").click()
    target.get_by_role("button", name="Keep it").click()
    expect(target).to_be_visible()
    assert api("GET", f"/memory/{doomed['id']}").status_code == 200
    target.locator("button.delete-btn").click()
    target.locator("button.confirm-delete").click()
    expect(target).to_have_count(0)
    assert api("GET", f"/memory/{doomed['id']}").status_code == 404


def test_a_memory_gone_meanwhile_is_explained(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, _ = user
    gone = api.agent("gone agent").remember("note", "gone_meanwhile", "About to vanish")
    page = sign_in()
    expect(card(page, "gone_meanwhile")).to_be_visible()
    assert api("DELETE", f"/memory/{gone['id']}").status_code == 204
    card(page, "gone_meanwhile").locator("button.verify").click()
    expect(page.locator("#notice")).to_contain_text("Not found — it may have been deleted")


def test_script_in_a_memory_stays_text(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, _ = user
    api.remember("note", "xss_attempt", SCRIPT_CONTENT, tags=["<img src=x onerror=alert(1)>"])
    page = sign_in()
    target = card(page, "xss_attempt")
    expect(target.locator(".content")).to_have_text(SCRIPT_CONTENT)
    expect(target.locator(".tags")).to_contain_text("<img src=x onerror=alert(1)>")
    assert target.locator("script, img, b").count() == 0
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    # and in its history too
    target.locator("button.history-btn").click()
    expect(page.locator("#timeline .content").first).to_have_text(SCRIPT_CONTENT)
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_thai_text_renders_as_written(sign_in: Callable[..., Page]) -> None:
    page = sign_in()
    content = card(page, "coffee").locator(".content")
    expect(content).to_have_text(THAI)
    expect(card(page, "coffee").locator(".tags")).to_contain_text("#กาแฟ")
    # a long Thai line without spaces wraps inside its card
    box = content.bounding_box()
    outer = card(page, "coffee").bounding_box()
    assert box and outer and box["width"] <= outer["width"]


# ---------------------------------------------------------------- minds


def test_the_mind_picker_switches_minds(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, _ = user
    r = api("POST", "/minds", {"name": "Work assistant"})
    assert r.status_code == 201, r.text
    mind = r.json()["mind_id"]
    r = api(
        "POST",
        "/memory",
        {"category": "identity", "key": "work_role", "content": "Team lead at Acme"},
        **{"X-Mind-Id": mind},
    )
    assert r.status_code == 201, r.text
    page = sign_in()
    page.select_option("#mind", mind)
    expect(card(page, "work_role")).to_be_visible()
    expect(card(page, "ui_theme")).to_have_count(0)
    expect(page.locator("#identity")).to_have_text("Team lead at Acme")
    page.select_option("#mind", "default")
    expect(card(page, "ui_theme")).to_be_visible()
    expect(card(page, "work_role")).to_have_count(0)


def test_the_minds_timezone_is_shown_changed_and_dates_its_memories(
    sign_in: Callable[..., Page], user: Any
) -> None:
    # Given a mind of its own (UTC) with a memory about 2025-12-04 17:00 UTC (the 5th in Bangkok)
    _, api, _ = user
    r = api("POST", "/minds", {"name": "ทริปเชียงราย"})
    assert r.status_code == 201, r.text
    mind = r.json()["mind_id"]
    body = {
        "category": "note",
        "key": "meeting",
        "content": "ประชุมที่เชียงราย",
        "valid_at": "2025-12-04T17:00:00Z",
    }
    assert api("POST", "/memory", body, **{"X-Mind-Id": mind}).status_code == 201
    page = sign_in()
    page.select_option("#mind", mind)
    expect(card(page, "meeting")).to_contain_text("dated 4 Dec 2025")
    # When its settings are opened
    page.click(".tab[data-view=settings]")
    # Then they show its name and timezone
    expect(page.locator("#settings-current")).to_contain_text("ทริปเชียงราย")
    expect(page.locator("#settings-current")).to_contain_text("timezone UTC")
    expect(page.locator("#settings-timezone")).to_have_value("UTC")
    # When an unknown timezone is saved, the page says why and nothing changes
    page.fill("#settings-timezone", "Asia/Nowhere")
    page.click("#settings-form button[type=submit]")
    expect(page.locator("#notice")).to_contain_text("timezone")
    timezones = {m["mind_id"]: m["timezone"] for m in api("GET", "/minds").json()["minds"]}
    assert timezones[mind] == "UTC"
    # When Asia/Bangkok is saved
    page.fill("#settings-timezone", "Asia/Bangkok")
    page.click("#settings-form button[type=submit]")
    # Then the page and the API say so, and the memory's day is Bangkok's
    expect(page.locator("#notice")).to_contain_text("Asia/Bangkok")
    expect(page.locator("#settings-current")).to_contain_text("timezone Asia/Bangkok")
    timezones = {m["mind_id"]: m["timezone"] for m in api("GET", "/minds").json()["minds"]}
    assert timezones[mind] == "Asia/Bangkok" and timezones["default"] == "UTC"
    page.click(".tab[data-view=memories]")
    expect(card(page, "meeting")).to_contain_text("dated 5 Dec 2025")


def test_each_memory_shows_its_date_in_the_minds_timezone(
    local_server: LocalServer, browser: Browser
) -> None:
    # Given a user whose mind is in UTC (the default), a Thai message said at 03:00 UTC on 4 December
    # 2026 about yesterday, ingested; and a memory with no date of its own
    api = Api(local_server, local_server.make_jwt(f"console-time-{uuid.uuid4().hex[:8]}"))
    said = [{"role": "user", "content": "เมื่อวานผมไปหาหมอฟัน", "created_at": "2026-12-04T03:00:00Z"}]
    r = api("POST", "/memory/ingest", {"sessionId": "s1", "messages": said})
    assert r.status_code == 200, r.text
    (dentist,) = [n for n in r.json()["nuggets"] if "หมอฟัน" in n["content"]]
    assert dentist["valid_at"] == "2026-12-03T00:00:00Z"
    api.remember("preference", "tea", "ชอบชาเขียว")
    # When the console is open in a browser in Los Angeles (where that moment is 2 December)
    ctx = browser.new_context(
        viewport={"width": 1200, "height": 860}, locale="en-GB", timezone_id="America/Los_Angeles"
    )
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        page = ctx.new_page()
        page.goto(f"{local_server.url}/console#token={api.token}")
        expect(page.locator("#list-status")).to_contain_text("shown")
        # Then the ingested memory is dated by its day in the mind's timezone, and says so
        when = card(page, dentist["key"]).locator("time.when")
        expect(when).to_have_text("dated 3 Dec 2026")
        expect(when).to_have_attribute("datetime", "2026-12-03T00:00:00Z")
        expect(when).to_have_class(re.compile(r"\bvalid\b"))
        # and the undated one by the day it was stored
        stored = card(page, "tea").locator("time.when")
        expect(stored).to_have_class(re.compile(r"\bstored\b"))
        expect(stored).to_have_text(re.compile(r"^stored \d{1,2} \w{3} \d{4}$"))
        # and its history dates the version too
        card(page, dentist["key"]).locator("button.history-btn").click()
        expect(page.locator("#timeline .meta").first).to_contain_text("dated 3 Dec 2026")
    finally:
        ctx.close()


# ---------------------------------------------------------------- sessions


def test_sessions_show_their_summaries(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, _ = user
    r = api(
        "POST",
        "/memory/summarize",
        {
            "sessionId": "console-chat-1",
            "messages": [
                {"role": "user", "content": "ช่วยวางแผนทริปเชียงใหม่ให้หน่อย"},
                {"role": "assistant", "content": "ได้เลย ไปสามวันสองคืนดีไหม"},
            ],
        },
    )
    assert r.status_code == 200, r.text
    page = sign_in()
    page.click(".tab[data-view=sessions]")
    session = page.locator("li.session[data-session='console-chat-1']")
    expect(session).to_be_visible()
    expect(session.locator(".summaries .content")).to_have_text(r.json()["summary"])
    page.fill("#session-id", "console-chat-1")
    page.click("#summaries-form button[type=submit]")
    expect(page.locator("#session-summaries .content")).to_have_text(r.json()["summary"])


def test_one_session_name_in_two_minds_is_two_sessions(sign_in: Callable[..., Page], user: Any) -> None:
    # Given the session "trip" in the default mind and in another mind, each summarized
    sub, api, _ = user
    r = api("POST", "/minds", {"name": "Travel planner"})
    assert r.status_code == 201, r.text
    travel = r.json()["mind_id"]
    said = {}
    for mind, text in (
        ("default", "Booked the dentist for Friday."),
        (travel, "Flights to Lampang on May 3."),
    ):
        body = {"sessionId": "trip", "messages": [{"role": "user", "content": text}]}
        r = api("POST", "/memory/summarize", body, **{"X-Mind-Id": mind})
        assert r.status_code == 200, r.text
        said[mind] = r.json()["summary"]
    # When the Sessions tab is opened
    page = sign_in()
    page.click(".tab[data-view=sessions]")
    # Then "trip" is two entries, each naming its mind and holding only its own summary
    trips = page.locator("li.session[data-session='trip']")
    expect(trips).to_have_count(2)
    for mind, name in (("default", sub), (travel, "Travel planner")):  # (the default mind's name: the user's)
        entry = page.locator(f"li.session[data-session='trip'][data-mind='{mind}']")
        expect(entry.locator(".badge.mind")).to_contain_text(name)
        expect(entry.locator(".summaries .content")).to_have_text([said[mind]])


def test_an_account_too_large_for_one_answer_points_to_the_export(sign_in: Callable[..., Page]) -> None:
    # Given an account past what one answer of GET /me/export carries (the API's own 413)
    page = sign_in()
    page.route(
        lambda url: url.endswith("/me/export"),
        _answer(413, "payload_too_large", "The export is larger than one response carries."),
    )
    # When the Sessions tab is opened
    page.click(".tab[data-view=sessions]")
    # Then it says so in words and points to the export, instead of a generic error
    said = page.locator("#sessions .too-large")
    expect(said).to_contain_text("Your account is too large to list its sessions here")
    expect(said).to_contain_text("Export everything")
    expect(page.locator("#notice")).to_be_hidden()
    # And its button leads to Your data
    said.locator("button.to-data").click()
    expect(page.locator("#view-data")).to_be_visible()
    expect(page.locator(".tab[data-view=data]")).to_have_attribute("aria-current", "page")
    expect(page.locator("#export-start")).to_be_enabled()


# ---------------------------------------------------------------- your data: export everything


def _fixed(answer: dict[str, Any]) -> Callable[[Route], None]:
    def handler(route: Route) -> None:
        route.fulfill(status=200, headers={"content-type": "application/json"}, body=json.dumps(answer))

    return handler


def _exports(url: str) -> bool:
    """GET /me/exports/{id}: an export's state."""
    return "/me/exports/" in url


def test_export_everything_to_a_working_download(sign_in: Callable[..., Page], user: Any) -> None:
    # Given the module's user, one of whose memories is in Thai
    sub, _, seeded = user
    page = sign_in()
    asked: list[tuple[str, str]] = []
    page.on("request", lambda r: asked.append((r.method, r.url)) if "/me/exports" in r.url else None)
    # When "Export everything" is pressed on Your data
    page.click(".tab[data-view=data]")
    page.click("#export-start")
    # Then the page says it is preparing the export, then offers a plain download link
    link = page.locator("#export-status a.download")
    expect(link).to_be_visible(timeout=120_000)
    expect(page.locator("#export-status")).to_contain_text("Your export is ready")
    expect(page.locator("#export-start")).to_be_enabled()
    assert [m for m, _ in asked].count("POST") == 1 and ("GET" in [m for m, _ in asked])
    expect(link).to_have_attribute("download", re.compile(r"^synapse-export-[0-9a-f]{32}\.jsonl$"))
    # with the file's size in words, its record count and when the link stops working
    size = page.locator(".export-size")
    expect(size).to_have_text(re.compile(r"^\d+(\.\d)? (bytes|KB|MB)$"))
    exact = int((size.get_attribute("title") or "").replace(",", "").removesuffix(" bytes"))
    expect(page.locator(".export-records")).to_have_text(re.compile(r"^[\d,]+ records$"))
    records = int((page.locator(".export-records").text_content() or "").split()[0].replace(",", ""))
    expect(page.locator(".export-expires time")).to_have_attribute(
        "datetime", re.compile(r"^\d{4}-\d\d-\d\dT")
    )
    # And the link downloads the file with no token: its first line is the export's header, a memory
    # of the user's is in it, and its size and records are the ones shown
    href = link.get_attribute("href") or ""
    download = requests.get(href, timeout=60)
    assert download.status_code == 200, download.text[:200]
    lines = [json.loads(line) for line in download.content.decode("utf-8").splitlines()]
    assert lines[0]["format"] == "synapse-export" and lines[0]["user_id"] == sub
    assert any(
        line.get("type") == "memory" and line["content"] == seeded["coffee"]["content"] for line in lines[1:]
    )
    assert (len(download.content), len(lines) - 1) == (exact, records)
    # And a click in the browser downloads the same file, no Authorization header sent with it, and the
    # console stays where it was
    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.url == href else None)
    with page.expect_download() as started:
        link.click()
    assert Path(started.value.path()).read_bytes() == download.content
    assert sent and all("authorization" not in r.all_headers() for r in sent)
    assert page.url.endswith("/console")
    expect(page.locator("#export-status a.download")).to_be_visible()


def test_while_an_export_is_prepared_a_second_click_starts_nothing(
    sign_in: Callable[..., Page],
) -> None:
    # Given an export the server is still preparing (its state answered "pending" for now)
    page = sign_in()
    posts: list[str] = []
    page.on(
        "request", lambda r: posts.append(r.url) if r.method == "POST" and "/me/exports" in r.url else None
    )
    pending = _fixed({"status": "pending"})
    page.route(_exports, pending)
    page.click(".tab[data-view=data]")
    page.click("#export-start")
    # Then the page says so, and the button is off
    expect(page.locator("#export-status .export-pending")).to_contain_text("Preparing your export…")
    button = page.locator("#export-start")
    expect(button).to_be_disabled()
    expect(page.locator("#export-status .export-pending")).to_contain_text("s)")  # it polled again
    # When it is clicked again anyway: forced, and with the button turned on by a script
    button.click(force=True)
    page.evaluate("document.getElementById('export-start').disabled = false")
    button.click()
    # and the tab is left and opened again
    page.click(".tab[data-view=memories]")
    page.click(".tab[data-view=data]")
    # Then the same export is still being prepared (the button off again), and no second one was asked for
    expect(page.locator("#export-status .export-pending")).to_be_visible()
    expect(button).to_be_disabled()
    assert len(posts) == 1
    # When the server has written it
    page.unroute(_exports, pending)
    # Then the download is offered, and the button is on again
    expect(page.locator("#export-status a.download")).to_be_visible(timeout=120_000)
    expect(button).to_be_enabled()
    assert len(posts) == 1


def test_an_export_past_five_minutes_stops_being_asked_after_and_can_be_waited_for_again(
    sign_in: Callable[..., Page], page: Page
) -> None:
    # Given an export that stays pending, and the page's clock under the test's hand
    page.clock.install()
    sign_in()
    pending = _fixed({"status": "pending"})
    page.route(_exports, pending)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.method) if _exports(r.url) else None)
    page.click(".tab[data-view=data]")
    page.click("#export-start")
    expect(page.locator("#export-status .export-pending")).to_contain_text("s)")
    # When five minutes have gone by
    page.clock.fast_forward("05:00")
    # Then the page stops asking, says so in words, and the button is on again
    slow = page.locator("#export-status .export-slow")
    expect(slow).to_contain_text("still being prepared after 5 minutes")
    expect(page.locator("#export-start")).to_be_enabled()
    polls = len(asked)
    page.clock.fast_forward("00:10")
    page.wait_for_timeout(300)
    assert len(asked) == polls
    # When it is pressed again (and the server has the file by then)
    page.unroute(_exports, pending)
    page.click("#export-start")
    # Then the download is offered
    expect(page.locator("#export-status a.download")).to_be_visible(timeout=120_000)


def test_a_failed_export_is_said_in_words_and_can_be_tried_again(sign_in: Callable[..., Page]) -> None:
    # Given an export that the server could not write
    page = sign_in()
    failed = _fixed({"status": "failed"})
    page.route(_exports, failed)
    page.click(".tab[data-view=data]")
    page.click("#export-start")
    # Then the page says it failed, in words, and offers to try again
    said = page.locator("#export-status .export-failed")
    expect(said).to_contain_text("Your export could not be prepared")
    expect(page.locator("#export-status a.download")).to_have_count(0)
    # When it is tried again (and the server writes it this time)
    page.unroute(_exports, failed)
    said.locator("button.export-retry").click()
    # Then the download is offered
    expect(page.locator("#export-status a.download")).to_be_visible(timeout=120_000)
    expect(page.locator("#export-status .export-failed")).to_have_count(0)


# ---------------------------------------------------------------- keys


def test_create_a_mind_key_see_it_once_and_revoke_it(sign_in: Callable[..., Page], user: Any) -> None:
    _, api, _ = user
    name = f"browser key {uuid.uuid4().hex[:6]}"
    page = sign_in()
    page.click(".tab[data-view=keys]")
    page.fill("#key-name", name)
    page.uncheck("#key-form input[value='memory:write']")
    page.click("#key-form button[type=submit]")
    plain = page.locator("#new-key-value")
    expect(plain).to_have_text(re.compile(r"^gts_live_\S{32,}$"))
    key = plain.text_content() or ""
    # the API lists it (never its plain text), and the key works, read-only
    assert name in api.key_names()
    agent = Api(api.server, key)
    assert agent("GET", "/memory").status_code == 200
    assert agent("POST", "/memory", {"category": "note", "key": "nope", "content": "x"}).status_code == 403
    item = page.locator("li.key", has_text=name)
    expect(item).to_contain_text("memory:read")
    expect(item).not_to_contain_text("memory:write")
    assert key not in (page.locator("#keys").text_content() or "")
    page.click("#new-key-done")
    expect(page.locator("#new-key")).to_be_hidden()
    # When it is revoked (after a confirmation)
    item.locator("button.revoke").click()
    item.locator("button.confirm-revoke").click()
    expect(page.locator("li.key", has_text=name)).to_have_count(0)
    # Then GET /keys no longer has it
    assert name not in api.key_names()


# ---------------------------------------------------------------- review, supersession, providers


def test_review_shows_each_proposal_beside_the_memory_and_decides(
    sign_in: Callable[..., Page], user: Any
) -> None:
    _, api, _ = user
    tag = uuid.uuid4().hex[:6]
    city = api.remember("fact", f"rv_city_{tag}", "Lives in Berlin with two cats")
    pet = api.remember("fact", f"rv_pet_{tag}", "Has two cats")
    bot = api.agent(f"review bot {tag}")
    assert (
        bot("PUT", f"/memory/{city['id']}", {"content": "Lives in Munich with two cats"}).status_code == 202
    )
    assert bot("DELETE", f"/memory/{pet['id']}").status_code == 202
    page = sign_in()
    expect(page.locator("#review-count")).to_be_visible()
    page.click(".tab[data-view=review]")
    change = page.locator("li.proposal", has_text=f"rv_city_{tag}")
    gone = page.locator("li.proposal", has_text=f"rv_pet_{tag}")
    # each proposal beside the memory as it is now, the difference marked
    expect(change.locator(".side.now .content")).to_have_text("Lives in Berlin with two cats")
    expect(change.locator(".side.next del")).to_have_text("Berlin")
    expect(change.locator(".side.next ins")).to_have_text("Munich")
    expect(gone.locator(".side.next h3")).to_have_text("Proposed: delete it")
    # When the change is edited and accepted
    change.locator("button.edit-accept").click()
    change.locator("form.edit textarea[name=content]").fill("Lives in Munich (since December) with two cats")
    change.locator("form.edit button.save").click()
    expect(page.locator("#notice")).to_contain_text("Accepted")
    expect(page.locator("li.proposal", has_text=f"rv_city_{tag}")).to_have_count(0)
    memory = api.memory(city["id"])
    assert (memory["content"], memory["verified"]) == ("Lives in Munich (since December) with two cats", True)
    # When the deletion is declined: the memory stays
    gone.locator("button.decline").click()
    expect(page.locator("li.proposal", has_text=f"rv_pet_{tag}")).to_have_count(0)
    assert api.memory(pet["id"])["content"] == "Has two cats"


def test_consolidate_from_the_mind_bar_then_restore_a_superseded_memory(
    sign_in: Callable[..., Page], user: Any
) -> None:
    _, api, _ = user
    tag = uuid.uuid4().hex[:6]
    bot = api.agent(f"dup bot {tag}")
    older = bot.remember("note", f"dup_a_{tag}", f"Standup notes live in the wiki {tag}")
    # (a second later: "newer" is the later updated_at, kept to the second; a tie would be broken by id)
    time.sleep(1.1)
    bot.remember("note", f"dup_b_{tag}", f"standup  notes live in the WIKI {tag}")
    page = sign_in()
    page.click("#consolidate")
    expect(page.locator("#notice")).to_contain_text("1 duplicate merged")
    expect(card(page, f"dup_a_{tag}")).to_have_count(0)
    # the superseded memory is under the filter, and restorable
    page.check("#f-superseded")
    hidden = card(page, f"dup_a_{tag}")
    expect(hidden.locator(".badge.superseded")).to_be_visible()
    hidden.locator("button.restore-superseded").click()
    expect(page.locator("#notice")).to_contain_text("live again")
    assert api.memory(older["id"])["superseded_by"] is None


def test_providers_set_see_the_hint_and_remove_the_users_gemini_key(
    local_server: LocalServer, page: Page
) -> None:
    # (a user of its own, who writes nothing while the key is set: no call may go out to Gemini)
    api = Api(local_server, local_server.make_jwt(f"providers-{uuid.uuid4().hex[:6]}"))
    page.goto(f"{local_server.url}/console#token={api.token}")
    expect(page.locator("#app")).to_be_visible()
    page.click(".tab[data-view=providers]")
    expect(page.locator("#providers")).to_contain_text("No key of your own")
    page.fill("#provider-key", "AIzaSyD-console-test-key-0123456789xYz")
    page.click("#provider-form button[type=submit]")
    item = page.locator("li.provider[data-provider=gemini]")
    expect(item.locator(".hint")).to_have_text(re.compile(r"^AIza.+xYz$"))
    assert "console-test-key" not in (page.locator("#providers").text_content() or "")
    assert [p["provider"] for p in api("GET", "/providers").json()["providers"]] == ["gemini"]
    item.locator("button.remove-provider").click()
    expect(page.locator("#providers")).to_contain_text("No key of your own")
    assert api("GET", "/providers").json()["providers"] == []


def test_webhooks_and_their_last_deliveries(sign_in: Callable[..., Page], user: Any) -> None:
    # Given a webhook of the user on a receiver of this machine, and a write it was told of
    _, api, _ = user
    with running_receiver() as receiver:
        created = api("POST", "/webhooks", {"url": receiver.url, "events": ["memory.created"]})
        assert created.status_code == 201, created.text
        hook = created.json()
        wrote = api(
            "POST",
            "/memory",
            {"category": "note", "key": f"hooked_{uuid.uuid4().hex[:6]}", "content": "Told"},
        )
        assert wrote.status_code in (200, 201), wrote.text
        assert receiver.wait_for(1, timeout=30), "the receiver got no delivery"
        # When the Webhooks tab is opened
        page = sign_in()
        page.click(".tab[data-view=webhooks]")
        item = page.locator(f"li.webhook[data-webhook-id='{hook['webhook_id']}']")
        # Then it lists the webhook (never its secret) and its delivery
        expect(item).to_contain_text(receiver.url)
        expect(item).to_contain_text("memory.created")
        expect(item.locator("table.deliveries tbody tr").first).to_contain_text("HTTP 200")
        assert hook["secret"] not in (page.locator("#webhooks").text_content() or "")
        api("DELETE", f"/webhooks/{hook['webhook_id']}")


# ---------------------------------------------------------------- errors in words


def _answer(status: int, code: str, message: str, retry_after: str | None = None, **extra: Any) -> Any:
    def handler(route: Route) -> None:
        headers = {"content-type": "application/json; charset=utf-8"}
        if retry_after:
            headers["Retry-After"] = retry_after
        route.fulfill(
            status=status,
            headers=headers,
            body=json.dumps({"error": {"code": code, "message": message, **extra}}),
        )

    return handler


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (_answer(403, "forbidden", "The API key lacks memory:write."), "You are not allowed to do that"),
        (_answer(404, "not_found", "No mind with that id."), "Not found — it may have been deleted"),
        (
            _answer(409, "conflict", "A mind with that name exists."),
            "That conflicts with what is already stored",
        ),
        (
            _answer(
                422,
                "validation_error",
                "tag is too long",
                details=[{"loc": ["query", "tag"], "msg": "String should have at most 50 characters"}],
            ),
            "tag: String should have at most 50 characters",
        ),
        (_answer(429, "rate_limited", "Too many requests.", "3"), "Too many requests — wait 3 seconds"),
        (_answer(503, "upstream_unavailable", "DynamoDB is down.", "7"), "Try again in 7 seconds"),
        (
            _answer(500, "internal_error", "Something went wrong."),
            "Something went wrong on the server's side",
        ),
        (lambda route: route.abort("internetdisconnected"), "Cannot reach the Synapse API"),
    ],
    ids=["403", "404", "409", "422", "429", "503", "500", "network"],
)
def test_every_error_is_said_in_words(sign_in: Callable[..., Page], answer: Any, words: str) -> None:
    page = sign_in()
    page.route(lambda url: "/memory?" in url, answer)
    page.select_option("#f-category", "fact")
    expect(page.locator("#notice")).to_contain_text(words)
    expect(page.locator("#app")).to_be_visible()  # still signed in


def test_a_401_mid_session_goes_back_to_sign_in(sign_in: Callable[..., Page]) -> None:
    page = sign_in()
    page.route(lambda url: "/memory?" in url, _answer(401, "unauthorized", "The token has expired."))
    page.select_option("#f-category", "fact")
    expect(page.locator("#signin-message")).to_contain_text(EXPIRED)
    expect(page.locator("#app")).to_be_hidden()


# ---------------------------------------------------------------- a phone


def test_a_phone_screen_has_no_horizontal_scroll(
    browser: Browser, local_server: LocalServer, user: Any, shots: Path
) -> None:
    _, api, _ = user
    ctx = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        page = ctx.new_page()
        page.goto(f"{local_server.url}/console#token={api.token}")
        expect(card(page, "coffee")).to_be_visible()

        def width() -> int:
            return int(
                page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)")
            )

        assert width() <= 390
        card(page, "synapse_status").locator("button.history-btn").click()
        expect(page.locator("#timeline li.version").first).to_be_visible()
        assert width() <= 390
        page.click(".tab[data-view=keys]")
        expect(page.locator("#key-form")).to_be_visible()
        assert width() <= 390
        # Your data, with an export ready (its link, size, records and expiry)
        page.click(".tab[data-view=data]")
        page.click("#export-start")
        expect(page.locator("#export-status a.download")).to_be_visible(timeout=120_000)
        assert width() <= 390
    finally:
        ctx.close()


# ---------------------------------------------------------------- screenshots of the main views


def test_screenshots_of_the_main_views(browser: Browser, local_server: LocalServer, shots: Path) -> None:
    """docs/console/*.png (make screenshots): a user of their own, so the pictures do not depend on
    what the other tests did."""
    api = Api(local_server, local_server.make_jwt("somchai"))
    seeded = seed(api)
    # an agent's changes of the user's (verified) memories wait in Review; one is accepted (a history
    # worth showing: the user's note, then the agent's change the user accepted), two still wait
    laptop = api.agent("laptop agent")
    proposed = laptop("POST", "/memory", {"category": "project", "key": "synapse_status",
                                          "content": "Synapse v1.6.0 deployed; docs next.",
                                          "tags": ["synapse", "release"]})  # fmt: skip
    assert proposed.status_code == 202, proposed.text
    accepted = api("POST", f"/memory/proposals/{proposed.json()['proposal']['proposal_id']}/accept")
    assert accepted.status_code == 200, accepted.text
    waiting = laptop("PUT", f"/memory/{seeded['home_city']['id']}", {"content": "อยู่ กรุงเทพฯ ตั้งแต่ปีนี้"})
    assert waiting.status_code == 202, waiting.text
    assert laptop("DELETE", f"/memory/{seeded['ui_theme']['id']}").status_code == 202
    ctx = browser.new_context(
        viewport={"width": 1100, "height": 900}, locale="en-GB", timezone_id="Asia/Bangkok"
    )
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        page = ctx.new_page()
        page.goto(f"{local_server.url}/console#token={api.token}")
        page.check("#f-unverified-first")
        expect(card(page, "coffee")).to_be_visible()
        expect(page.locator("#identity")).to_contain_text("สมชาย")
        page.screenshot(path=str(shots / "list.png"))
        card(page, "synapse_status").locator("button.history-btn").click()
        expect(page.locator("#timeline li.version")).to_have_count(2)
        page.screenshot(path=str(shots / "history.png"))
        page.click(".tab[data-view=review]")
        expect(page.locator("li.proposal")).to_have_count(2)
        expect(page.locator("#review-count")).to_have_text("2")
        page.screenshot(path=str(shots / "review.png"), full_page=True)
        page.click(".tab[data-view=keys]")
        page.fill("#key-name", "read-only dashboard")
        page.uncheck("#key-form input[value='memory:write']")
        page.click("#key-form button[type=submit]")
        expect(page.locator("#new-key")).to_be_visible()
        expect(page.locator("li.key")).to_have_count(3)
        page.screenshot(path=str(shots / "keys.png"), full_page=True)
        page.click(".tab[data-view=data]")
        page.click("#export-start")
        expect(page.locator("#export-status a.download")).to_be_visible(timeout=120_000)
        page.screenshot(path=str(shots / "data.png"))
    finally:
        ctx.close()
    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    phone.set_default_timeout(TIMEOUT_MS)
    try:
        page = phone.new_page()
        page.goto(f"{local_server.url}/console#token={api.token}")
        expect(card(page, "coffee")).to_be_visible()
        expect(page.locator("#identity")).to_contain_text("สมชาย")
        page.screenshot(path=str(shots / "phone.png"))
    finally:
        phone.close()
    for name in ("list", "history", "review", "keys", "data", "phone"):
        assert (shots / f"{name}.png").stat().st_size > 10_000
