"""The offline rule extractor, Thai and English (beside the Gemini extractor in `llm`, as
`embeddings_local` is beside `embeddings`).

`RuleExtractor` catches names, places, work, jobs, likes/dislikes, tools and spoken languages, and
keeps every other substantive user message as a `context` nugget so nothing said is lost. An honest
fallback: it understands nothing.

Time: a message with its `created_at` is read with `dates` in the given timezone. A message naming
two times ("เมื่อวาน... พรุ่งนี้...") is split into its clauses, each a context nugget of its own whose
relative words are rewritten into the date they meant (`ไปหาหมอฟัน (3 ธ.ค. 2569)`), with that date as
`valid_at`. A fact keeps its stable key, but its content states the date its sentence names, in the
fact's language ("Moved to Bangkok in November 2026", not "Lives in Bangkok last month"). Every
nugget of a timed message gets a `valid_at`: the date it names, else when the message was said.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache
from zoneinfo import ZoneInfo

from synapse.ai import dates
from synapse.ai.transient import is_transient, normalize, strip_symbols
from synapse.core.models.base import DEFAULT_TIMEZONE, MAX_CONTENT, Category, Priority, Role
from synapse.core.models.chat import ChatMessage as Message
from synapse.core.models.chat import ExistingKey, ExtractedNugget

__all__ = ["RuleExtractor", "states_a_fact"]


def _words(joined: str) -> list[str]:
    return joined.split("|")


def _short_hash(text: str, n: int = 10) -> str:
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()[:n]


def _slug(text: str) -> str:
    """ASCII snake_case slug; non-ASCII text gets a short stable hash (Thai objects, names)."""
    norm = normalize(text)
    norm = re.sub(r"^(?:the|a|an|my|some)\s+", "", norm)
    ascii_part = re.sub(r"[^a-z0-9]+", "_", norm).strip("_")[:40].strip("_")
    if ascii_part and norm.isascii():
        return ascii_part
    digest = _short_hash(norm, 8)
    return f"{ascii_part}_{digest}" if ascii_part else digest


_TH_PARTICLES = re.compile(
    r"(?:\s*(?:นะครับ|นะคะ|ครับผม|ครับ+|คับ|ค่ะ|คะ|ค่า|จ้า+|จ้ะ|จ๊ะ|นะ|น้า|ฮะ|งับ|เลย|ด้วย|มากๆ|มาก|ที่สุด|แหละ|อ่ะ|อะ|แล้ว|อยู่|กว่า|มากกว่า))+$"
)
_EN_TRAILING = re.compile(
    r"(?:\s+(?:now|currently|these days|at the moment|right now|too|as well|a lot|very much|so much|"
    r"anymore|any more|though|actually|really|haha|lol))+$",
    re.IGNORECASE,
)
_EDGE_JUNK = re.compile(r"^[\s\"'“”‘’(\[\-–—:,]+|[\s\"'“”‘’)\].,!?;:…\-–—~]+$")

_PRONOUN_TH = r"(?:ผม|ฉัน|ดิฉัน|หนู|เรา|กระผม|ข้า|เค้า|เขา(?=ชื่อ))"
_SEG_SPLIT = re.compile(
    r"[.!?;\n。]+(?:\s+|$)"
    r"|,\s*(?=(?:and\s+|but\s+|also\s+)?(?:i|i'm|im|i've|my|me)\b)"
    r"|\s+(?:and|but|also)\s+(?=(?:i|i'm|im|i've|my)\b)"
    r"|\s+(?=(?:และ|แล้วก็|แต่|ส่วน)?\s*(?:"
    + _PRONOUN_TH
    + r"|ชื่อ|อยู่|อาศัย|ทำงาน|อาชีพ|ชอบ|ไม่ชอบ|เกลียด|พูด|ใช้|ตอนนี้|ขอบคุณ))",
    re.IGNORECASE,
)

_JOB_WORDS = set(
    _words(
        "accountant|admin|administrator|analyst|architect|artist|ceo|cfo|chef|co-founder|cofounder|"
        "consultant|cook|cto|dentist|designer|developer|devops|director|doctor|driver|economist|editor|"
        "electrician|engineer|entrepreneur|farmer|founder|freelancer|intern|investor|journalist|lawyer|"
        "lead|lecturer|manager|marketer|mechanic|musician|nurse|nutritionist|officer|owner|pharmacist|"
        "photographer|pilot|pm|professor|programmer|psychologist|researcher|salesperson|scientist|"
        "specialist|sre|streamer|student|teacher|technician|tester|therapist|trader|translator|tutor|vet|"
        "veterinarian|writer|youtuber"
    )
)
_TH_JOB = re.compile(
    r"^(?:นัก\S+|วิศวกร|โปรแกรมเมอร์|ครู|อาจารย์|หมอ|แพทย์|พยาบาล|ทนาย|ดีไซเนอร์|เชฟ|พ่อครัว|แม่ครัว|"
    r"พนักงาน|ผู้จัดการ|เจ้าของ|ฟรีแลนซ์|ฟรีแลนซ์|เภสัชกร|ทันตแพทย์|สถาปนิก|ช่าง|ข้าราชการ|ตำรวจ|ทหาร|"
    r"เกษตรกร|ชาวนา|แม่ค้า|พ่อค้า|ผู้บริหาร|ซีอีโอ|สตาร์ทอัพ|developer|engineer|designer|programmer)"
)
_NON_NAMES = set(
    _words(
        "a|afraid|also|american|an|at|back|british|busy|chinese|confused|curious|done|english|excited|"
        "fine|french|from|german|glad|going|good|happy|here|home|hungry|in|indian|interested|japanese|"
        "just|learning|looking|lost|new|not|ok|okay|on|ready|really|sad|so|sorry|still|stuck|sure|thai|"
        "the|tired|trying|using|very|working"
    )
)
_EDITORS = re.compile(
    r"\b(?:vim|neovim|nvim|emacs|vs\s?code|visual studio code|visual studio|cursor|zed|sublime(?: text)?|"
    r"intellij(?: idea)?|pycharm|webstorm|goland|jetbrains|nano|helix|xcode|android studio|notepad\+\+)\b",
    re.IGNORECASE,
)
_THEME = re.compile(
    r"(?:\b(?:dark|light)\s*(?:mode|theme)\b|(?:ธีม|โหมด)\s*(?:สี)?\s*(?:มืด|ดำ|สว่าง|ขาว|dark|light))",
    re.IGNORECASE,
)
_NATURAL_LANGS = re.compile(
    r"^(?:thai|english|japanese|chinese|mandarin|korean|french|german|spanish|vietnamese|lao|burmese|"
    r"ภาษา\S+|ไทย|อังกฤษ|ญี่ปุ่น|จีน|เกาหลี)(?:\s+language)?$",
    re.IGNORECASE,
)


def _clean(value: str, *, max_words: int | None = None, cut: str | None = None) -> str:
    v = value.strip()
    if cut:
        v = re.split(cut, v, maxsplit=1, flags=re.IGNORECASE)[0]
    v = _EDGE_JUNK.sub("", v)
    for _ in range(3):
        v = _TH_PARTICLES.sub("", v)
        v = _EN_TRAILING.sub("", v)
        v = _EDGE_JUNK.sub("", v)
    v = " ".join(v.split())
    if max_words is not None:
        v = " ".join(v.split()[:max_words])
    return v[:200]


@dataclass(frozen=True)
class _Fact:
    category: Category
    key: str
    content: str
    tags: tuple[str, ...]
    priority: Priority
    confidence: float
    # the wording when the sentence names a date ("Moved to Bangkok" + " in November 2026"), if not
    # `content`'s; and the language the rule words its content in ("en" or "th")
    dated: str | None = None
    lang: str = "en"


def _fact(
    category: Category, key: str, content: str, tags: Iterable[str], priority: Priority, confidence: float
) -> _Fact:
    return _Fact(category, key, content, tuple(tags), priority, confidence)


_EN_VERB = {
    "like": "Likes",
    "love": "Loves",
    "enjoy": "Enjoys",
    "adore": "Loves",
    "prefer": "Prefers",
    "into": "Likes",
    "fan": "Likes",
    "use": "Uses",
    "switched": "Now uses",
}


def _preference(obj: str, verb: str, thai: bool, original_verb_th: str = "ชอบ") -> _Fact | None:
    """A like/preference: exclusive slots (theme, editor, reply language) get one stable key each."""
    if not obj:
        return None
    content = f"{original_verb_th} {obj}" if thai else f"{_EN_VERB.get(verb, 'Likes')} {obj}"
    if _THEME.search(obj):
        return _fact(Category.preference, "theme", content, ("preference", "theme"), Priority.normal, 0.85)
    if _EDITORS.search(obj):
        return _fact(
            Category.preference, "editor", content, ("preference", "editor", "tool"), Priority.normal, 0.8
        )
    if verb == "prefer" and _NATURAL_LANGS.match(obj):
        return _fact(
            Category.preference,
            "response_language",
            content,
            ("preference", "language"),
            Priority.normal,
            0.8,
        )
    if verb in ("use", "switched"):
        return _fact(Category.preference, "main_tool", content, ("preference", "tool"), Priority.normal, 0.8)
    return _fact(
        Category.preference, f"pref_{_slug(obj)}", content, ("preference", "likes"), Priority.normal, 0.85
    )


def _dislike(obj: str, thai: bool, verb_th: str = "ไม่ชอบ") -> _Fact | None:
    if not obj:
        return None
    content = f"{verb_th} {obj}" if thai else f"Doesn't like {obj}"
    # the same key as a like of the same thing: a changed mind updates one nugget
    return _fact(
        Category.preference, f"pref_{_slug(obj)}", content, ("preference", "dislikes"), Priority.normal, 0.85
    )


def _job(value: str, thai: bool) -> _Fact | None:
    if not value:
        return None
    content = f"อาชีพ {value}" if thai else f"Job: {value}"
    return _fact(Category.identity, "user_job", content, ("job", "work"), Priority.normal, 0.85)


def _looks_like_job(value: str) -> bool:
    words = re.findall(r"[a-z][a-z-]*", value.lower())
    return bool(words) and words[-1] in _JOB_WORDS


_Rule = Callable[[re.Match[str]], "_Fact | None"]

_NAME_CUT = r"\s+(?:and|but|from|i|i'm|im|nice|btw|who|here)\b|,"
_PLACE_CUT = r"\s+(?:and|but|with|for|since|because|where|which|so)\b|,"
_WORK_CUT = r"\s+(?:as|and|but|since|for|where|which|so)\b|,"
_OBJ_CUT = r"\s+(?:but|because|since|so|which|when|if)\b|,\s*(?:but|because|since|so)\b"
_TH_CUT = r"\s*(?:และ|แล้วก็|แต่|เพราะ|ซึ่ง)"


def _name_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=4, cut=_NAME_CUT)
    if not v or v.split()[0].lower() in _NON_NAMES:
        return None
    return _fact(Category.identity, "user_name", f"Name: {v}", ("name",), Priority.high, 0.9)


def _nickname_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=3, cut=_NAME_CUT)
    if not v or v.split()[0].lower() in _NON_NAMES:
        return None
    return _fact(Category.identity, "user_nickname", f"Goes by {v}", ("name",), Priority.high, 0.85)


def _im_name(m: re.Match[str]) -> _Fact | None:
    v = m.group("v").strip()
    if v.split()[0].lower() in _NON_NAMES:
        return None
    return _fact(Category.identity, "user_name", f"Name: {v}", ("name",), Priority.high, 0.75)


def _location_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=6, cut=_PLACE_CUT)
    if not v or v.lower() in ("home", "a house", "an apartment", "a flat"):
        return None
    return _fact(Category.identity, "user_location", f"Lives in {v}", ("location",), Priority.normal, 0.85)


def _moved_en(m: re.Match[str]) -> _Fact | None:
    fact = _location_en(m)
    return replace(fact, dated=f"Moved to {fact.content.removeprefix('Lives in ')}") if fact else None


def _origin_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=5, cut=_PLACE_CUT)
    if not v:
        return None
    return _fact(Category.identity, "user_origin", f"From {v}", ("location", "origin"), Priority.normal, 0.8)


def _work_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=6, cut=_WORK_CUT)
    if not v or v.lower() in ("home", "the moment", "night"):
        return None
    return _fact(Category.identity, "user_workplace", f"Works at {v}", ("work",), Priority.normal, 0.85)


def _job_as_en(m: re.Match[str]) -> _Fact | None:
    return _job(_clean(m.group("v"), max_words=6, cut=_WORK_CUT.replace("as|", "")), thai=False)


def _job_a_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=6, cut=_WORK_CUT)
    return _job(v, thai=False) if _looks_like_job(v) else None


def _languages_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=10, cut=r",?\s+(?:but|because|so)\b")
    if not v:
        return None
    return _fact(Category.identity, "user_languages", f"Speaks {v}", ("language",), Priority.normal, 0.85)


def _like_en(m: re.Match[str]) -> _Fact | None:
    verb = m.group("verb").lower()
    obj = _clean(m.group("v"), max_words=8, cut=_OBJ_CUT)
    obj = re.sub(r"^(?:to\s+)", "", obj, flags=re.IGNORECASE)
    return _preference(obj, verb, thai=False)


def _dislike_en(m: re.Match[str]) -> _Fact | None:
    obj = _clean(m.group("v"), max_words=8, cut=_OBJ_CUT)
    obj = re.sub(r"^(?:to\s+)", "", obj, flags=re.IGNORECASE)
    return _dislike(obj, thai=False)


def _fan_en(m: re.Match[str]) -> _Fact | None:
    return _preference(_clean(m.group("v"), max_words=8, cut=_OBJ_CUT), "like", thai=False)


def _favorite_en(m: re.Match[str]) -> _Fact | None:
    what = _slug(m.group("what"))
    v = _clean(m.group("v"), max_words=8, cut=_OBJ_CUT)
    if not v:
        return None
    content = f"Favourite {m.group('what').lower()}: {v}"
    return _fact(
        Category.preference, f"favorite_{what}", content, ("preference", "favorite"), Priority.normal, 0.85
    )


def _reply_lang_en(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), max_words=2)
    return _fact(
        Category.preference,
        "response_language",
        f"Wants replies in {v}",
        ("preference", "language"),
        Priority.normal,
        0.85,
    )


def _main_tool_en(m: re.Match[str]) -> _Fact | None:
    obj = _clean(m.group("v"), max_words=6, cut=_OBJ_CUT + r"|\s+(?:mainly|mostly|primarily)\b")
    return _preference(obj, "use", thai=False)


def _switched_en(m: re.Match[str]) -> _Fact | None:
    obj = _clean(m.group("v"), max_words=6, cut=_OBJ_CUT)
    return _preference(obj, "switched", thai=False)


# Thai rules


def _name_th(m: re.Match[str]) -> _Fact | None:
    raw = m.group("v").strip()
    v = _clean(raw.split()[0] if raw.split() else "", cut=_TH_CUT)
    if not v or re.match(r"^(?:อะไร|ไร|บริษัท|โปรเจ|โครงการ|ไฟล์|เล่น)", v):
        return None
    key, tag = ("user_nickname", "ชื่อเล่น") if m.group("nick") else ("user_name", "ชื่อ")
    return _fact(Category.identity, key, f"{tag} {v}", ("name",), Priority.high, 0.9)


def _location_th(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), cut=_TH_CUT)
    if not v or re.search(r"ไหน|อะไร|ไหม|มั้ย|ระหว่าง|บ้าน$|^บ้าน|^ที่ทำงาน|^ออฟฟิศ|^ว่าง|^แล้ว", v):
        return None
    fact = _fact(Category.identity, "user_location", f"อยู่ {v}", ("location",), Priority.normal, 0.85)
    moved = re.search(r"ย้าย(ไป|มา)", m.group(0))
    return replace(fact, dated=f"ย้าย{moved.group(1)}อยู่ {v}") if moved else fact


def _work_th(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), cut=_TH_CUT)
    if not v or re.search(r"ไหน|อะไร|ไหม|มั้ย|^บ้าน", v):
        return None
    return _fact(Category.identity, "user_workplace", f"ทำงานที่ {v}", ("work",), Priority.normal, 0.85)


def _job_th(m: re.Match[str]) -> _Fact | None:
    return _job(_clean(m.group("v"), cut=_TH_CUT), thai=True)


def _job_be_th(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"), cut=_TH_CUT)
    return _job(v, thai=True) if _TH_JOB.match(v) else None


def _like_th(m: re.Match[str]) -> _Fact | None:
    return _preference(_clean(m.group("v"), cut=_TH_CUT), "like", thai=True, original_verb_th="ชอบ")


def _dislike_th(m: re.Match[str]) -> _Fact | None:
    verb = m.group("verb")
    return _dislike(_clean(m.group("v"), cut=_TH_CUT), thai=True, verb_th=verb)


def _languages_th(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"))
    v = re.sub(r"\s*ได้$", "", v)
    if not v:
        return None
    return _fact(Category.identity, "user_languages", f"พูด{v}", ("language",), Priority.normal, 0.85)


def _main_tool_th(m: re.Match[str]) -> _Fact | None:
    obj = _clean(m.group("v"))
    fact = _preference(obj, "use", thai=True, original_verb_th="ใช้")
    if fact is None:
        return None
    return _fact(fact.category, fact.key, f"ใช้ {obj} เป็นหลัก", fact.tags, fact.priority, fact.confidence)


def _reply_lang_th(m: re.Match[str]) -> _Fact | None:
    v = _clean(m.group("v"))
    return _fact(
        Category.preference,
        "response_language",
        f"ให้ตอบเป็น{v}",
        ("preference", "language"),
        Priority.normal,
        0.85,
    )


_I = r"\bi(?:\s+(?:also|really|do|now|currently|still|actually|totally|absolutely|kind of|kinda|just))*"
_V = r"(?P<v>.+)"


@cache
def _rules() -> list[tuple[re.Pattern[str], _Rule]]:
    """The rule table, compiled on first use (it costs tens of ms: not at import, not for recall)."""
    return [
        # English — name
        (re.compile(rf"\bmy\s+(?:full\s+)?name(?:\s+is|'s)\s+{_V}", re.IGNORECASE), _name_en),
        (re.compile(rf"\b(?:please\s+)?call\s+me\s+{_V}", re.IGNORECASE), _nickname_en),
        (re.compile(rf"\bi(?:'m| am)\s+called\s+{_V}", re.IGNORECASE), _name_en),
        # "I'm Ann" — only a capitalised name closing the clause, e.g. "Hi, I'm Ann" / "I am Ann Lee"
        (
            re.compile(
                r"^(?:(?:hi|hello|hey)[\s,!]*)?(?:[Ii]'m|[Ii] am|[Ii]m)\s+"
                r"(?P<v>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})\s*[.!]*$"
            ),
            _im_name,
        ),
        # English — places and work
        (
            re.compile(
                rf"{_I}\s+(?:live|living|reside|stay|am living|'m living)\s+(?:in|at)\s+{_V}", re.IGNORECASE
            ),
            _location_en,
        ),
        (
            re.compile(
                rf"\bi(?:'m| am)\s+(?:now\s+|currently\s+)?(?:living|based|located|staying)\s+in\s+{_V}",
                re.IGNORECASE,
            ),
            _location_en,
        ),
        (re.compile(rf"{_I}\s+(?:just\s+)?(?:moved|relocated)\s+to\s+{_V}", re.IGNORECASE), _moved_en),
        (re.compile(rf"\bi(?:'m| am)\s+(?:originally\s+)?from\s+{_V}", re.IGNORECASE), _origin_en),
        (re.compile(rf"{_I}\s+work(?:s)?\s+(?:at|for|in)\s+{_V}", re.IGNORECASE), _work_en),
        (
            re.compile(
                rf"\bi(?:'m| am)\s+(?:now\s+|currently\s+)?(?:working|employed)\s+(?:at|for|by)\s+{_V}",
                re.IGNORECASE,
            ),
            _work_en,
        ),
        (re.compile(rf"\b(?:work|working)\s+as\s+(?:an?\s+)?{_V}", re.IGNORECASE), _job_as_en),
        (
            re.compile(rf"\bwork(?:s|ing)?\s+(?:at|for|in)\s+\S.*?\s+as\s+(?:an?\s+)?{_V}", re.IGNORECASE),
            _job_as_en,
        ),
        (
            re.compile(rf"\bmy\s+(?:job|occupation|profession|role)\s+is\s+(?:an?\s+)?{_V}", re.IGNORECASE),
            _job_as_en,
        ),
        (re.compile(rf"\bi(?:'m| am)\s+(?:now\s+)?an?\s+{_V}", re.IGNORECASE), _job_a_en),
        (re.compile(rf"{_I}\s+(?:can\s+)?speak\s+{_V}", re.IGNORECASE), _languages_en),
        # English — preferences
        (
            re.compile(
                rf"{_I}\s+(?:don't|dont|do not|didn't|no longer)\s+(?:really\s+)?(?:like|enjoy|love)\s+{_V}",
                re.IGNORECASE,
            ),
            _dislike_en,
        ),
        (
            re.compile(
                rf"{_I}\s+(?:hate|dislike|detest|can't stand|cannot stand|can not stand)\s+{_V}",
                re.IGNORECASE,
            ),
            _dislike_en,
        ),
        (re.compile(rf"{_I}\s+(?P<verb>like|love|enjoy|adore|prefer)\s+{_V}", re.IGNORECASE), _like_en),
        (
            re.compile(
                rf"\bi(?:'m| am)\s+(?:a\s+(?:big\s+|huge\s+)?fan\s+of|(?:really\s+)?into)\s+{_V}",
                re.IGNORECASE,
            ),
            _fan_en,
        ),
        (
            re.compile(
                r"\bmy\s+fav(?:ou?rite)?\s+(?P<what>[a-z][a-z ]{0,30}?)\s+(?:is|are)\s+(?P<v>.+)",
                re.IGNORECASE,
            ),
            _favorite_en,
        ),
        (
            re.compile(
                r"\b(?:please\s+)?(?:always\s+)?(?:answer|reply|respond|write|talk)\s+(?:to\s+me\s+)?in\s+(?P<v>[A-Za-z]+)\b",
                re.IGNORECASE,
            ),
            _reply_lang_en,
        ),
        (
            re.compile(rf"{_I}\s+(?:mainly|mostly|primarily|usually)\s+use\s+{_V}", re.IGNORECASE),
            _main_tool_en,
        ),
        (
            re.compile(
                r"\bi\s+use\s+(?P<v>.+?)\s+(?:mainly|mostly|primarily|most of the time)\b", re.IGNORECASE
            ),
            _main_tool_en,
        ),
        (re.compile(rf"{_I}\s+(?:switched|moved\s+over)\s+to\s+{_V}", re.IGNORECASE), _switched_en),
        # Thai — name: "ผมชื่อสมชาย", "ชื่อ สมชาย ครับ", "ชื่อเล่นชื่อต้น"
        (
            re.compile(rf"(?:^|{_PRONOUN_TH})\s*ชื่อ(?P<nick>เล่น)?\s*(?:ชื่อ)?\s*(?:ว่า|คือ)?\s*(?P<v>\S.*)"),
            _name_th,
        ),
        # Thai — location: "ผมอยู่เชียงใหม่", "อาศัยอยู่ที่ลำปาง", "ย้ายไปอยู่ภูเก็ต"
        (re.compile(r"อาศัยอยู่\s*(?:ที่|ใน)?\s*(?P<v>\S.*)"), _location_th),
        (
            re.compile(rf"(?:^|{_PRONOUN_TH}|ตอนนี้)\s*(?:ย้ายไป|ย้ายมา)?อยู่\s*(?:ที่|ใน)?\s*(?P<v>\S.*)"),
            _location_th,
        ),
        (re.compile(r"ย้าย(?:ไป|มา)(?:อยู่)?\s*(?:ที่)?\s*(?P<v>\S.*)"), _location_th),
        # Thai — work and job
        (re.compile(r"ทำงาน(?:อยู่)?\s*(?:ที่|กับ|ให้|ใน)\s*(?P<v>\S.*)"), _work_th),
        (re.compile(r"ทำงานเป็น\s*(?P<v>\S.*)"), _job_th),
        (re.compile(r"(?:ทำ)?อาชีพ(?:ของ(?:ผม|ฉัน|ดิฉัน|หนู))?\s*(?:คือ|เป็น)?\s*(?P<v>\S.*)"), _job_th),
        (re.compile(rf"(?:^|{_PRONOUN_TH})\s*เป็น\s*(?P<v>\S.*)"), _job_be_th),
        # Thai — preferences
        (re.compile(r"(?P<verb>ไม่(?:ค่อย)?ชอบ|เกลียด)\s*(?P<v>\S.*)"), _dislike_th),
        (re.compile(r"(?<!ไม่)(?<!ไม่ค่อย)ชอบ(?:ใช้)?\s*(?P<v>\S.*)"), _like_th),
        (re.compile(r"ใช้\s*(?P<v>\S.+?)\s*เป็นหลัก"), _main_tool_th),
        (re.compile(r"ตอบ(?:เป็น|ด้วย)?\s*(?P<v>ภาษา\S+)"), _reply_lang_th),
        # Thai — languages: "พูดภาษาไทย", "พูดไทยได้", "พูดได้ทั้งไทยและอังกฤษ"
        (
            re.compile(
                r"พูด\s*(?P<v>(?:ได้\s*)?(?:ทั้ง)?\s*(?:ภาษา)?(?:ไทย|อังกฤษ|ญี่ปุ่น|จีน|เกาหลี|ลาว|เขมร|พม่า|เวียดนาม|ฝรั่งเศส|เยอรมัน|สเปน)\S*.*)"
            ),
            _languages_th,
        ),
    ]


def _segments(text: str) -> list[str]:
    parts = _SEG_SPLIT.split(text)
    return [p.strip() for p in parts if p and p.strip()]


def _rule_lang(rule: _Rule) -> str:
    return "th" if getattr(rule, "__name__", "").endswith("_th") else "en"


def _rule_facts(segment: str) -> list[_Fact]:
    facts: list[_Fact] = []
    for pattern, rule in _rules():
        m = pattern.search(segment)
        if m is None:
            continue
        fact = rule(m)
        if fact is not None and fact.content:
            facts.append(replace(fact, lang=_rule_lang(rule)))
    return _dedupe_overlaps(facts)


def _dedupe_overlaps(facts: list[_Fact]) -> list[_Fact]:
    """One fact per key in a segment (the first rule wins); a like inside a dislike is dropped."""
    seen: dict[tuple[Category, str], _Fact] = {}
    for f in facts:
        seen.setdefault((f.category, f.key), f)
    return list(seen.values())


def states_a_fact(text: str) -> bool:
    """True when a rule finds a fact in `text` (one segment): the summary ranks such sentences higher."""
    return bool(_rule_facts(text))


def _carries_content(segment: str) -> bool:
    s = normalize(strip_symbols(segment))
    if is_transient(segment) or not s:
        return False
    return len(s) >= 2


# --- time: a message's sentences with the times they name -------------------------------------------

# the words that tie a time expression to the sentence (cut with it from the words a rule reads)
_EN_LINK = re.compile(
    r"(?<![A-Za-z])(?P<w>on|in|at|since|until|till|by|from|during|before|after|around|of)\s*$", re.IGNORECASE
)
_TH_LINK = re.compile(r"(?P<w>ในช่วง|เมื่อตอน|ตั้งแต่|จนถึง|ภายใน|ช่วง|ตอน|เมื่อ|ใน|ถึง|ก่อน|หลัง)\s*$")
# the links that stay in a fact's wording ("Works at Grab since November 2026"); others become on/in
_EN_KEPT_LINKS = {"since", "until", "till", "by", "from", "before", "after", "during", "around"}
_TH_KEPT_LINKS = {"ตั้งแต่", "จนถึง", "ถึง", "ก่อน", "หลัง", "ภายใน"}


@dataclass(frozen=True)
class _Timed:
    """A time expression of a segment, and the word that tied it to the sentence ("since", "ตั้งแต่")."""

    mention: dates.Mention
    link: str


@dataclass
class _Segment:
    pieces: list[str]  # its words between the time expressions (what the rules read): one more than
    times: list[_Timed]  # its time expressions, in order

    @property
    def time_only(self) -> bool:
        return bool(self.times) and not any(_carries_content(p) for p in self.pieces)

    def time_of(self, piece: int) -> _Timed | None:
        """The time expression a piece's facts are dated by: the one right before it, else right after."""
        for j in (piece - 1, piece):
            if 0 <= j < len(self.times):
                return self.times[j]
        return None


def _timed_segments(text: str, found: Sequence[dates.Mention]) -> list[_Segment]:
    """`text` cut into the segments the rules read (never inside a time expression), each with the
    time expressions in it and the words around them."""
    cuts = [
        (m.start(), m.end())
        for m in _SEG_SPLIT.finditer(text)
        if m.end() > m.start() and not any(t.start < m.end() and m.start() < t.end for t in found)
    ]
    out: list[_Segment] = []
    pos = 0
    for start, end in [*cuts, (len(text), len(text))]:
        inside = [t for t in found if pos <= t.start and t.end <= start]
        if text[pos:start].strip():
            out.append(_untimed(text, pos, start, inside))
        pos = end
    return out


def _untimed(text: str, start: int, end: int, inside: Sequence[dates.Mention]) -> _Segment:
    pieces: list[str] = []
    times: list[_Timed] = []
    pos = start
    for m in inside:
        before = text[pos : m.start]
        link = (_TH_LINK if dates.is_thai(text[start:end]) else _EN_LINK).search(before)
        if link is not None:
            before = before[: link.start()]
        pieces.append(before)
        times.append(_Timed(m, link.group("w").lower() if link else ""))
        pos = m.end
    pieces.append(text[pos:end])
    return _Segment([p.strip() for p in pieces], times)


def _dated(fact: _Fact, timed: _Timed) -> str:
    """The fact's content with the date its sentence names, in the fact's language."""
    period = timed.mention.period
    label = dates.format_date(period.local_start, period.grain, fact.lang)
    base = fact.dated or fact.content
    if fact.lang == "th":
        return f"{base} {timed.link} {label}" if timed.link in _TH_KEPT_LINKS else f"{base} ({label})"
    link = timed.link if timed.link in _EN_KEPT_LINKS else "on" if period.grain == "day" else "in"
    return f"{base} {link} {label}"


# who the user is, not something that happened: never dated by the sentence around it
_TIMELESS = {"user_name", "user_nickname"}


def _nugget(fact: _Fact, timed: _Timed | None, said_at: datetime | None) -> ExtractedNugget:
    if fact.key in _TIMELESS:
        timed = None
    return ExtractedNugget(
        category=fact.category,
        key=fact.key,
        content=(_dated(fact, timed) if timed is not None else fact.content)[:MAX_CONTENT],
        tags=list(fact.tags),
        priority=fact.priority,
        confidence=fact.confidence,
        is_identity=fact.category in (Category.identity, Category.preference),
        valid_at=timed.mention.period.start if timed is not None else said_at,
    )


class RuleExtractor:
    """Offline extraction: common facts in Thai and English, every other user message as `context`.

    Only `user` messages are read. Keys are stable so that a changed fact updates its nugget:
    identity/user_name, user_nickname, user_location, user_origin, user_workplace, user_job,
    user_languages; preference/theme, editor, main_tool, response_language, favorite_<thing>,
    pref_<slug of the thing> (likes and dislikes of one thing share a key); context/context_<hash of
    its text>. A message's times are read in `timezone` (see the module's docstring); a message
    without `created_at` is taken as it was said (no time to read its relative words against).
    """

    def extract(
        self,
        messages: Sequence[Message],
        existing: Sequence[ExistingKey] = (),
        related: Sequence[ExistingKey] = (),
        *,
        timezone: str = DEFAULT_TIMEZONE,
    ) -> list[ExtractedNugget]:
        # (`related` is for a model: the rules keep their stable keys and supersede nothing)
        tz = ZoneInfo(timezone)
        found: dict[tuple[Category, str], ExtractedNugget] = {}
        for message in messages:
            if message.role != Role.user or is_transient(message.content):
                continue
            text = message.content.strip()
            said_at = message.created_at
            if said_at is None:
                times: list[dates.Mention] = []
                clauses = [dates.Dated(text, None, (0, len(text)))]
            else:
                times = dates.mentions(text, said_at, tz)
                clauses = dates.dated_clauses(text, said_at, tz)
            for clause in clauses:
                start, end = clause.span or (0, len(text))
                inner = [
                    dates.Mention(m.start - start, m.end - start, m.text, m.period, m.relative)
                    for m in times
                    if start <= m.start and m.end <= end
                ]
                leftover = False
                segments = _timed_segments(text[start:end], inner)
                for i, segment in enumerate(segments):
                    per_piece = [_rule_facts(piece) for piece in segment.pieces]
                    # what no rule read is kept as context: the segment, or words a time expression cut off
                    # from a fact ("ผมชื่อสมชาย เมื่อวานไปหาหมอ": the visit)
                    leftover = leftover or any(
                        not got and _carries_content(piece)
                        for got, piece in zip(per_piece, segment.pieces, strict=True)
                    )
                    facts = [(f, k) for k, got in enumerate(per_piece) for f in got]
                    seen: set[tuple[Category, str]] = set()
                    for f, k in facts:
                        if (f.category, f.key) in seen:
                            continue  # one fact per key in a segment (the first rule wins)
                        seen.add((f.category, f.key))
                        timed = segment.time_of(k) or _borrowed(segments, i)
                        found.pop((f.category, f.key), None)  # a later statement wins, and moves last
                        found[(f.category, f.key)] = _nugget(f, timed, said_at)
                if leftover:
                    key = f"context_{_short_hash(clause.text, 12)}"
                    found[(Category.context, key)] = ExtractedNugget(
                        category=Category.context,
                        key=key,
                        content=clause.text[:MAX_CONTENT],
                        tags=["context"],
                        priority=Priority.low,
                        confidence=0.6,
                        is_identity=False,
                        valid_at=clause.valid_at or said_at,
                    )
        return list(found.values())


def _borrowed(segments: Sequence[_Segment], i: int) -> _Timed | None:
    """The time of a segment that names none: a neighbouring segment made only of a time expression
    ("Last month, I moved to Bangkok"; "เดือนที่แล้ว ผมย้ายไปอยู่เชียงใหม่"), the one before it first."""
    for j in (i - 1, i + 1):
        if 0 <= j < len(segments) and segments[j].time_only:
            return segments[j].times[0]
    return None
