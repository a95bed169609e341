"""Every key of the table, built and parsed here and nowhere else (DESIGN.md, "Data").

Everything of a user lives in the partition `mem:<userId>`; API key lookups live under `key:<sha256>`.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass

# uuid5 namespace of memory ids: id = uuid5(NS, userId \x1f category \x1f key)
_MEMORY_NS = uuid.UUID("5a3e2f1c-8b7d-4c6e-9f0a-1b2c3d4e5f60")
# ids this service makes: uuids and hex strings (anything else cannot exist, so it is not asked for)
_SERVICE_ID = re.compile(r"^[0-9a-f-]{1,64}$")

NUGGET = "nug:"
HISTORY = "hist:"
IDENTITY = "identity"
VERSION_TOKEN = "ver"
CHANGE = "chg:"
SESSION = "ses:"
MESSAGE = "msg:"
SUMMARY = "sum:"
MARKER = "ing:"
APIKEY = "apikey:"
PROVIDER = "provider:"
MIND = "mind:"
PROPOSAL = "prop:"
WEBHOOK = "webhook:"
EXPORT = "export:"  # an export file's record (POST /me/exports), gone by TTL with its file
DELIVERY = "whd:"  # a webhook's delivery log: whd:<webhookId>:<ms since the epoch, 13 digits>:<n>
LOOKUP_SK = "key"


DEFAULT_MIND = "default"
_MIND_ID = re.compile(r"^m_[a-z0-9]{12}$")


@dataclass(frozen=True)
class Space:
    """One mind of one user: the partition, and the prefix of every per-mind sort key.

    The default mind's sort keys carry no prefix (the first release's keys, unchanged); another mind's
    carry `<mindId>:`, so a recall stays one prefix query over one mind (`<mindId>:nug:`).
    """

    user_id: str
    mind_id: str = DEFAULT_MIND

    @property
    def pk(self) -> str:
        return user_pk(self.user_id)

    @property
    def is_default(self) -> bool:
        return self.mind_id == DEFAULT_MIND

    def sk(self, local: str) -> str:
        """The table's sort key of a per-mind item (`local` as built by the functions below)."""
        return local if self.is_default else f"{self.mind_id}:{local}"


def is_mind_id(value: str) -> bool:
    return value == DEFAULT_MIND or bool(_MIND_ID.match(value))


def memory_id(space: Space, category: str, key: str) -> str:
    """The stable id of (user, mind, category, key): storing the same key again updates, never
    duplicates. The default mind's ids are the first release's, uuid5 of (user, category, key)."""
    name = f"{space.user_id}\x1f{category}\x1f{key}"
    if not space.is_default:
        name = f"{space.mind_id}\x1f{name}"
    return str(uuid.uuid5(_MEMORY_NS, name))


def is_service_id(value: str) -> bool:
    """An id of a shape this service makes (a path id of another shape cannot exist)."""
    return bool(_SERVICE_ID.match(value))


def user_pk(user_id: str) -> str:
    return f"mem:{user_id}"


def user_of(pk: str) -> str:
    """The userId of a user's partition key (`mem:<userId>`); ValueError for any other key."""
    if not pk.startswith("mem:"):
        raise ValueError("not a user's partition")
    return pk.removeprefix("mem:")


def idempotency_pk(user_id: str) -> str:
    """The user's partition in the idempotency table (Powertools' `static_pk_value`; its sort key is
    the request's hash): DELETE /me finds the user's cached ingest answers there."""
    return user_pk(user_id)


def apikey_pk(key_hash: str) -> str:
    return f"key:{key_hash}"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def nugget_sk(mem_id: str) -> str:
    return f"{NUGGET}{mem_id}"


def nugget_id(sk: str) -> str:
    return sk.removeprefix(NUGGET)


def history_prefix(mem_id: str) -> str:
    """A memory's kept versions: in its partition, outside the recall prefix (`nug:`)."""
    return f"{HISTORY}{mem_id}:"


def history_sk(mem_id: str, version: int) -> str:
    return f"{history_prefix(mem_id)}{version:08d}"


# The timeline index (GET /memory/timeline): a sparse global secondary index over the memories only.
# Each memory carries `tl_pk` = its mind and `tl_sk` = its moment (`valid_at`, else `created_at`, in the
# API's fixed ISO format, which sorts as time does) and its id; history and every other item carry
# neither, so they are not in the index. KEYS_ONLY: the index changes only when a memory is created,
# deleted, or its moment moves, never on the other writes of a memory.
TIMELINE_INDEX = "timeline"
TIMELINE_PK = "tl_pk"
TIMELINE_SK = "tl_sk"
_TIMELINE_SEP = "#"


def timeline_pk(space: Space) -> str:
    return f"tl:{space.user_id}:{space.mind_id}"


def timeline_sk(moment: str, mem_id: str) -> str:
    """A memory's place in its mind's timeline: its moment (ISO, `...Z`), then its id (ties in id
    order). A bare moment sorts before every place at that moment: `[from, to)` is BETWEEN from AND to."""
    return f"{moment}{_TIMELINE_SEP}{mem_id}"


def timeline_id(tl_sk: str) -> str:
    """The memory id of a timeline place ("" for a value that is not one)."""
    moment, sep, mem_id = tl_sk.rpartition(_TIMELINE_SEP)
    return mem_id if sep and moment and is_service_id(mem_id) else ""


def proposal_sk(proposal_id: str) -> str:
    """A pending proposal (Review): in the mind's partition, outside the recall prefix; ids sort by
    time, so the prefix read backwards is newest first."""
    return f"{PROPOSAL}{proposal_id}"


def session_sk(session_id: str) -> str:
    return f"{SESSION}{session_id}"


def message_sk(session_id: str, seq: int) -> str:
    return f"{MESSAGE}{session_id}:{seq:08d}"


def change_sk(seq: int) -> str:
    """One entry of a mind's change log, padded so that entries sort in write order."""
    return f"{CHANGE}{seq:012d}"


def summary_prefix(session_id: str) -> str:
    return f"{SUMMARY}{session_id}:chunk_"


def summary_sk(session_id: str, n: int) -> str:
    return f"{summary_prefix(session_id)}{n:04d}"


def chunk_id(sk: str) -> str:
    """A summary chunk's public id, `sum:<sessionId>:chunk_<N>` (API.md): the sort key pads N to four
    digits only so that a session's chunks sort in write order."""
    head, _, n = sk.rpartition("_")
    return f"{head}_{int(n)}"


def marker_sk(session_id: str, request_id: str) -> str:
    return f"{MARKER}{session_id}:{request_id}"


def apikey_sk(key_id: str) -> str:
    return f"{APIKEY}{key_id}"


def provider_sk(provider: str) -> str:
    return f"{PROVIDER}{provider}"


def webhook_sk(webhook_id: str) -> str:
    return f"{WEBHOOK}{webhook_id}"


def delivery_prefix(webhook_id: str) -> str:
    return f"{DELIVERY}{webhook_id}:"


def delivery_sk(webhook_id: str, at_ms: int, unique: str) -> str:
    """Newest last in the sort order: the log is read backwards."""
    return f"{delivery_prefix(webhook_id)}{at_ms:013d}:{unique}"


def mind_sk(mind_id: str) -> str:
    return f"{MIND}{mind_id}"


def export_sk(export_id: str) -> str:
    return f"{EXPORT}{export_id}"


# --- the snapshot bucket's object keys (store/snapshots.py) -------------------------------------------
# a user's snapshots under the hash of their id (an id is any string a JWT names; the hash also spreads
# the keys over S3's partitions), a mind's under its id, one object per epoch of the mind's version: a
# mind deleted and made again (a new epoch) never reads the snapshot of the one before
SNAPSHOT = "snapshots/"


def snapshot_user_prefix(user_id: str) -> str:
    return f"{SNAPSHOT}{hashlib.sha256(user_id.encode()).hexdigest()}/"


def snapshot_mind_prefix(user_id: str, mind_id: str) -> str:
    return f"{snapshot_user_prefix(user_id)}{mind_id}/"


def snapshot_key(space: Space, epoch: str) -> str:
    return f"{snapshot_mind_prefix(space.user_id, space.mind_id)}{epoch}"


# users' export files (POST /me/exports), in the same bucket under their own prefix (its own lifecycle
# rule and IAM grants), a user's under the hash of their id as their snapshots are
EXPORTS = "exports/"


def export_user_prefix(user_id: str) -> str:
    return f"{EXPORTS}{hashlib.sha256(user_id.encode()).hexdigest()}/"


def export_key(user_id: str, export_id: str) -> str:
    return f"{export_user_prefix(user_id)}{export_id}.jsonl"


@dataclass(frozen=True)
class ParsedKey:
    """What a sort key of a user's partition names: its kind, its mind, and where it has them a
    session and a number (a message's sequence) or a name (a memory id, a provider, a key id)."""

    # nugget history identity version change session message summary marker apikey provider mind
    # proposal webhook delivery export other
    kind: str
    name: str = ""
    session_id: str = ""
    seq: int = 0
    mind_id: str = DEFAULT_MIND


def parse_sk(sk: str) -> ParsedKey:
    """Any sort key of a user's partition, of any mind."""
    head, _, rest = sk.partition(":")
    if _MIND_ID.match(head):
        local = parse_sk(rest)
        return ParsedKey(local.kind, local.name, local.session_id, local.seq, mind_id=head)
    if sk == IDENTITY:
        return ParsedKey("identity")
    if sk == VERSION_TOKEN:
        return ParsedKey("version")
    if head == "nug":
        return ParsedKey("nugget", name=rest)
    if head == "chg":
        return ParsedKey("change", seq=int(rest))
    if head == "hist":
        mem_id, _, version = rest.rpartition(":")
        return ParsedKey("history", name=mem_id, seq=int(version))
    if head == "ses":
        return ParsedKey("session", session_id=rest)
    if head == "prop":
        return ParsedKey("proposal", name=rest)
    if head == "msg":
        sid, _, seq = rest.rpartition(":")
        return ParsedKey("message", session_id=sid, seq=int(seq))
    if head == "sum":
        return ParsedKey("summary", name=chunk_id(sk), session_id=rest.rpartition(":")[0])
    if head == "ing":
        return ParsedKey("marker", session_id=rest.rpartition(":")[0])
    if head == "apikey":
        return ParsedKey("apikey", name=rest)
    if head == "provider":
        return ParsedKey("provider", name=rest)
    if head == "mind":
        return ParsedKey("mind", name=rest, mind_id=rest)
    if head == "webhook":
        return ParsedKey("webhook", name=rest)
    if head == "export":
        return ParsedKey("export", name=rest)
    if head == "whd":
        return ParsedKey("delivery", name=rest.partition(":")[0])
    if head == "mindname":
        return ParsedKey("mindname", name=rest)
    return ParsedKey("other", name=sk)
