"""POST /memory/batch — up to 100 memories, each answered as POST /memory would answer it alone."""

from synapse.core.models.base import Scope
from synapse.core.models.bulk import BatchIn, BatchOut
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import bulk

app = resolver()


@app.post(
    "/memory/batch",
    summary="Create or update up to 100 memories in one call",
    description=(
        "Each item is a `POST /memory` body, answered in `results` (in order) with the status and body "
        "`POST /memory` would answer it alone: 201 or 200 with `memory`, 409 `quota_exceeded` past the "
        "mind's limit, 422 with the error envelope for an invalid item (nothing of it is written; the "
        "valid items are). The items are written together: one read, one embedding call and one step of "
        "the mind's change log for the batch. Idempotent by (category, key) as `POST /memory` is."
    ),
    tags=["memories"],
    responses=responses("write", {200: "Each item's answer, in order"}, body=True),
)
def batch(body: BatchIn, who: Caller, mind: InMind) -> BatchOut:
    return bulk.batch(who, mind, body.memories)


handler = entrypoint(app, scope=Scope.write)
