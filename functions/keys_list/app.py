"""GET /keys — the user's API keys (hints only, never the plain key)."""

from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Depends

from synapse import api, store
from synapse.auth import Principal
from synapse.models import ApiKeyInfo, ApiKeyList, Scope

app = APIGatewayHttpResolver(enable_validation=True, serializer=api.to_json)
api.setup(app)


@app.get("/keys", summary="List API keys (users only)", tags=["keys"])
def list_keys(who: Annotated[Principal, Depends(api.caller)]) -> ApiKeyList:
    records = sorted(store.list_api_keys(who.user_id), key=lambda r: r.created_at)
    return ApiKeyList(
        keys=[
            ApiKeyInfo(
                key_id=r.key_id,
                name=r.name,
                scopes=[Scope(s) for s in r.scopes],
                hint=r.hint,
                created_at=r.created_at,
            )
            for r in records
        ]
    )


handler = api.entrypoint(app, user_only=True)
