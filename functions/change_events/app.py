"""DynamoDB Streams consumer: the memory table's new change-log entries → one event per change on
MemoryBus, in order per mind (services/memory/changes.py). Partial batch failures are reported
(ReportBatchItemFailures): Lambda retries from the first record whose events were not all put."""

from typing import Any

from aws_lambda_powertools.utilities.data_classes import DynamoDBStreamEvent, event_source
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecordEventName
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.observability import logger, tracer
from synapse.http import snapstart
from synapse.services.memory import changes

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@event_source(data_class=DynamoDBStreamEvent)
def handler(event: DynamoDBStreamEvent, context: LambdaContext) -> dict[str, Any]:
    records = [
        changes.StreamRecord(
            sequence_number=str(record.raw_event["dynamodb"]["SequenceNumber"]),
            keys=record.raw_event["dynamodb"].get("Keys") or {},
            image=record.raw_event["dynamodb"].get("NewImage") or {},
        )
        # the event source mapping's filter passes new entries only; anything else is not an event
        for record in event.records
        if record.event_name == DynamoDBRecordEventName.INSERT
    ]
    failed = changes.publish(records)
    return {"batchItemFailures": [{"itemIdentifier": seq} for seq in failed]}
