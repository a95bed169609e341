"""SQS: the webhook delivery queue (a message per delivery still to make; retries wait in it)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from synapse.aws import clients as aws
from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.state import per_container

MAX_DELAY = 900  # seconds: SQS's longest DelaySeconds
MAX_VISIBILITY = 43200  # seconds: SQS's longest visibility timeout (12 h)


@per_container
def client() -> Any:
    return aws.client("sqs")


def _url() -> str:
    url = settings().webhook_queue_url
    if not url:
        raise UpstreamUnavailable("No webhook queue is configured.", retry_after=60)
    return url


def send(messages: Sequence[Mapping[str, Any]], delay: int = 0) -> None:
    """Queue messages (JSON) after `delay` seconds (at most 15 minutes), 10 to a call; raises
    UpstreamUnavailable unless every one was queued."""
    delay = max(0, min(int(delay), MAX_DELAY))
    try:
        for start in range(0, len(messages), 10):
            entries = [
                {"Id": str(i), "MessageBody": json.dumps(m, separators=(",", ":")), "DelaySeconds": delay}
                for i, m in enumerate(messages[start : start + 10])
            ]
            answer = client().send_message_batch(QueueUrl=_url(), Entries=entries)
            if answer.get("Failed"):
                raise UpstreamUnavailable("The webhook queue refused a message.", retry_after=5)
    except (ClientError, BotoCoreError) as exc:
        raise UpstreamUnavailable("The webhook queue is unavailable.", retry_after=5) from exc


def hide(receipt_handle: str, seconds: int) -> bool:
    """Keep a received message invisible for `seconds` (at most 12 h) from now: its next attempt.
    False when SQS refused (the queue's own visibility timeout then decides)."""
    try:
        client().change_message_visibility(
            QueueUrl=_url(),
            ReceiptHandle=receipt_handle,
            VisibilityTimeout=max(0, min(seconds, MAX_VISIBILITY)),
        )
    except (ClientError, BotoCoreError):
        return False
    return True
