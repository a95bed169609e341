"""Verify a Synapse webhook delivery (the Standard Webhooks scheme), with the standard library only.

```python
from synapse_memory.webhooks import verify, WebhookVerificationError

payload = verify(secret, request_body_bytes, request.headers)  # the JSON delivery, or raises
```

`secret` is the `whsec_...` value `POST /webhooks` answered once. Pass the body exactly as received.
Deliveries may repeat (at least once): drop a `webhook-id` already handled; order by `data.seq`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["TOLERANCE", "WebhookVerificationError", "sign", "verify"]

TOLERANCE = 300  # seconds a delivery's timestamp may be from now (a replay defence)


class WebhookVerificationError(Exception):
    """The delivery is not signed by this secret (or is too old, or too new, or lacks its headers)."""


def _key(secret: str) -> bytes:
    raw = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        key = base64.b64decode(raw + "==")
    except ValueError as exc:
        raise ValueError("the secret is not whsec_ + base64") from exc
    if not key:
        raise ValueError("the secret is empty")
    return key


def sign(secret: str, webhook_id: str, timestamp: int, body: bytes | str) -> str:
    """The `webhook-signature` value of a delivery: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`."""
    data = body.encode() if isinstance(body, str) else bytes(body)
    digest = hmac.new(_key(secret), f"{webhook_id}.{timestamp}.".encode() + data, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify(
    secret: str,
    body: bytes | str,
    headers: Mapping[str, str],
    *,
    tolerance: int = TOLERANCE,
    now: float | None = None,
) -> Any:
    """The delivery's JSON when its signature is this secret's and its timestamp is recent; else
    WebhookVerificationError. `headers` in any case (a dict, or a framework's headers object)."""
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    webhook_id = lower.get("webhook-id")
    stamp = lower.get("webhook-timestamp")
    signatures = lower.get("webhook-signature")
    if not (webhook_id and stamp and signatures):
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old or too new")
    expected = sign(secret, webhook_id, timestamp, body)
    if not any(hmac.compare_digest(expected, given) for given in signatures.split(" ")):
        raise WebhookVerificationError("no matching signature")
    return json.loads(body)
