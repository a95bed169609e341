"""The offline extractive summary (beside the Gemini summarizer in `llm`): the most informative
sentences kept verbatim. An honest fallback: it paraphrases nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from synapse.ai.facts import states_a_fact
from synapse.ai.transient import has_thai, is_transient, normalize
from synapse.core.models.base import Role
from synapse.core.models.chat import ChatMessage as Message

__all__ = ["SUMMARY_MAX_CHARS", "ExtractiveSummarizer"]

SUMMARY_MAX_CHARS = 600

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。])\s+|\n+|(?<=[\u0e00-\u0e7f])\s{1,}(?=[\u0e00-\u0e7f])")
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

    def summarize(self, messages: Sequence[Message], previous: str | None = None) -> str:
        candidates: list[tuple[float, int, str]] = []
        order = 0
        seen: set[str] = set()
        for message in messages:
            if message.role not in (Role.user, Role.assistant):
                continue
            for raw in _SENTENCE_SPLIT.split(message.content):
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
