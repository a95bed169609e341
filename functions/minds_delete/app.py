"""DELETE /minds/{mindId} — a mind, everything in it, and its keys (they stop working at once)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends, Response

from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.account import minds

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.delete(
    "/minds/<mindId>",
    summary="Delete a mind and everything in it (users only)",
    tags=["minds"],
    responses=api.responses(
        "user",
        {204: api.no_content("Deleted")},
        params=False,
        not_found="no mind with that id",
        conflict="the default mind cannot be deleted",
    ),
)
def delete(mindId: str, who: Annotated[Principal, Depends(api.caller)]) -> Response[None]:
    minds.delete(who, mindId)
    return Response(status_code=204)


handler = api.entrypoint(app, user_only=True)
