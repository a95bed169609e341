"""SQS consumer of the webhook queue: events from MemoryBus (a rule puts them in the queue) fan out to
the user's webhooks; deliveries that failed come back when their next attempt is due
(services/webhooks/delivery.py). Partial batch failures are reported (ReportBatchItemFailures)."""

from typing import Any

from aws_lambda_powertools.utilities.data_classes import SQSEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.observability import logger, tracer
from synapse.http import snapstart
from synapse.services.webhooks import delivery

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@event_source(data_class=SQSEvent)
def handler(event: SQSEvent, context: LambdaContext) -> dict[str, Any]:
    messages = [
        delivery.QueueMessage(
            message_id=record.message_id,
            receipt_handle=record.receipt_handle,
            body=record.body,
            receive_count=int(record.attributes.approximate_receive_count or 1),
        )
        for record in event.records
    ]
    failed = delivery.process(messages)
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}
