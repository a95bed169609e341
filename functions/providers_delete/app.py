"""DELETE /providers/{provider} — forget the user's provider key (users only)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path

from synapse.core.models.base import Provider
from synapse.http.caller import Caller
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import no_content, responses
from synapse.http.resolver import resolver
from synapse.services.account import providers

app = resolver()


@app.delete(
    "/providers/<provider>",
    summary="Forget a provider key (users only)",
    tags=["providers"],
    responses=responses(
        "user", {204: no_content("Forgotten")}, not_found="no key is stored for that provider"
    ),
)
def delete_provider(provider: Annotated[Provider, Path()], who: Caller) -> Response[None]:
    providers.delete(who.user_id, provider.value)
    return Response(status_code=204)


handler = entrypoint(app, user_only=True)
