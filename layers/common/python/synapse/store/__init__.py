"""The only package that builds keys or calls DynamoDB: one module per item family.

- `keys`: every key of the table (and `Space`, one mind of one user); `codec`: attribute values,
  vectors, cursors; `db`: the client, paged queries, batched writes, optimistic transactions.
- `memories`: the memory codec and its one write path; `conversations`: sessions, raw messages,
  summaries, the identity line; `credentials`: API keys and provider keys; `users`: a user as a whole.

Services use the names re-exported here (`store.save`, `store.Space`, …). They are imported on first
use (`synapse.core.lazy`): a function that only reads memories never imports the credentials or
conversations modules at cold start.
"""

from typing import TYPE_CHECKING

from synapse.core.lazy import exports

if TYPE_CHECKING:
    from synapse.store.changes import Version, changed_ids
    from synapse.store.changes import read as get_version
    from synapse.store.codec import (
        VECTOR_FORMAT,
        BadCursor,
        Vector,
        decode_cursor,
        decode_matrix,
        decode_vector,
        encode_cursor,
        make_vector,
        vector_tag,
    )
    from synapse.store.conversations import (
        MessageRange,
        StoredMessage,
        Summary,
        add_summary,
        append_messages,
        get_identity,
        latest_summary,
        list_summaries,
        put_identity,
        read_messages,
        recent_messages,
        session_boundary_done,
        session_count,
    )
    from synapse.store.credentials import (
        ApiKeyRecord,
        ProviderRecord,
        delete_api_key,
        delete_provider,
        find_api_key,
        get_provider,
        list_api_keys,
        list_providers,
        put_api_key,
        put_provider,
    )
    from synapse.store.db import backoff, busy, client
    from synapse.store.keys import DEFAULT_MIND, Space, hash_secret, idempotency_pk, is_mind_id
    from synapse.store.memories import (
        NO_MEMORY,
        WRITE_ATTEMPTS,
        Change,
        Columns,
        LostRace,
        MemoryFilter,
        Stored,
        as_version,
        columns,
        delete,
        get,
        history,
        id_for,
        kept_version,
        next_version,
        query,
        read_columns,
        read_columns_of,
        save,
        stored,
        stored_of,
        vectors_of,
    )
    from synapse.store.minds import MindRecord, count_memories, delete_mind, get_mind, list_minds, put_mind
    from synapse.store.users import SessionData, UserData, delete_user, everything

_EXPORTS = {
    "changes": "Version changed_ids get_version=read",
    "codec": "VECTOR_FORMAT BadCursor Vector decode_cursor decode_matrix decode_vector encode_cursor"
    " make_vector vector_tag",
    "conversations": "MessageRange StoredMessage Summary add_summary append_messages get_identity"
    " latest_summary list_summaries put_identity read_messages recent_messages session_boundary_done"
    " session_count",
    "credentials": "ApiKeyRecord ProviderRecord delete_api_key delete_provider find_api_key get_provider"
    " list_api_keys list_providers put_api_key put_provider",
    "db": "backoff busy client",
    "keys": "DEFAULT_MIND Space hash_secret idempotency_pk is_mind_id",
    "memories": "NO_MEMORY WRITE_ATTEMPTS Change Columns LostRace MemoryFilter Stored as_version columns"
    " delete get history id_for kept_version next_version query read_columns read_columns_of save"
    " stored stored_of vectors_of",
    "minds": "MindRecord count_memories delete_mind get_mind list_minds put_mind",
    "users": "SessionData UserData delete_user everything",
}
__getattr__, __dir__ = exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_MIND",
    "NO_MEMORY",
    "VECTOR_FORMAT",
    "WRITE_ATTEMPTS",
    "ApiKeyRecord",
    "BadCursor",
    "Change",
    "Columns",
    "LostRace",
    "MemoryFilter",
    "MessageRange",
    "MindRecord",
    "ProviderRecord",
    "SessionData",
    "Space",
    "Stored",
    "StoredMessage",
    "Summary",
    "UserData",
    "Vector",
    "Version",
    "add_summary",
    "append_messages",
    "as_version",
    "backoff",
    "busy",
    "changed_ids",
    "client",
    "columns",
    "count_memories",
    "decode_cursor",
    "decode_matrix",
    "decode_vector",
    "delete",
    "delete_api_key",
    "delete_mind",
    "delete_provider",
    "delete_user",
    "encode_cursor",
    "everything",
    "find_api_key",
    "get",
    "get_identity",
    "get_mind",
    "get_provider",
    "get_version",
    "hash_secret",
    "history",
    "id_for",
    "idempotency_pk",
    "is_mind_id",
    "kept_version",
    "latest_summary",
    "list_api_keys",
    "list_minds",
    "list_providers",
    "list_summaries",
    "make_vector",
    "next_version",
    "put_api_key",
    "put_identity",
    "put_mind",
    "put_provider",
    "query",
    "read_columns",
    "read_columns_of",
    "read_messages",
    "recent_messages",
    "save",
    "session_boundary_done",
    "session_count",
    "stored",
    "stored_of",
    "vector_tag",
    "vectors_of",
]
