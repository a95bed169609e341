"""SQS queues of the template and their Lambda triggers, on moto's server.

The queues are moto's (created at start from the template's `AWS::SQS::Queue` resources), so a
function's SendMessage, ChangeMessageVisibility and delays behave as SQS's do. A rule of the template
whose target is a queue (`AWS::Events::Rule` → `!GetAtt <Queue>.Arn`) sends each matching event to it
(local/events.py), and a poller per `SQS` event source hands messages to its function in batches, the
way Lambda's event source mapping does: a batch that raises is left to the visibility timeout; with a
`batchItemFailures` answer the messages not named are deleted.

moto's server answers one request at a time, so the pollers never long-poll (that would hold every
other request up): they ask, and sleep a moment when the queue is empty.

Not durable: moto keeps the queues in memory, so messages still queued when the server stops are lost
(webhook retries in flight, events not yet fanned out). The change feed (GET /memory/changes) has
every change.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from local.apigw import ACCOUNT_ID, REGION
from local.aws import raw_client
from local.functions import reason
from local.template import QueueSourceDef, Template

log = logging.getLogger("local.queues")

IDLE = 0.05  # seconds between polls of an empty queue


def create_queues(tpl: Template) -> dict[str, str]:
    """Each queue of the template in moto: logical id → queue URL (a `!Ref` of a queue is its URL)."""
    sqs = raw_client("sqs")
    urls: dict[str, str] = {}
    for logical, props in tpl.queues.items():
        attributes = {}
        if isinstance(props.get("VisibilityTimeout"), int):
            attributes["VisibilityTimeout"] = str(props["VisibilityTimeout"])
        urls[logical] = sqs.create_queue(QueueName=logical, Attributes=attributes)["QueueUrl"]
    return urls


def queue_arn(logical: str) -> str:
    return f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{logical}"


class QueueSender:
    """What a rule with a queue target does with an event: one SendMessage of the event as JSON."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls
        self._client: Any = None
        self._lock = threading.Lock()

    def __call__(self, queue: str, event: dict[str, Any]) -> None:
        with self._lock:
            if self._client is None:
                self._client = raw_client("sqs")
            self._client.send_message(QueueUrl=self.urls[queue], MessageBody=json.dumps(event))


class QueuePoller:
    """One `SQS` event source: receive, invoke the function with the batch, delete what it handled."""

    def __init__(
        self, source: QueueSourceDef, url: str, invoke: Callable[[str, dict[str, Any]], Any]
    ) -> None:
        self.source = source
        self.url = url
        self.invoke = invoke
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.handled = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"sqs:{self.source.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None

    def _run(self) -> None:
        sqs = raw_client("sqs")
        while not self._stop.is_set():
            try:
                messages = sqs.receive_message(
                    QueueUrl=self.url,
                    MaxNumberOfMessages=max(1, min(self.source.batch_size, 10)),
                    AttributeNames=["All"],
                ).get("Messages", [])
            except Exception as exc:  # noqa: BLE001 - moto stopping, or restarting: try again shortly
                log.debug("queue %s: receive failed: %s", self.source.queue, reason(exc))
                self._stop.wait(0.5)
                continue
            if not messages:
                self._stop.wait(IDLE)
                continue
            self._handle(sqs, messages)

    def _handle(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        event = {
            "Records": [
                {
                    "messageId": m["MessageId"],
                    "receiptHandle": m["ReceiptHandle"],
                    "body": m["Body"],
                    "attributes": dict(m.get("Attributes") or {}),
                    "messageAttributes": {},
                    "md5OfBody": m.get("MD5OfBody", ""),
                    "eventSource": "aws:sqs",
                    "eventSourceARN": queue_arn(self.source.queue),
                    "awsRegion": REGION,
                }
                for m in messages
            ]
        }
        try:
            answer = self.invoke(self.source.function, event)
        except Exception as exc:  # noqa: BLE001 - like Lambda: the messages come back after the timeout
            log.warning("queue %s: %s failed: %s", self.source.queue, self.source.function, reason(exc))
            return
        failed = {
            str(f.get("itemIdentifier"))
            for f in ((answer or {}).get("batchItemFailures") or [] if isinstance(answer, dict) else [])
        }
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)]
            try:
                sqs.delete_message_batch(QueueUrl=self.url, Entries=entries)
            except Exception as exc:  # noqa: BLE001 - they come back: at least once
                log.warning("queue %s: delete failed: %s", self.source.queue, reason(exc))
        self.handled += len(done)
