"""The transient filter: chatter ("ok", "ขอบคุณครับ", "555", "👍") told from content, Thai and English,
and the text basics the offline rules share (`facts`, `summaries`): normalisation, symbols dropped,
Thai detected. Used by both paths, Gemini's and the rules': a transient message reaches no model.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

__all__ = ["has_thai", "is_transient", "normalize", "strip_symbols"]

_THAI = re.compile(r"[\u0e00-\u0e7f]")
_IGNORABLE = {"\u200d", "\ufe0f", "\ufe0e", "\u200b", "ๆ", "\u20e3"}


def has_thai(text: str) -> bool:
    return bool(_THAI.search(text))


def strip_symbols(text: str) -> str:
    """Drop emoji, symbols, punctuation and joiners; keep letters (Thai marks included), digits, spaces."""
    out = []
    for ch in text:
        if ch in _IGNORABLE:
            out.append(" ")
            continue
        cat = unicodedata.category(ch)
        if cat[0] in ("S", "P") or cat in ("Cf", "Cc"):
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


def normalize(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def _words(joined: str) -> list[str]:
    return joined.split("|")


_EN_TRANSIENT = list(
    _words(
        "ok|okay|okey|okie|k|kk|alright|all right|sure|yes|yeah|yep|yup|no|nope|nah|thanks|thank you|"
        "thank u|thankyou|thanx|thx|ty|tysm|so much|very much|a lot|much appreciated|appreciated|cool|"
        "nice|great|awesome|perfect|good|fine|got it|gotcha|i see|noted|understood|lol|lmao|rofl|hi|"
        "hello|hey|hiya|yo|bye|goodbye|see you|see ya|cya|good morning|good night|good evening|"
        "good afternoon|morning|gm|gn|np|no problem|no worries|you're welcome|youre welcome|welcome|wow|"
        "oh|ah|uh|oops|sorry|please|there|again|too|and|very|so|much|man|dude|bro|buddy|guys|everyone|"
        "all|mate|i'm fine|im fine|i am fine|i'm good|im good|i am good|not bad|me too|same|same here|"
        "right|exactly|true|agreed|actually|well|btw|by the way|anyway|also|just|oh well"
    )
)
_EN_TRANSIENT_RE = [
    r"ha(?:ha)+h?",
    r"he(?:he)+",
    r"hi(?:hi)+",
    r"hm+",
    r"um+",
    r"uh+m*",
    r"o+k+",
    r"ye+s+",
    r"lo+l+",
    r"xd+",
    r"wo+w+",
]
_TH_TRANSIENT = list(
    _words(
        "ขอบคุณ|ขอบใจ|ขอบพระคุณ|มากๆ|มาก|โอเค|โอเช|โอเคร|โอเค้|เค|ครับผม|ครับ|คับ|ค่ะ|คะ|ค่า|คร้าบ|ครัช|"
        "จ้า|จ้ะ|จ๊ะ|จ้าา|นะ|น้า|นะคะ|นะครับ|อื้อ|อือ|เออ|อ๋อ|อ้อ|โอ้|ว้าว|สวัสดี|หวัดดี|ดีจ้า|ดี|เยี่ยม|"
        "เจ๋ง|สุดยอด|ได้เลย|ได้|ใช่|ไม่เป็นไร|ลาก่อน|บาย|แล้วเจอกัน|รับทราบ|เข้าใจแล้ว|เข้าใจ|เลย|ค่ะ|"
        "งับ|ฮะ|จ้ะ|แหละ|ด้วย|ทุกคน|ก่อน"
    )
)
_TH_TRANSIENT_RE = [r"5{2,}\+*", r"ฮ่า+", r"ฮา{2,}", r"อืม+", r"อือ+", r"ครับ+", r"ค่ะ+", r"ค่า+", r"จ้า+", r"คับ+"]


def _build_transient_re() -> re.Pattern[str]:
    en = sorted(
        (re.escape(w).replace(r"\ ", r"\s+").replace("'", r"\s*") for w in _EN_TRANSIENT),
        key=len,
        reverse=True,
    )
    th = sorted((re.escape(w) for w in set(_TH_TRANSIENT)), key=len, reverse=True)
    latin = "|".join([*_EN_TRANSIENT_RE, *en])
    thai = "|".join([*_TH_TRANSIENT_RE, *th])
    token = rf"(?:(?:{latin})(?![a-z])|{thai})"
    return re.compile(rf"^\s*(?:{token}\s*)*$")


_transient_re = cache(_build_transient_re)  # compiled on first use (cold start)


def is_transient(text: str) -> bool:
    """True for messages made only of acknowledgements, thanks, laughter, greetings, polite particles,
    emoji and punctuation (Thai and English); False as soon as there is real content."""
    stripped = normalize(strip_symbols(text))
    if not stripped:
        return True
    return bool(_transient_re().match(stripped))
