"""The Lambda handler of an HTTP function: observability, the checks that come before the body is
read (size, then who, then JSON), then the resolver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.utilities.typing import LambdaContext

from synapse.core.errors import SynapseError
from synapse.core.models.base import Scope
from synapse.core.observability import logger, metrics, tracer
from synapse.core.principal import Principal
from synapse.http import body, snapstart
from synapse.http.envelope import raw_error

Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]

snapstart.register()  # SnapStart's runtime hooks (a no-op off Lambda): every HTTP function imports this


def authorizer_context(event: dict[str, Any]) -> dict[str, Any] | None:
    """What the Lambda authorizer put in the request (a principal, or why there is none)."""
    ctx = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda")
    return ctx if isinstance(ctx, dict) else None


def _precheck(event: dict[str, Any], *, scope: Scope | None, user_only: bool, public: bool) -> None:
    """What must hold before the body is even parsed: size, then who, then JSON.

    Powertools validates the body before any middleware runs, so these checks sit in front of
    the resolver: a caller without rights learns nothing about the body's shape.
    """
    data = body.raw(event)
    if not public:
        who = Principal.from_context(authorizer_context(event))
        if user_only:
            who.require_user()
        if scope is not None:
            who.require(scope)
    body.accept(event, data)


def entrypoint(
    app: APIGatewayHttpResolver,
    *,
    scope: Scope | None = None,
    user_only: bool = False,
    public: bool = False,
) -> Handler:
    """The Lambda handler of a function: observability, pre-checks, then the resolver."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics(raise_on_empty_metrics=False)
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if is_metrics_disabled():
            # Powertools never clears a disabled metric set and prints it raw at 100 values
            metrics.clear_metrics()
        metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
        try:
            _precheck(event, scope=scope, user_only=user_only, public=public)
        except SynapseError as err:
            return raw_error(err)
        return app.resolve(event, context)

    return cast(Handler, handler)
