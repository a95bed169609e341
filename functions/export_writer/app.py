"""EventBridge consumer of ExportRequested: a user's export file written to the bucket, off the
request's path (POST /me/exports asked for it)."""

from typing import Any

from aws_lambda_powertools.utilities.data_classes import EventBridgeEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.observability import logger, tracer
from synapse.http import snapstart
from synapse.services.account import exports

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
@event_source(data_class=EventBridgeEvent)
def handler(event: EventBridgeEvent, context: LambdaContext) -> dict[str, Any]:
    outcome = exports.write(str(event.detail["userId"]), str(event.detail["exportId"]))
    logger.info("export", extra={"outcome": outcome, "export_id": event.detail.get("exportId")})
    return {"outcome": outcome}
