"""Time on the way in, over real HTTP (`python -m local`, the offline rules): a Thai conversation said
on a past day, read in Bangkok, is remembered with the days it meant, and its summary keeps its span."""

from __future__ import annotations

import uuid
from typing import Any

import requests

from tests.e2e.conftest import LocalServer

TIMEOUT = 60
THAI = [
    {
        "role": "user",
        "content": "เมื่อวานผมไปหาหมอฟันที่โรงพยาบาลศิริราช พรุ่งนี้ต้องไปประชุมที่เชียงราย",
        "created_at": "2026-12-04T03:00:00Z",
    },
    {"role": "assistant", "content": "รับทราบครับ", "created_at": "2026-12-04T03:00:30Z"},
    {"role": "user", "content": "ผมย้ายไปอยู่เชียงใหม่เมื่อเดือนที่แล้ว", "created_at": "2026-12-04T10:00:00+07:00"},
]


def test_a_thai_conversation_of_a_past_day_is_remembered_with_its_days(local_server: LocalServer) -> None:
    token = local_server.make_jwt(f"time-{uuid.uuid4().hex[:8]}")
    session = f"s-{uuid.uuid4().hex[:8]}"

    def api(method: str, path: str, **kw: Any) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"}
        return requests.request(method, f"{local_server.url}{path}", headers=headers, timeout=TIMEOUT, **kw)

    # When a Thai conversation said on 4 December 2026 is ingested, read in Bangkok
    resp = api(
        "POST", "/memory/ingest", json={"sessionId": session, "messages": THAI, "timezone": "Asia/Bangkok"}
    )
    assert resp.status_code == 200, resp.text

    # Then "yesterday" and "tomorrow" are the days they meant, in Thai, and the move is the location
    # slot with its month; each memory valid from 00:00 of its day (month) in Bangkok
    nuggets = {n["content"]: (n["key"], n["valid_at"]) for n in resp.json()["nuggets"]}
    assert nuggets["ผมไปหาหมอฟันที่โรงพยาบาลศิริราช (3 ธ.ค. 2569)"][1] == "2026-12-02T17:00:00Z"
    assert nuggets["ต้องไปประชุมที่เชียงราย (5 ธ.ค. 2569)"][1] == "2026-12-04T17:00:00Z"
    assert nuggets["ย้ายไปอยู่ เชียงใหม่ (พ.ย. 2569)"] == ("user_location", "2026-10-31T17:00:00Z")
    # and they are listed so
    listed = api("GET", "/memory", params={"limit": "10"}).json()["memories"]
    assert {m["content"]: m["valid_at"] for m in listed} == {c: v for c, (_, v) in nuggets.items()}

    # and the session's messages keep when they were said: context's recent, the summary's span
    context = api("POST", "/memory/context", json={"query": "หมอฟัน", "sessionId": session}).json()
    assert [m["created_at"] for m in context["recent"]] == [
        "2026-12-04T03:00:00Z",
        "2026-12-04T03:00:30Z",
        "2026-12-04T03:00:00Z",
    ]
    assert api("POST", "/memory/summarize", json={"sessionId": session}).status_code == 200
    (chunk,) = api("GET", f"/memory/summaries/{session}").json()["summaries"]
    assert (chunk["first_message_at"], chunk["last_message_at"]) == (
        "2026-12-04T03:00:00Z",
        "2026-12-04T03:00:30Z",
    )
    # (the default mind is UTC: the summary reads "yesterday" in UTC, which is 3 December there too)
    assert "(3 ธ.ค. 2569)" in chunk["summary"] and "เมื่อวาน" not in chunk["summary"]

    # and a message said in the future is refused
    future = [{"role": "user", "content": "x", "created_at": "2999-01-01T00:00:00Z"}]
    late = api("POST", "/memory/ingest", json={"sessionId": session, "messages": future})
    assert late.status_code == 422 and late.json()["error"]["code"] == "validation_error"
