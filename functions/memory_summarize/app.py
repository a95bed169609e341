"""POST /memory/summarize — summarize given messages, or the session's last stored ones, as a chunk."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse.core.models.base import Scope
from synapse.core.models.chat import SummarizeIn, SummaryOut
from synapse.core.principal import Principal
from synapse.http import api
from synapse.services.chat import sessions

app = APIGatewayHttpResolver(
    enable_validation=True, serializer=api.to_json, json_body_deserializer=api.json_body
)
api.setup(app)


@app.post(
    "/memory/summarize",
    summary="Summarize a session",
    tags=["conversation"],
    responses=api.responses(
        "write", body=True, not_found="no messages given and none stored for the session"
    ),
)
def summarize(body: SummarizeIn, who: Annotated[Principal, Depends(api.caller)]) -> SummaryOut:
    return sessions.summarize(who, body)


handler = api.entrypoint(app, scope=Scope.write)
