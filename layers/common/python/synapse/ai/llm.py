"""Extraction of memory nuggets from a conversation, and session summaries, through Gemini.

`GeminiExtractor` and `GeminiSummarizer`: one `generate_content` call each, structured JSON output with
a pydantic response schema for extraction; used when a Gemini key is available. Without one the
factories give the offline ones (`facts.RuleExtractor`, `summaries.ExtractiveSummarizer`), which are
also the fallback when Gemini's answer is unusable; `transient` keeps chatter from both. `google.genai`
is imported only inside the calls.

Time: each message's `created_at` is shown to the model in the timezone given (with its weekday), and
the model is asked to write relative dates as absolute ones in the nugget's language and to give a
nugget about a moment its `valid_at`. A `valid_at` it gets wrong (no date, nonsense) is dropped; a
nugget without one takes the time of the message it came from. Messages without `created_at` are
shown without a time, and then nothing is said about time at all.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from synapse.ai.embeddings import GeminiCaller, upstream_guard
from synapse.ai.facts import RuleExtractor
from synapse.ai.summaries import ExtractiveSummarizer
from synapse.ai.transient import is_transient
from synapse.core.config import settings
from synapse.core.models.base import (
    DEFAULT_TIMEZONE,
    MAX_CONTENT,
    MAX_TAG_LEN,
    MAX_TAGS,
    Category,
    Priority,
    Role,
)
from synapse.core.models.chat import SUPERSEDES_PATTERN, ExistingKey, ExtractedNugget
from synapse.core.models.chat import ChatMessage as Message

if TYPE_CHECKING:
    from google import genai

__all__ = [
    "ExistingKey",
    "ExtractedNugget",
    "Extractor",
    "GeminiExtractor",
    "GeminiSummarizer",
    "Message",
    "Summarizer",
    "get_extractor",
    "get_summarizer",
]

logger = logging.getLogger(__name__)

LLM_UNAVAILABLE = "The language model service is unavailable; try again shortly."


class Extractor(Protocol):
    def extract(
        self,
        messages: Sequence[Message],
        existing: Sequence[ExistingKey],
        related: Sequence[ExistingKey] = (),
        *,
        timezone: str = DEFAULT_TIMEZONE,
    ) -> list[ExtractedNugget]:
        """Nuggets worth remembering from `messages`; transient chatter yields nothing. `related`:
        the mind's memories most like what the messages say (a nugget may supersede one of them).
        Relative dates are read against each message's `created_at` in `timezone` (IANA); every
        nugget of a message with a time has a `valid_at`."""
        ...


class Summarizer(Protocol):
    def summarize(
        self, messages: Sequence[Message], previous: str | None = None, *, timezone: str = DEFAULT_TIMEZONE
    ) -> str:
        """A short summary of `messages` in their language (`previous` is the last chunk's summary),
        with the relative dates of messages that have a `created_at` stated as dates in `timezone`."""
        ...


# --- Gemini --------------------------------------------------------------------------------------------


class _NuggetOut(BaseModel):
    """The response schema of one nugget (loose: each is validated after, invalid ones dropped)."""

    category: Category = Field(description="One of the eight categories.")
    key: str = Field(description="Stable snake_case key, [a-z0-9_], max 100 chars; reuse an existing key.")
    content: str = Field(description="The fact, short, in the user's own language.")
    tags: list[str] = Field(description="1-5 short lower-case tags.")
    priority: Priority = Field(description="low, normal, high or critical.")
    confidence: float = Field(description="0.0-1.0: how sure the fact is stated by the user.")
    is_identity: bool = Field(description="True if it belongs in the one-line identity of the user.")
    valid_at: str | None = Field(
        default=None,
        description="When what it says happens or became true: YYYY-MM-DD, or YYYY-MM-DDTHH:MM with the"
        " offset when the message states the time of day; null when it is about no moment.",
    )
    message: int | None = Field(default=None, description="The [n] of the message it comes from.")
    supersedes: str | None = Field(
        default=None,
        description=(
            "category/key of an existing memory (from the related ones) that this fact replaces under "
            "another key, e.g. identity/user_location when the user moved and this is identity/home_city; "
            "null when it replaces none or reuses that memory's own key."
        ),
    )


class ExtractionResult(BaseModel):
    """The response schema of an extraction call."""

    model_config = ConfigDict(title="ExtractionResult")
    nuggets: list[_NuggetOut]


_CATEGORIES_HELP = """\
- identity: who the user is — name, nickname, where they live, where they work, job, languages spoken.
- preference: what the user likes, dislikes or prefers — tools, themes, food, styles, reply language.
- fact: a durable fact about the user's world (family, pets, possessions, dates, health they share).
- project: something the user is building or working on, with its status.
- skill: something the user knows or is learning, and how well.
- mistake: an error made in the conversation and its correction, to avoid repeating it.
- context: situational context worth recalling later (plans, current tasks, events, circumstances).
- note: anything else the user explicitly asks to remember."""

_EXTRACT_INSTRUCTIONS = """\
You extract long-term memories about the USER from a conversation between a user and an assistant.

Categories:
{categories}

Rules:
- Extract only what the user said or confirmed about themselves and their world; never the
  assistant's suggestions as facts.
- Skip transient chatter: greetings, thanks, acknowledgements, laughter ("ok", "ขอบคุณครับ", "555").
- Each nugget is one self-contained fact, short (under 200 characters).
- Write `content` in the user's own language: Thai stays Thai, English stays English. Keep names,
  places and product names as the user wrote them.
- `key` is a stable snake_case identifier of the SLOT the fact fills, not of its value: e.g.
  identity/user_name, identity/user_location, identity/user_workplace, identity/user_job,
  identity/user_languages, preference/theme, preference/editor, preference/pref_coffee.
  ASCII only, [a-z0-9_], starting with a letter or digit, at most 100 characters.
- When a fact changes or refines one the user already has (below), reuse that exact category and
  key so the old memory is updated, and write the new content in full.
- is_identity is true for the few facts that describe who the user is and what they prefer
  (name, location, job, languages, main preferences).
- priority: high for name and critical constraints, normal for most facts, low for passing context.
- When a fact makes an existing memory under ANOTHER key no longer true (the user moved, changed
  job, switched tools), set `supersedes` to that memory's category/key: the old one is then hidden.
  Prefer reusing the old key instead when it names the same slot. Never supersede what is still true.
- Return {{"nuggets": []}} when there is nothing worth remembering.
{time}
The user's existing memories (category/key: content):
{existing}

The user's memories most related to this conversation (category/key: content), which a new fact may
update (same key) or supersede (another key):
{related}"""

_TIME_RULES = """
Time (the user's timezone is {timezone}):
- Each message shows when it was said there: [n] YYYY-MM-DD HH:MM (weekday).
- Resolve relative dates ("yesterday", "tomorrow", "last week", "next month", "on Monday", "3 days
  ago", "เมื่อวาน", "พรุ่งนี้", "สัปดาห์ที่แล้ว", "เดือนหน้า", "อีก 3 วัน") against the time of the message
  that says them, and write the absolute date in `content` instead of the relative words, in the
  content's language: English "3 December 2026", "November 2026"; Thai with Thai month abbreviations
  and the Buddhist Era year (CE + 543), e.g. "ไปหาหมอฟัน (3 ธ.ค. 2569)", "พ.ย. 2569". A Thai year
  of 2400 or more is already Buddhist Era (พ.ศ. 2569 = 2026).
- `valid_at`: for a nugget about a moment (an appointment, a trip, a move, an event, a change), the
  day it happens or became true as YYYY-MM-DD, in the user's timezone; add the time of day
  (YYYY-MM-DDTHH:MM with the offset) only when the message states it. Never invent a date or a time:
  null when the nugget is about no moment. `message`: the [n] of the message the nugget comes from.
"""


def _format_existing(existing: Sequence[ExistingKey], limit: int = 200) -> str:
    if not existing:
        return "(none yet)"
    lines = [f"- {e.category.value}/{e.key}: {' '.join(e.content.split())[:200]}" for e in existing[:limit]]
    return "\n".join(lines)


def _said(moment: datetime, tz: ZoneInfo) -> str:
    """When a message was said, for the prompt: local date, time and weekday ("2026-12-04 10:00 (Friday)")."""
    local = moment.astimezone(tz)
    return f"{local:%Y-%m-%d %H:%M} ({local:%A})"


def _format_conversation(messages: Sequence[Message], tz: ZoneInfo | None = None) -> str:
    """One line per message; with `tz`, each message's time (those that have one)."""
    lines = []
    for i, m in enumerate(messages, 1):
        when = f" {_said(m.created_at, tz)}" if tz is not None and m.created_at is not None else ""
        lines.append(f"[{i}]{when} {m.role.value}: {m.content}")
    return "\n".join(lines)


_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SANE_YEARS = range(1900, 2201)


def _valid_at(value: Any, tz: ZoneInfo) -> datetime | None:
    """The model's `valid_at` in UTC: a date is 00:00 of that day in `tz`, a date-time without an
    offset is read in `tz`. None for anything else (not a string, not a date, an absurd year)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        if _DAY.match(text):
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=tz)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=tz)
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.year in _SANE_YEARS else None


def _repair_nugget(
    item: Any, tz: ZoneInfo | None = None, said: Sequence[datetime | None] = ()
) -> ExtractedNugget | None:
    """Validate one model-proposed nugget; light repairs (key case, tags, valid_at), None if still
    invalid. `said[n - 1]` is when message [n] was said: a nugget without a usable `valid_at` takes
    its message's time (the latest one with a time when the model named none)."""
    if not isinstance(item, dict):
        return None
    data = dict(item)
    source = data.pop("message", None)
    valid_at = _valid_at(data.pop("valid_at", None), tz) if tz is not None else None
    if valid_at is None and said:
        known = isinstance(source, int) and not isinstance(source, bool) and 1 <= source <= len(said)
        valid_at = said[source - 1] if known else None
        valid_at = valid_at or next((t for t in reversed(said) if t is not None), None)
    data["valid_at"] = valid_at
    key = data.get("key")
    if isinstance(key, str):
        key = re.sub(r"[^a-z0-9_]+", "_", key.strip().lower()).strip("_")[:100]
        data["key"] = key
    tags = data.get("tags")
    if isinstance(tags, list):
        clean: list[str] = []
        for t in tags:
            if isinstance(t, str) and t.strip():
                tag = t.strip().lower()[:MAX_TAG_LEN]
                if tag not in clean:
                    clean.append(tag)
        data["tags"] = clean[:MAX_TAGS]
    supersedes = data.get("supersedes")
    if supersedes is not None and not (
        isinstance(supersedes, str) and re.match(SUPERSEDES_PATTERN, supersedes.strip().lower())
    ):
        data["supersedes"] = None  # a reference the model garbled: the nugget stands on its own
    elif isinstance(supersedes, str):
        data["supersedes"] = supersedes.strip().lower()
    content = data.get("content")
    if isinstance(content, str):
        data["content"] = content.strip()[:MAX_CONTENT]
    if isinstance(data.get("confidence"), int | float):
        data["confidence"] = min(1.0, max(0.0, float(data["confidence"])))
    try:
        return ExtractedNugget.model_validate(data)
    except ValidationError:
        return None


def _parse_nuggets(
    text: str, tz: ZoneInfo | None = None, said: Sequence[datetime | None] = ()
) -> list[ExtractedNugget] | None:
    """Nuggets from the model's JSON text; None if it is not JSON of the expected shape at all."""
    try:
        payload = json.loads(text)
    except (TypeError, ValueError):
        return None
    items: Any = payload.get("nuggets") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        return None
    out: dict[tuple[Category, str], ExtractedNugget] = {}
    for item in items:
        nugget = _repair_nugget(item, tz, said)
        if nugget is not None:
            out[(nugget.category, nugget.key)] = nugget
    return list(out.values())


class _GeminiBase(GeminiCaller):
    def __init__(
        self, api_key: str | None = None, *, model: str | None = None, client: genai.Client | None = None
    ) -> None:
        super().__init__(api_key or settings().gemini_api_key, client)
        self.model: str = model or settings().llm_model

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(model={self.model!r})"


class GeminiExtractor(_GeminiBase):
    """One `generate_content` call per ingest, JSON output constrained by `ExtractionResult`."""

    def extract(
        self,
        messages: Sequence[Message],
        existing: Sequence[ExistingKey] = (),
        related: Sequence[ExistingKey] = (),
        *,
        timezone: str = DEFAULT_TIMEZONE,
    ) -> list[ExtractedNugget]:
        from google.genai import types

        kept = [m for m in messages if m.content.strip() and not is_transient(m.content)]
        if not any(m.role == Role.user for m in kept):
            return []
        said = [m.created_at for m in kept]
        tz = ZoneInfo(timezone) if any(said) else None
        config = types.GenerateContentConfig(
            system_instruction=_EXTRACT_INSTRUCTIONS.format(
                categories=_CATEGORIES_HELP,
                existing=_format_existing(existing),
                time=_TIME_RULES.format(timezone=timezone) if tz is not None else "",
                related=_format_existing(related),
            ),
            response_mime_type="application/json",
            response_schema=ExtractionResult,
            temperature=0.1,
        )
        prompt = "Conversation:\n" + _format_conversation(kept, tz)
        with upstream_guard(LLM_UNAVAILABLE):
            response = self.client.models.generate_content(model=self.model, contents=prompt, config=config)
        text = response.text or ""
        nuggets = _parse_nuggets(text, tz, said if tz is not None else ())
        if nuggets is None:
            logger.warning("gemini extraction returned no usable JSON; falling back to rules")
            return RuleExtractor().extract(messages, existing, timezone=timezone)
        return nuggets


_SUMMARY_INSTRUCTIONS = """\
Summarize the conversation below for the assistant's long-term memory, in plain text (no markdown,
no lists), at most 120 words, in the language the conversation is in (Thai stays Thai). Keep the
user's facts, decisions, open questions and commitments; drop greetings and chatter.{time}{previous}"""

_SUMMARY_TIME = """
Each message shows when it was said, in the user's timezone ({timezone}). The summary is read later:
write dates absolutely ("on 3 December 2026"; Thai "3 ธ.ค. 2569", Buddhist Era year), never
"yesterday", "tomorrow", "last week" or "เมื่อวาน"; never invent a date the messages do not give."""


class GeminiSummarizer(_GeminiBase):
    """One `generate_content` call; a plain-text summary in the conversation's language."""

    def summarize(
        self, messages: Sequence[Message], previous: str | None = None, *, timezone: str = DEFAULT_TIMEZONE
    ) -> str:
        from google.genai import types

        kept = [m for m in messages if m.content.strip() and not is_transient(m.content)]
        if not kept:
            return ""
        tz = ZoneInfo(timezone) if any(m.created_at for m in kept) else None
        prev = f"\n\nThe summary of the conversation so far, for context:\n{previous}" if previous else ""
        time = _SUMMARY_TIME.format(timezone=timezone) if tz is not None else ""
        config = types.GenerateContentConfig(
            system_instruction=_SUMMARY_INSTRUCTIONS.format(time=time, previous=prev),
            temperature=0.2,
            max_output_tokens=512,
        )
        with upstream_guard(LLM_UNAVAILABLE):
            response = self.client.models.generate_content(
                model=self.model, contents="Conversation:\n" + _format_conversation(kept, tz), config=config
            )
        text = (response.text or "").strip()
        return text or ExtractiveSummarizer().summarize(messages, previous, timezone=timezone)


# --- factories -----------------------------------------------------------------------------------------


def get_extractor(api_key: str | None = None) -> Extractor:
    """Gemini when a key is at hand (the user's own, else GEMINI_API_KEY), else the rules."""
    key = api_key or settings().gemini_api_key
    return GeminiExtractor(key) if key else RuleExtractor()


def get_summarizer(api_key: str | None = None) -> Summarizer:
    """Gemini when a key is at hand, else the extractive summarizer."""
    key = api_key or settings().gemini_api_key
    return GeminiSummarizer(key) if key else ExtractiveSummarizer()
