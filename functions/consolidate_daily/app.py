"""The daily consolidation (an EventBridge schedule): every mind written to since its last run."""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.observability import logger, tracer
from synapse.http import snapstart
from synapse.services.review import consolidate

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    done = consolidate.daily()
    logger.info("daily consolidation", extra=done)
    return done
