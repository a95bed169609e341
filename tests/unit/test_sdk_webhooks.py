"""The SDKs' webhook verify helper against the Standard Webhooks reference library's output, and the
SDK's webhook and change-feed calls (a mock transport: no network)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from synapse.services.webhooks import registry
from synapse_memory import Gone, QuotaExceeded, Synapse, webhooks

ROOT = Path(__file__).resolve().parents[2]


def _ts_types() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ts_types", ROOT / "clients/typescript/scripts/ts_types.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ts_types = _ts_types()

BODY = b'{"type":"memory.created","timestamp":"2026-12-04T10:00:00Z","data":{"seq":3,"note":"\xe0\xb8\x81"}}'


def reference_headers(secret: str, msg_id: str, at: datetime, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, at, body),
    }


def test_the_sdk_verifies_what_the_reference_library_signs() -> None:
    secret = registry.new_secret()
    headers = reference_headers(secret, "msg_1", datetime.now(UTC), BODY)
    assert webhooks.verify(secret, BODY, headers) == json.loads(BODY)
    # and headers in any case
    assert webhooks.verify(secret, BODY, {k.title(): v for k, v in headers.items()})["data"]["seq"] == 3


def test_the_sdk_signs_as_the_reference_library_does() -> None:
    secret = registry.new_secret()
    now = int(time.time())
    expected = Webhook(secret).sign("msg_2", datetime.fromtimestamp(now, UTC), BODY)
    assert webhooks.sign(secret, "msg_2", now, BODY) == expected


@pytest.mark.parametrize("change", ["body", "id", "secret", "old", "missing"])
def test_the_sdk_refuses_what_does_not_verify(change: str) -> None:
    secret = registry.new_secret()
    at = datetime.now(UTC)
    headers = reference_headers(secret, "msg_3", at, BODY)
    body = BODY
    if change == "body":
        body = BODY.replace(b'"seq":3', b'"seq":4')
    elif change == "id":
        headers["webhook-id"] = "msg_4"
    elif change == "secret":
        secret = registry.new_secret()
    elif change == "old":
        headers = reference_headers(secret, "msg_3", datetime.fromtimestamp(at.timestamp() - 600, UTC), BODY)
    else:
        del headers["webhook-signature"]
    with pytest.raises(webhooks.WebhookVerificationError):
        webhooks.verify(secret, body, headers)


def client(handler: httpx.MockTransport) -> Synapse:
    return Synapse(
        "http://synapse.test",
        token="jwt",
        http_client=httpx.Client(transport=handler, base_url="http://synapse.test"),
    )


def test_the_sdk_calls_the_webhook_routes_and_the_feed() -> None:
    seen: list[tuple[str, str, bytes]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, str(request.url), request.content))
        path = request.url.path
        if path == "/webhooks" and request.method == "POST":
            return httpx.Response(
                201,
                json={
                    "webhook_id": "wh_a",
                    "url": "https://h",
                    "events": ["memory.created"],
                    "mind_id": None,
                    "secret": "whsec_AAAA",
                    "created_at": "2026-12-04T10:00:00Z",
                },
            )
        if path == "/webhooks":
            return httpx.Response(
                200,
                json={
                    "webhooks": [
                        {
                            "webhook_id": "wh_a",
                            "url": "https://h",
                            "events": [],
                            "mind_id": None,
                            "created_at": "2026-12-04T10:00:00Z",
                            "disabled_at": None,
                        }
                    ]
                },
            )
        if path.endswith("/deliveries"):
            return httpx.Response(
                200,
                json={
                    "deliveries": [
                        {
                            "event_id": "msg_1",
                            "type": "memory.created",
                            "attempt": 1,
                            "status_code": 200,
                            "error": None,
                            "at": "2026-12-04T10:00:01Z",
                        }
                    ]
                },
            )
        if path.endswith("/test"):
            return httpx.Response(202, json={"status": "queued"})
        if path == "/memory/changes":
            return httpx.Response(
                200,
                json={
                    "changes": [
                        {
                            "seq": 4,
                            "at": "2026-12-04T10:00:00Z",
                            "memory_id": "m",
                            "change": "created",
                            "version": 1,
                        }
                    ],
                    "next_after": 4,
                },
            )
        return httpx.Response(204)

    with client(httpx.MockTransport(answer)) as mem:
        created = mem.create_webhook("https://h", events=["memory.created"])
        assert created.secret == "whsec_AAAA" and "whsec" not in repr(created)
        assert [w.webhook_id for w in mem.webhooks()] == ["wh_a"]
        assert mem.webhook_deliveries("wh_a", limit=5)[0].status_code == 200
        mem.test_webhook("wh_a")
        mem.delete_webhook("wh_a")
        page = mem.changes(3, limit=10)
        assert page.next_after == 4 and page.changes[0].change == "created"
    assert json.loads(seen[0][2]) == {"url": "https://h", "events": ["memory.created"]}
    assert [(m, u.split("synapse.test")[1]) for m, u, _ in seen[1:]] == [
        ("GET", "/webhooks"),
        ("GET", "/webhooks/wh_a/deliveries?limit=5"),
        ("POST", "/webhooks/wh_a/test"),
        ("DELETE", "/webhooks/wh_a"),
        ("GET", "/memory/changes?after=3&limit=10"),
    ]


def test_quota_and_gone_are_their_own_errors() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/webhooks":
            return httpx.Response(409, json={"error": {"code": "quota_exceeded", "message": "MAX_WEBHOOKS"}})
        return httpx.Response(410, json={"error": {"code": "gone", "message": "too old"}})

    with client(httpx.MockTransport(answer)) as mem:
        with pytest.raises(QuotaExceeded):
            mem.create_webhook("https://h")
        with pytest.raises(Gone):
            mem.changes(1)


def test_the_typescript_helper_verifies_what_the_reference_library_signs(tmp_path: Path) -> None:
    # Given signatures made by the reference library (bodies in Thai and English, several secrets)
    vectors = []
    for i, text in enumerate(["Lives in Chiang Mai", "ไปหาหมอฟัน (3 ธ.ค. 2569)", 'quote " and \\ slash']):
        secret = registry.new_secret()
        at = datetime(2026, 12, 4, 10, 0, i, tzinfo=UTC)
        body = json.dumps(
            {"type": "memory.created", "data": {"seq": i + 1, "content": text}}, ensure_ascii=False
        )
        msg_id = f"msg_{i:032x}"
        vectors.append(
            {
                "secret": secret,
                "id": msg_id,
                "timestamp": int(at.timestamp()),
                "body": body,
                "signature": Webhook(secret).sign(msg_id, at, body.encode()),
            }
        )
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(vectors, ensure_ascii=False), encoding="utf-8")
    # When the TypeScript client's tests verify them (Deno, offline)
    proc = subprocess.run(
        [ts_types.deno_bin(), "test", "--frozen", "--allow-read", "--allow-env", "webhooks_test.ts"],
        cwd=ROOT / "clients" / "typescript",
        env={**ts_types.deno_env(), "WEBHOOK_VECTORS": str(path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Then every one verifies and is signed the same, and tampered ones are refused
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
