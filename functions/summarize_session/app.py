"""EventBridge consumer of SessionSummaryDue: one summary chunk per boundary, however often delivered."""

from typing import Any

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.observability import logger, tracer
from synapse.http import snapstart
from synapse.services.chat import sessions

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    detail = event.detail
    chunk = sessions.summary_due(
        str(detail["userId"]),
        str(detail["sessionId"]),
        int(detail["msgCount"]),
        str(detail.get("mindId") or "default"),
    )
    logger.info("session summary", extra={"written": chunk is not None, "msg_count": detail["msgCount"]})
    return {"chunk_id": chunk.chunk_id if chunk else None}
