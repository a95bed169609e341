"""What every model stands on: the enums, the patterns and bounds, the field types (timestamps, tags,
text, numbers), the `Model` and `Body` bases, the scopes and the error envelope.

No `from __future__ import annotations` in this package: pydantic would compile and eval every field's
string annotation when each class is created (a cold-start cost).
"""

import re
import unicodedata
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import unquote

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    WithJsonSchema,
)
from pydantic.json_schema import SkipJsonSchema


class Category(StrEnum):
    identity = "identity"
    preference = "preference"
    fact = "fact"
    project = "project"
    skill = "skill"
    mistake = "mistake"
    context = "context"
    note = "note"


class Priority(StrEnum):
    low = "low"
    normal = "normal"
    high = "high"
    critical = "critical"


PRIORITY_RANK = {Priority.low: 0, Priority.normal: 1, Priority.high: 2, Priority.critical: 3}


class Source(StrEnum):
    user = "user"
    agent = "agent"


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    system = "system"
    tool = "tool"


# --- shared field types -------------------------------------------------------------------


USER_ID_RE = re.compile(r"^[A-Za-z0-9._@-]{1,128}$")
SESSION_ID_PATTERN = r"^[A-Za-z0-9._-]{1,128}$"
SESSION_ID_RE = re.compile(SESSION_ID_PATTERN)
KEY_PATTERN = r"^[a-z0-9][a-z0-9_]{0,99}$"
MIND_ID_PATTERN = r"^(default|m_[a-z0-9]{12})$"
DEFAULT_MIND = "default"
# GET /memory/expiring?within=: a number and a unit (memories.parse_window also bounds it)
WITHIN_PATTERN = r"^\s*(\d{1,6})\s*([mhd])\s*$"
# content and queries: any text but U+0000 (the pattern documents it; _no_nul enforces it)
NO_NUL_PATTERN = r"^[^\x00]*$"
MAX_CONTENT = 8000
MAX_QUERY = 2000
MAX_TAGS = 20
MAX_TAG_LEN = 50


def utcnow() -> datetime:
    """Now, UTC, to the second (the API's timestamps carry no fractions)."""
    return datetime.now(UTC).replace(microsecond=0)


def _as_utc(value: datetime) -> datetime:
    # A naive timestamp is taken as UTC; everything is stored and shown in UTC.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+05:00: before year 1 in UTC
        raise ValueError("the timestamp is out of range") from exc


def iso(value: datetime) -> str:
    # isoformat pads the year to 4 digits (strftime's %Y does not on Linux: "133-05-21...")
    return _as_utc(value).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


def parse_iso(value: str) -> datetime:
    return _as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))


Timestamp = Annotated[datetime, AfterValidator(_as_utc), PlainSerializer(iso, return_type=str)]


UserId = Annotated[str, StringConstraints(pattern=USER_ID_RE.pattern)]
SessionId = Annotated[str, StringConstraints(pattern=SESSION_ID_PATTERN)]
MemoryKey = Annotated[str, StringConstraints(pattern=KEY_PATTERN)]


def _percent_decoded(value: Any) -> Any:
    return unquote(value) if isinstance(value, str) else value


# Text path parameters: Powertools matches routes on the raw path, so `alice%40example.com` arrives
# encoded; it is decoded once (the outer validator runs first), then its pattern is checked.
UserIdPath = Annotated[str, StringConstraints(pattern=USER_ID_RE.pattern), BeforeValidator(_percent_decoded)]
SessionIdPath = Annotated[
    str, StringConstraints(pattern=SESSION_ID_PATTERN), BeforeValidator(_percent_decoded)
]


# --- tags -------------------------------------------------------------------------------------
# One rule for every tag, written or read: NFKC, then Unicode Cc and Cf characters out (NUL, zero-width
# spaces, BOM, soft hyphen, ZWJ), case-folded, NFKC again (case folding can decompose: "ǰ"), trimmed.
# So "café" (NFC) and "café" (NFD) are one tag, and "ｄｏｃｋｅｒ", "DOCKER", "do\u200bcker" are "docker".
# (Lone surrogates, Cs, go too: no UTF-8 text holds them. A client's tag with one is a 422: check_tag.)
_INVISIBLE = frozenset(("Cc", "Cf", "Cs"))


def normalize_tag(tag: str) -> str:
    """The canonical form of one tag ("" when nothing is left of it)."""
    text = unicodedata.normalize("NFKC", tag)
    if not (text.isascii() and text.isprintable()):
        text = "".join(ch for ch in text if unicodedata.category(ch) not in _INVISIBLE)
    return unicodedata.normalize("NFKC", text.casefold()).strip()


def normalize_tags(tags: list[str]) -> list[str]:
    """Normalise, drop empties and duplicates, keep first-seen order (for tags the service makes
    itself, e.g. extracted ones; a client's tags go through `Tag`, where an empty one is a 422)."""
    seen: dict[str, None] = {}
    for tag in tags:
        clean = normalize_tag(tag)
        if clean:
            seen.setdefault(clean, None)
    return list(seen)


def check_tag(tag: str) -> str:
    """A client's tag (body or `?tag=`), normalised; empty or too long after that is a ValueError."""
    try:
        tag.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("a tag must be Unicode text (a lone surrogate is not)") from exc
    clean = normalize_tag(tag)
    if not clean:
        raise ValueError("a tag must not be empty (after removing spaces and invisible characters)")
    if len(clean) > MAX_TAG_LEN:
        raise ValueError(f"a tag is at most {MAX_TAG_LEN} characters")
    return clean


def _unique(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))


# The length is measured on the normalised tag (what is stored), so the schema's bounds are documented
# here rather than enforced on the text as sent.
TAG_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_TAG_LEN,
    "description": (
        "NFKC-normalised, stripped of control and format characters (Unicode Cc, Cf), case-folded "
        f"and trimmed; 1-{MAX_TAG_LEN} characters after that"
    ),
}
Tag = Annotated[str, AfterValidator(check_tag), WithJsonSchema(TAG_SCHEMA)]
# at most 20 as sent (counted before duplicates merge), each normalised, then de-duplicated
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS), AfterValidator(_unique)]


# --- text, numbers and timestamps of request bodies ---------------------------------------------


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000)")
    return value


def not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _json_number(value: Any) -> Any:
    """JSON numbers are numbers: "0.5" and true are refused (pydantic's lax mode would take them)."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not a boolean")
    if isinstance(value, str):
        raise ValueError("must be a number, not a string")
    return value


def _finite_unit(value: float) -> float:
    if not 0.0 <= value <= 1.0:  # NaN fails this too
        raise ValueError("must be a finite number between 0 and 1")
    return value


def _timestamp_text(value: Any) -> Any:
    """A timestamp in a body is an ISO 8601 string (lax mode would read a number as Unix time)."""
    if isinstance(value, str | datetime):
        return value
    raise ValueError("must be an ISO 8601 timestamp string, like 2026-12-02T10:00:00Z")


NoNulText = Annotated[str, AfterValidator(_no_nul)]
# text of a request body: 1-8,000 characters, no U+0000
Text = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_CONTENT),
    AfterValidator(_no_nul),
    Field(json_schema_extra={"pattern": NO_NUL_PATTERN}),
]
Content = Annotated[Text, AfterValidator(not_blank)]
QueryText = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_QUERY),
    AfterValidator(_no_nul),
    AfterValidator(not_blank),
    Field(json_schema_extra={"pattern": NO_NUL_PATTERN}),
]
# numbers of a request body (query-string values are text, parsed by the resolver as before)
Confidence = Annotated[
    float,
    BeforeValidator(_json_number),
    AfterValidator(_finite_unit),
    # documented, and enforced by _finite_unit with one message for NaN, infinity and out of range
    WithJsonSchema({"type": "number", "minimum": 0.0, "maximum": 1.0}),
]
TimestampIn = Annotated[
    datetime,
    BeforeValidator(_timestamp_text),
    AfterValidator(_as_utc),
    PlainSerializer(iso, return_type=str),
]
# an integer of a request body (bounds at the field); a string or a boolean is refused
JsonInt = Annotated[int, BeforeValidator(_json_number)]

# --- time (third release) ---------------------------------------------------------------------

DEFAULT_TIMEZONE = "UTC"
FUTURE_SLACK = timedelta(minutes=5)  # a message said later than now + this is refused
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _iana(name: str) -> str:
    """An IANA time zone name the runtime knows (`Asia/Bangkok`, `UTC`); the tz database comes with
    the `tzdata` package, so a Lambda image without /usr/share/zoneinfo knows them too."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # (only requests that name a zone pay it)

    if not 1 <= len(name) <= 64 or name.startswith(("/", ".")) or ".." in name:
        raise ValueError("must be an IANA time zone name, like Asia/Bangkok or UTC")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError("must be an IANA time zone name, like Asia/Bangkok or UTC") from exc
    return name


def _rfc3339(value: Any) -> Any:
    """RFC 3339: a timestamp string with `Z` or an offset (a naive one would need a timezone to mean
    anything, and the API's timestamps are UTC)."""
    value = _timestamp_text(value)
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        if parsed.tzinfo is None:
            raise ValueError("must be an RFC 3339 timestamp with Z or an offset, like 2026-12-02T10:00:00Z")
        return parsed
    return value


def _day_or_moment(value: Any) -> Any:
    """`valid_at` in a body: an RFC 3339 timestamp, or a date `YYYY-MM-DD` (00:00 of that day in the
    mind's timezone: kept as a date here, placed in time by the write)."""
    if isinstance(value, str) and _DATE_ONLY.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError as exc:
            raise ValueError("must be a real date YYYY-MM-DD, or an RFC 3339 timestamp") from exc
    return _rfc3339(value)


TimezoneName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=64),
    AfterValidator(_iana),
    Field(description="An IANA time zone name, like Asia/Bangkok (default UTC)", examples=["Asia/Bangkok"]),
]
# RFC 3339 with Z or an offset, answered in UTC with Z
Rfc3339In = Annotated[
    datetime,
    BeforeValidator(_rfc3339),
    AfterValidator(_as_utc),
    PlainSerializer(iso, return_type=str),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
# valid_at on writes: RFC 3339, or a date meaning 00:00 of that day in the mind's timezone
DayOrMoment = Annotated[
    datetime | date,
    BeforeValidator(_day_or_moment),
    WithJsonSchema(
        {
            "anyOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}],
            "description": "RFC 3339, or YYYY-MM-DD: 00:00 of that day in the mind's timezone",
        }
    ),
]


def _not_later_than_now(value: datetime) -> datetime:
    if value > utcnow() + FUTURE_SLACK:
        raise ValueError("must not be later than now (5 minutes of clock skew are allowed)")
    return value


# when a message was said: RFC 3339, not in the future
SaidAt = Annotated[Rfc3339In, AfterValidator(_not_later_than_now)]


def at_midnight(day: date, timezone: str) -> datetime:
    """00:00 of `day` in `timezone`, in UTC."""
    from zoneinfo import ZoneInfo

    return datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(timezone)).astimezone(UTC)


class Model(BaseModel):
    """Every model here: validators are built on first use, not at import. A function uses a few of
    these models, and building all of them is a cold-start cost every function would pay."""

    model_config = ConfigDict(defer_build=True)


class Body(Model):
    """Request bodies: unknown fields are ignored (never trusted), strings kept as sent (tags aside),
    numbers must be JSON numbers (`Confidence`, `JsonInt`) and timestamps strings (`TimestampIn`)."""

    model_config = ConfigDict(extra="ignore")


class Change(StrEnum):
    """What made a version of a memory."""

    created = "created"
    updated = "updated"
    verified = "verified"
    restored = "restored"


# --- scopes, minds, providers, small answers ----------------------------------------------------


class Scope(StrEnum):
    read = "memory:read"
    write = "memory:write"


MindId = Annotated[str, StringConstraints(pattern=MIND_ID_PATTERN)]


class Health(Model):
    status: str = "ok"


class Provider(StrEnum):
    """The model providers a user can bring a key for (the `{provider}` of /providers)."""

    gemini = "gemini"


class Deleted(Model):
    deleted: int


# --- the error envelope (documentation: http.envelope builds the answers) -----------------------


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class ErrorDetail(Model):
    model_config = ConfigDict(extra="forbid")

    loc: list[str | int] = Field(description='Where: ["body", "tags", 0], ["query", "limit"], ...')
    msg: str


class ErrorInfo(Model):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(
        description=(
            "invalid_json (400), unauthorized (401), forbidden (403), not_found (404), conflict (409), "
            "gone (410: a change-feed position older than what is kept), payload_too_large (413), "
            "validation_error (422), rate_limited (429), internal_error (500), upstream_unavailable (503)"
        )
    )
    message: str = Field(description="One human sentence")
    # omitted when there are none (never null)
    details: list[ErrorDetail] | SkipJsonSchema[None] = Field(default=None, json_schema_extra=_no_default)


class ErrorEnvelope(Model):
    """Every non-2xx answer: {"error": {"code", "message", "details"?}}."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorInfo
