"""EventBridge consumer of SnapshotDue: a mind's corpus packed into its snapshot in S3, off every
request's path (a reader that found the snapshot missing or behind asked for it)."""

from typing import Any

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.observability import logger, tracer
from synapse.http import snapstart
from synapse.services.memory import snapshots

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    outcome = snapshots.snapshot_due(event.detail)
    logger.info("snapshot", extra={"outcome": outcome, "seq": event.detail.get("seq")})
    return {"outcome": outcome}
