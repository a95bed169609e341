"""The offline extractive summary (beside the Gemini summarizer in `llm`): the most informative
sentences kept verbatim. An honest fallback: it paraphrases nothing, except the relative dates of a
message whose `created_at` it is given, which are written as the dates they meant (`dates`), so the
summary stays true when it is read later.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from synapse.ai import dates
from synapse.ai.facts import states_a_fact
from synapse.ai.transient import has_thai, is_transient, normalize
from synapse.core.models.base import DEFAULT_TIMEZONE, Role
from synapse.core.models.chat import ChatMessage as Message

__all__ = ["SUMMARY_MAX_CHARS", "ExtractiveSummarizer"]

SUMMARY_MAX_CHARS = 600

# a full stop after a Thai letter is an abbreviation's (ธ.ค. 2569, พ.ศ.), not a sentence's end
_SENTENCE_SPLIT = re.compile(
    r"(?<=[.!?。])(?<![\u0e00-\u0e7f]\.)\s+|\n+|(?<=[\u0e00-\u0e7f])\s{1,}(?=[\u0e00-\u0e7f])"
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _informativeness(sentence: str, role: Role) -> float:
    words = _WORD.findall(sentence)
    latin = [w for w in words if not has_thai(w)]
    thai_chars = sum(len(w) for w in words if has_thai(w))
    distinct = len({w.casefold() for w in latin}) + thai_chars / 4.0
    score = min(distinct, 25.0)
    if re.search(r"\d", sentence):
        score += 2.0
    if re.search(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+", sentence):
        score += 1.5  # proper nouns
    if states_a_fact(sentence):
        score += 6.0
    if role == Role.user:
        score += 1.5
    return score


class ExtractiveSummarizer:
    """Offline, extractive: the most informative non-transient sentences, verbatim and in their own
    language, in conversation order, at most `max_chars` characters. It paraphrases nothing."""

    def __init__(self, max_chars: int = SUMMARY_MAX_CHARS) -> None:
        self.max_chars = max_chars

    def summarize(
        self, messages: Sequence[Message], previous: str | None = None, *, timezone: str = DEFAULT_TIMEZONE
    ) -> str:
        candidates: list[tuple[float, int, str]] = []
        order = 0
        seen: set[str] = set()
        tz = ZoneInfo(timezone)
        for message in messages:
            if message.role not in (Role.user, Role.assistant):
                continue
            text = message.content
            if message.created_at is not None and not is_transient(text):
                # one line per clause naming its own time, each with its dates written out
                text = "\n".join(c.text for c in dates.dated_clauses(text, message.created_at, tz))
            for raw in _SENTENCE_SPLIT.split(text):
                sentence = " ".join(raw.split())
                if not sentence or is_transient(sentence):
                    continue
                norm = normalize(sentence)
                if norm in seen:
                    continue
                seen.add(norm)
                if len(sentence) > self.max_chars:
                    sentence = sentence[: self.max_chars - 1].rstrip() + "…"
                candidates.append((_informativeness(sentence, message.role), order, sentence))
                order += 1
        chosen: list[tuple[int, str]] = []
        used = 0
        for _score, idx, sentence in sorted(candidates, key=lambda c: (-c[0], c[1])):
            extra = len(sentence) + (1 if chosen else 0)
            if used + extra > self.max_chars:
                continue
            chosen.append((idx, sentence))
            used += extra
        return "\n".join(s for _, s in sorted(chosen))
