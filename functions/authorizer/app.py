"""The HTTP API's Lambda authorizer (REQUEST, simple responses): JWT or API key → principal.

It always authorizes and puts either the principal or the reason in the context: API Gateway
would otherwise answer a bare 403, and the contract wants 401 in its envelope. Every route's
entrypoint refuses a context without a principal (synapse.api).
"""

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse import api, auth
from synapse.errors import Unauthorized


@api.logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    try:
        who = auth.authenticate(headers.get("authorization"))
    except Unauthorized as err:
        return {"isAuthorized": True, "context": {"error": err.message}}
    return {"isAuthorized": True, "context": who.context()}
