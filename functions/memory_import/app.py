"""POST /memory/import — a Synapse export's memory records, or mem0's memory objects."""

from synapse.core.models.base import Scope
from synapse.core.models.bulk import ImportIn, ImportOut
from synapse.http.caller import Caller, InMind
from synapse.http.entrypoint import entrypoint
from synapse.http.openapi import responses
from synapse.http.resolver import resolver
from synapse.services.memory import bulk

app = resolver()


@app.post(
    "/memory/import",
    summary="Import memories from a Synapse export or from mem0",
    description=(
        "`format: synapse`: the memory records of an export (`GET /me/export`'s memories, or the JSON "
        "Lines export's `memory` lines), each with its `history`; category, key, content, tags, priority, "
        "confidence, expires_at, valid_at and created_at are kept as given. `format: mem0`: mem0 memory "
        "objects (`get_all`'s `results`): content = `memory`, key `mem0_<id>`, the category from "
        "`categories` (the README's mapping; `note` otherwise), tags = categories, valid_at = created_at. "
        "A record already stored exactly as given is skipped, so importing a file twice changes nothing. "
        "An invalid record is listed in `errors` with its index; the others are written."
    ),
    tags=["memories"],
    responses=responses("write", {200: "What became of the records"}, body=True),
)
def import_memories(body: ImportIn, who: Caller, mind: InMind) -> ImportOut:
    return bulk.import_records(who, mind, body)


handler = entrypoint(app, scope=Scope.write)
