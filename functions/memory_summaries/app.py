"""GET /memory/summaries/{sessionId} — a session's summary chunks, oldest first."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse import api, store
from synapse.auth import Principal
from synapse.errors import ValidationFailed
from synapse.models import SESSION_ID_RE, Scope, SummaryChunk, SummaryList

app = APIGatewayHttpResolver(enable_validation=True, serializer=api.to_json)
api.setup(app)


@app.get("/memory/summaries/<sessionId>", summary="Session summaries", tags=["conversation"])
def summaries(sessionId: str, who: Annotated[Principal, Depends(api.caller)]) -> SummaryList:
    if not SESSION_ID_RE.match(sessionId):
        raise ValidationFailed.at(["path", "sessionId"], "must be 1-128 letters, digits, '.', '_' or '-'")
    chunks = store.list_summaries(who.user_id, sessionId)
    return SummaryList(
        summaries=[
            SummaryChunk(
                chunk_id=c.chunk_id, summary=c.summary, msg_count=c.msg_count, created_at=c.created_at
            )
            for c in chunks
        ]
    )


handler = api.entrypoint(app, scope=Scope.read)
