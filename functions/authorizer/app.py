"""The HTTP API's Lambda authorizer (REQUEST, simple responses): JWT or API key → principal.

It always authorizes and puts either the principal or the reason in the context: API Gateway
would otherwise answer a bare 403, and the contract wants 401 in its envelope. Every route's
entrypoint refuses a context without a principal (synapse.http.entrypoint), and answers 503 for a context that
says the database could not be asked.
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from synapse.core.errors import Unauthorized, UpstreamUnavailable
from synapse.core.observability import logger
from synapse.http import snapstart
from synapse.services.account import auth

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda)


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    try:
        who = auth.authenticate(headers.get("authorization"))
    except Unauthorized as err:
        return {"isAuthorized": True, "context": {"error": err.message}}
    except UpstreamUnavailable as err:
        # the API key lookup could not be made: the route answers 503 with Retry-After, not a bare 500
        return _unavailable(err)
    except ClientError as exc:
        logger.error("API key lookup failed", extra={"error_code": exc.response.get("Error", {}).get("Code")})
        return _unavailable(
            UpstreamUnavailable("The database is unavailable; try again shortly.", retry_after=5)
        )
    return {"isAuthorized": True, "context": who.context()}


def _unavailable(err: UpstreamUnavailable) -> dict[str, Any]:
    return {"isAuthorized": True, "context": {"unavailable": err.message, "retryAfter": err.retry_after}}
