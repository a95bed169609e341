"""Dates in what people say, Thai and English: the rules side of the Time issue.

`mentions` finds every time expression in a text and resolves it to a `Period` against the moment the
text was said, in the mind's timezone; `resolve` and `dated_clauses` rewrite the relative words into
absolute dates in the text's own language, so a memory stays true when it is read later; `query_period`
finds the period a question names, for time-aware recall. Standard library only, no state, no I/O.

Rules of meaning
- **Local days.** Everything resolves in the given timezone: "today" is the local date of `said_at`
  (or of the query's `reference`), and a period runs from 00:00 local of its first day to 00:00 local of
  the day after its last; `Period.start`/`end` are those instants in UTC, `local_start` is the first day.
  A naive `said_at` is taken as UTC.
- **Grains.** A period is a day, a week, a month or a year. Weeks start on Monday (ISO 8601): "last week"
  is Monday to Sunday of the week before the current one. "N weeks ago" / "in N weeks" / "อีก N สัปดาห์"
  name the week that holds the day N*7 days away; "N months ago" the month N months away; "a week ago" is
  "1 week ago". Hours and minutes are not resolved ("3 hours ago" is no mention).
- **Day words.** today/tonight/this morning|afternoon|evening = the day said; yesterday (morning...),
  last night = the day before; tomorrow = the day after; the day before yesterday / the day after
  tomorrow = two days away. Thai: วันนี้ คืนนี้ เช้านี้ เมื่อเช้า = 0, เมื่อวาน(นี้) วานนี้ เมื่อคืน(นี้) = -1,
  เมื่อวานซืน วานซืน = -2, พรุ่งนี้ = +1, มะรืน(นี้) = +2.
- **Weekdays.** "last Monday" / "วันจันทร์ที่แล้ว|ก่อน|ที่ผ่านมา": the most recent Monday strictly before the
  day said. "this Monday" / "วันจันทร์นี้": the coming Monday (the day said counts). "next Monday" /
  "วันจันทร์หน้า": the Monday of the following week. `อาทิตย์` alone is "week" (อาทิตย์ที่แล้ว = last week);
  `วันอาทิตย์` is Sunday. A bare weekday name in Thai needs `วัน` (วันศุกร์) or a qualifier (ศุกร์นี้), and is
  never read after ดาว/พระ (ดาวศุกร์ = Venus, พระจันทร์ = the moon).
- **Tense, for a month, a day of a month or a weekday without a year or qualifier.** In a statement the
  clause's cues decide: English will/shall/'ll/going to/gonna/plan to/intend to/have to/need to/must/
  may (lower case)/might/next (not "next to")/upcoming/scheduled/booked, Thai จะ/ต้อง/นัด/วางแผน/ตั้งใจ/
  กำหนดการ/เตรียม (not ถูกต้อง, ถนัด) make it the first one at or after the day said; otherwise it is the
  most recent one at or before it. The clause is the text between the neighbouring time expressions, cut
  at sentence ends. In a query (`query_period`) the clause is the whole question but its time expressions
  ("what did I do in May" has no modal "may"): the most recent such period at or before the reference
  ("in March" asked in December 2026 is March 2026, asked in February 2026 March 2025), unless it says
  will/next/จะ/...; "next/หน้า" qualifiers resolve as above.
- **Months.** "last March" / "มีนาคมที่แล้ว" is the most recent March strictly before the current month,
  "next March" the first strictly after, "this March" / "มีนาคมนี้" March of the current year (the coming
  one if the clause speaks of the future: "ผมจะไปญี่ปุ่นเมษานี้" said in December is next April), "March
  next year" / "มีนาคมปีหน้า" March of that year. A day of a month ("3 March", "14 มี.ค.", Thai "วันที่ 14"
  alone: the 14th of the nearest month) follows the same tense rule.
- **Years.** พ.ศ. 2569 = 2026 (BE - 543). A 4-digit year >= 2400 is Buddhist Era in any text, unless
  marked ค.ศ.; a 2-digit year after a Thai month (ธ.ค. 69) or in a Thai d/m/yy date is BE 25xx. A
  standalone year needs a cue: English in/since/during/until/by/before/after/from/of/... 2025, Thai
  ปี/พ.ศ./ค.ศ. 2569 ("ราคา 2569 บาท" is a price).
- **Absolute dates** (a year is given: "3 ธ.ค. 2569", "March 2026", "in 2025", "2026-03-14", Thai
  14/3/2569) are `relative=False` and are never rewritten, but still give `valid_at`. Everything else
  (day words, weekdays, months or days without a year) is relative and is rewritten.
  d/m/y numbers are read only in Thai text (day first); English 3/4/2026 is ambiguous and ignored.
- **Not periods of the user's life** (no mention, and they hide the words inside them): recurrences
  ("every Monday", "Mondays", "each March", ทุกวันจันทร์, ทุกวันนี้ = nowadays), vague spans ("a few days
  ago", "several weeks ago", หลายปีก่อน, ไม่กี่วันก่อน, สองสามวันก่อน), and "the last/next/following
  week|day|Monday" (a span relative to a story, not to the day said). So `query_period` answers None for
  "what do I do every Monday".
- **False friends.** "may" and "march" are months only capitalised (May, March, Mar); every English month
  needs a day, a year, last/next/this, or a word before it such as in/of/since/until/by/during/from/
  before/after/early/mid/late ("June said" and "August company" are no dates). "sun", "sat", "second",
  "the last time", "at last" and numbers without a date shape are no dates. Thai short month names
  (มีนา, ตุลา) and abbreviations (ก.พ. is also the civil service commission) need a day, a year, เดือน, a
  qualifier or a word before them such as ใน/ช่วง/ตอน/เมื่อ/ตั้งแต่/ถึง/ก่อน/หลัง/ต้น/กลาง/ปลาย.
- **Rewriting.** Thai (a clause with at least as many Thai as Latin letters): the relative words (with a
  เมื่อ/ตอน/ช่วง before them, and ใน before a week/month/year) are removed and the date is appended in
  parentheses: `ไปหาหมอฟัน (3 ธ.ค. 2569)`, Buddhist Era year, Thai month abbreviations (`format_date`).
  They are replaced in place instead ("วันที่ 3 ธ.ค. 2569", "เดือน พ.ย. 2569") after a preposition
  (ตั้งแต่/ถึง/ก่อน/หลัง/ภายใน/สำหรับ: "ตั้งแต่ เดือน พ.ย. 2569 ผมเลิกกาแฟ"), and when one clause names several
  different relative periods. English: replaced in place by an absolute phrase: "on 3 December 2026",
  "on the night of 3 December 2026", "in the week of 23 November 2026", "in November 2026", "in 2025";
  the preposition is left out after one already there ("since last month" -> "since November 2026") and
  before a verb ("last week was hard" -> "the week of 23 November 2026 was hard"), and capitalised where
  the words replaced were capitalised at the start of a sentence.
- **Clauses.** `dated_clauses` splits only a text whose expressions name two or more different periods.
  Thai clauses are separated by spaces (and by แล้ว/และ/ส่วน/แต่ right before a time expression), English
  ones by sentence ends, commas, semicolons and "and/but/then/so" right before a time expression. A part
  made only of a time expression ("ผมไปหาหมอ เมื่อวาน") ends the words before it that name no time, else
  starts the clause after it ("เมื่อวาน ผมไปหาหมอ"). Parts naming no time continue the clause before them
  (not across a sentence end, nor after a clause a time-only part ended) or else join the timed clause
  after them; after a sentence end they are a clause of their own with `valid_at` None ("My name is Ann.").
  A clause's `valid_at` is the UTC start of the first period it names; one clause naming two periods
  (no separator between them) keeps both, rewritten in place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

__all__ = [
    "GRAINS",
    "Dated",
    "Mention",
    "Period",
    "dated_clauses",
    "format_date",
    "is_thai",
    "mentions",
    "most_specific",
    "period_of",
    "query_mentions",
    "query_period",
    "resolve",
    "warm",
]

GRAINS = ("day", "week", "month", "year")


@dataclass(frozen=True)
class Period:
    """A span of time a text names: [start, end) in UTC, from 00:00 local of its first day."""

    start: datetime
    end: datetime
    grain: str
    local_start: date

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


@dataclass(frozen=True)
class Mention:
    """One time expression: its span in the text and the period it names."""

    start: int
    end: int
    text: str
    period: Period
    relative: bool


@dataclass(frozen=True)
class Dated:
    """A clause with its relative words replaced by absolute dates, and when it was true."""

    text: str
    valid_at: datetime | None
    # where the clause is in the text `dated_clauses` was given ([start, end), before rewriting); an
    # extractor reads its facts there (not compared: two clauses are equal by what they say)
    span: tuple[int, int] | None = field(default=None, compare=False)


# --- periods ---------------------------------------------------------------------------------------------


def period_of(day: date, grain: str, tz: ZoneInfo) -> Period:
    """The day, week (Monday first), month or year holding `day`, in `tz`."""
    first = _first_day(day, grain)
    return Period(_utc_midnight(first, tz), _utc_midnight(_following(first, grain), tz), grain, first)


def _first_day(day: date, grain: str) -> date:
    if grain == "day":
        return day
    if grain == "week":
        return day - timedelta(days=day.weekday())
    if grain == "month":
        return day.replace(day=1)
    if grain == "year":
        return date(day.year, 1, 1)
    raise ValueError(f"unknown grain {grain!r}")


def _following(first: date, grain: str) -> date:
    if grain == "day":
        return first + timedelta(days=1)
    if grain == "week":
        return first + timedelta(days=7)
    if grain == "month":
        return _add_months(first, 1)
    return date(first.year + 1, 1, 1)


def _add_months(day: date, n: int) -> date:
    """The first day of the month `n` months from `day`'s."""
    index = day.year * 12 + day.month - 1 + n
    return date(index // 12, index % 12 + 1, 1)


def _utc_midnight(day: date, tz: ZoneInfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=tz).astimezone(UTC)


def _local_date(moment: datetime, tz: ZoneInfo) -> date:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(tz).date()


# --- formatting ------------------------------------------------------------------------------------------

_EN_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_TH_MONTH_FULL = (
    "มกราคม", "กุมภาพันธ์", "มีนาคม", "เมษายน", "พฤษภาคม", "มิถุนายน",
    "กรกฎาคม", "สิงหาคม", "กันยายน", "ตุลาคม", "พฤศจิกายน", "ธันวาคม",
)  # fmt: skip
_TH_MONTH_ABBR = (
    "ม.ค.", "ก.พ.", "มี.ค.", "เม.ย.", "พ.ค.", "มิ.ย.", "ก.ค.", "ส.ค.", "ก.ย.", "ต.ค.", "พ.ย.", "ธ.ค.",
)  # fmt: skip
_TH_MONTH_SHORT = (
    "มกรา", "กุมภา", "มีนา", "เมษา", "พฤษภา", "มิถุนา", "กรกฎา", "สิงหา", "กันยา", "ตุลา", "พฤศจิกา", "ธันวา",
)  # fmt: skip
_BE = 543


def format_date(day: date, grain: str, lang: str) -> str:
    """The period of `grain` holding `day`, written absolutely: lang "th" -> "3 ธ.ค. 2569", "พ.ย. 2569",
    "สัปดาห์ 23–29 พ.ย. 2569", "พ.ศ. 2569"; anything else (English) -> "3 December 2026", "November 2026",
    "the week of 23 November 2026", "2026"."""
    first = _first_day(day, grain)
    if lang == "th":
        if grain == "day":
            return _th_day(first)
        if grain == "week":
            last = first + timedelta(days=6)
            if first.year != last.year:
                return f"สัปดาห์ {_th_day(first)}–{_th_day(last)}"
            if first.month != last.month:
                return f"สัปดาห์ {first.day} {_TH_MONTH_ABBR[first.month - 1]}–{_th_day(last)}"
            return f"สัปดาห์ {first.day}–{_th_day(last)}"
        if grain == "month":
            return f"{_TH_MONTH_ABBR[first.month - 1]} {first.year + _BE}"
        return f"พ.ศ. {first.year + _BE}"
    if grain == "day":
        return _en_day(first)
    if grain == "week":
        return f"the week of {_en_day(first)}"
    if grain == "month":
        return f"{_EN_MONTH_NAMES[first.month - 1]} {first.year}"
    return str(first.year)


def _th_day(day: date) -> str:
    return f"{day.day} {_TH_MONTH_ABBR[day.month - 1]} {day.year + _BE}"


def _en_day(day: date) -> str:
    return f"{day.day} {_EN_MONTH_NAMES[day.month - 1]} {day.year}"


# --- patterns --------------------------------------------------------------------------------------------


class _Rx:
    """A pattern compiled on first use: compiling this module's patterns at import would add tens of
    milliseconds to every cold start, also of functions that never read a date."""

    __slots__ = ("_compiled", "_flags", "_pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern, self._flags = pattern, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._pattern, self._flags)
        return self._compiled

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(text, pos)

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def findall(self, text: str) -> list[str]:
        return self.compiled.findall(text)

    def sub(self, replacement: str, text: str) -> str:
        return self.compiled.sub(replacement, text)


# --- language --------------------------------------------------------------------------------------------

_THAI_CHAR = _Rx(r"[\u0e00-\u0e7f]")
_THAI_LETTER = _Rx(r"[\u0e01-\u0e2e]")
_LATIN_LETTER = _Rx(r"[A-Za-z]")
_THAI_DIGITS = str.maketrans("๐๑๒๓๔๕๖๗๘๙", "0123456789")


def is_thai(text: str) -> bool:
    """Written in Thai: at least as many Thai letters as Latin ones (and some)."""
    thai = len(_THAI_LETTER.findall(text))
    return thai > 0 and thai >= len(_LATIN_LETTER.findall(text))


# --- candidates --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ctx:
    today: date
    future: bool  # the clause speaks of the future (a tense cue)


_Resolved = tuple[date, str, bool]  # a day inside the period, its grain, whether the words are relative
_Resolver = Callable[[_Ctx], _Resolved | None]


@dataclass(frozen=True)
class _Cand:
    start: int
    end: int
    resolve: _Resolver | None  # None: a recurrence or a vague span, which hides the words inside it


_Builder = Callable[[re.Match[str], str], _Cand | None]


def _alt(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


def _fixed(start: int, end: int, day: date, grain: str, relative: bool = True) -> _Cand:
    return _Cand(start, end, lambda _ctx: (day, grain, relative))


def _shifted(unit: str, n: int) -> _Resolver:
    """`n` days/weeks/months/years from the day said (negative: ago)."""

    def resolve(ctx: _Ctx) -> _Resolved | None:
        today = ctx.today
        try:
            if unit == "day":
                return today + timedelta(days=n), "day", True
            if unit == "week":
                return today + timedelta(weeks=n), "week", True
            if unit == "month":
                return _add_months(today, n), "month", True
            return date(today.year + n, 1, 1), "year", True
        except (ValueError, OverflowError):
            return None

    return resolve


_LIMITS = {"day": 3660, "week": 520, "month": 1200, "year": 200}


def _unit_ok(unit: str, n: int) -> bool:
    return 0 < n <= _LIMITS[unit]


def _weekday(wd: int, today: date, mode: str) -> date:
    """mode: past (at or before today), future/this (at or after), last (strictly before), next (the
    following week's)."""
    if mode == "past":
        return today - timedelta(days=(today.weekday() - wd) % 7)
    if mode == "last":
        return today - timedelta(days=(today.weekday() - wd - 1) % 7 + 1)
    if mode == "next":
        return today - timedelta(days=today.weekday()) + timedelta(days=7 + wd)
    return today + timedelta(days=(wd - today.weekday()) % 7)


def _weekday_resolver(wd: int, mode: str | None) -> _Resolver:
    def resolve(ctx: _Ctx) -> _Resolved:
        chosen = mode or ("future" if ctx.future else "past")
        return _weekday(wd, ctx.today, chosen), "day", True

    return resolve


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month_day(
    month: int, day: int | None, mode: str, today: date, year_shift: int | None
) -> _Resolved | None:
    """A month (or a day of it) without a year. mode: past/future (at or before/after today), last/next
    (strictly), this (the current year); `year_shift` ("March next year") overrides it."""
    if year_shift is not None:
        year = today.year + year_shift
        found = _valid(year, month, day or 1)
        return (found, "day" if day else "month", True) if found else None
    if day is None:
        this_month = date(today.year, month, 1)
        current = today.replace(day=1)
        if mode == "this":
            return this_month, "month", True
        if mode in ("past", "last"):
            fits = this_month < current or (this_month == current and mode == "past")
            return (this_month if fits else date(today.year - 1, month, 1)), "month", True
        fits = this_month > current or (this_month == current and mode == "future")
        return (this_month if fits else date(today.year + 1, month, 1)), "month", True
    if mode == "this":
        found = _valid(today.year, month, day)
        return (found, "day", True) if found else None
    step = -1 if mode in ("past", "last") else 1
    for k in range(9):  # 29 February: up to the nearest leap year
        found = _valid(today.year + step * k, month, day)
        if found is None:
            continue
        if (mode == "past" and found <= today) or (mode == "last" and found < today):
            return found, "day", True
        if (mode == "future" and found >= today) or (mode == "next" and found > today):
            return found, "day", True
    return None


def _month_resolver(
    month: int, day: int | None, year: int | None, mode: str | None, shift: int | None
) -> _Resolver:
    def resolve(ctx: _Ctx) -> _Resolved | None:
        if year is not None:
            found = _valid(year, month, day or 1)
            return (found, "day" if day else "month", False) if found else None
        chosen = mode or "past"
        if ctx.future and chosen in ("past", "this"):  # "ผมจะไปญี่ปุ่นเมษานี้" said in December: next April
            chosen = "future"
        return _month_day(month, day, chosen, ctx.today, shift)

    return resolve


def _day_of_month_resolver(day: int, mode: str | None) -> _Resolver:
    """Thai "วันที่ 14": the 14th of the nearest month, by tense (นี้: the coming one)."""

    def resolve(ctx: _Ctx) -> _Resolved | None:
        future = mode == "future" or (mode is None and ctx.future)
        start = ctx.today.replace(day=1)
        for k in range(13):
            first = _add_months(start, k if future else -k)
            found = _valid(first.year, first.month, day)
            if found and (found >= ctx.today if future else found <= ctx.today):
                return found, "day", True
        return None

    return resolve


def _year(value: str, era: str | None) -> int | None:
    """A written year as CE: พ.ศ./BE for >= 2400 (or 2-digit Thai), ค.ศ. as written."""
    n = int(value)
    if era == "ce":
        year = n
    elif len(value) == 2:
        year = 2500 + n - _BE
    elif n >= 2400 or era == "be":
        year = n - _BE
    else:
        year = n
    return year if 1800 <= year <= 2300 else None


def _era(text: str | None) -> str | None:
    if not text:
        return None
    return "ce" if text.startswith("ค") else "be"


# --- English -----------------------------------------------------------------------------------------------

_I = re.IGNORECASE
_EN_MONTHS = {name.lower(): i + 1 for i, name in enumerate(_EN_MONTH_NAMES)}
_EN_ABBR = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7,
    "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_EN_CAPITAL_ONLY = {"may", "march", "mar"}  # also a modal verb and a verb
_EN_WEEKDAYS = {
    d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
_EN_WEEKDAY_MODES = {"last": "last", "past": "last", "next": "next", "this": "this", "coming": "this"}
_EN_MON = rf"(?P<mon>{_alt(_EN_MONTHS)}|(?:{_alt(_EN_ABBR)})\.?)"
_EN_WD = _alt(_EN_WEEKDAYS)
_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a couple": 2,
}  # fmt: skip
_EN_NUM = r"(?P<n>\d{1,4}|a\s+couple(?:\s+of)?|" + _alt(k for k in _EN_NUMBERS if " " not in k) + ")"
_EN_UNIT = r"(?P<unit>day|week|month|year)s?"
_EN_MONTH_CUES = {
    "in", "of", "since", "until", "till", "by", "during", "from", "before", "after", "through",
    "throughout", "early", "mid", "late", "around", "between",
}  # fmt: skip
_EN_YEAR_CUES = _EN_MONTH_CUES | {"year", "circa", "to", "and"}
_EN_DAY_WORDS = {
    "today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
    "yesterday": -1, "yesterday morning": -1, "yesterday afternoon": -1, "yesterday evening": -1,
    "last night": -1, "tomorrow": 1, "tomorrow morning": 1, "tomorrow afternoon": 1,
    "tomorrow evening": 1, "tomorrow night": 1, "the day before yesterday": -2,
    "day before yesterday": -2, "the day after tomorrow": 2, "day after tomorrow": 2,
}  # fmt: skip
_WORD_BEFORE = _Rx(r"([A-Za-z]+)[\s-]*$")


def _words(phrases: Iterable[str]) -> str:
    return "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in sorted(phrases, key=len, reverse=True))


def _prev_word(text: str, pos: int) -> str:
    found = _WORD_BEFORE.search(text[max(0, pos - 40) : pos])
    return found.group(1).lower() if found else ""


def _number(raw: str) -> int:
    key = " ".join(raw.lower().split())
    return _EN_NUMBERS[key] if key in _EN_NUMBERS else int(key)


def _en_day_word(m: re.Match[str], text: str) -> _Cand:
    offset = _EN_DAY_WORDS[" ".join(m.group(0).lower().split())]
    return _Cand(m.start(), m.end(), _shift_or_this("day", offset))


def _en_unit(m: re.Match[str], text: str) -> _Cand:
    q, unit = m.group("q").lower(), m.group("unit").lower()
    return _Cand(m.start(), m.end(), _shift_or_this(unit, {"last": -1, "this": 0, "next": 1}[q]))


def _shift_or_this(unit: str, n: int) -> _Resolver:
    if n:
        return _shifted(unit, n)
    return lambda ctx: (ctx.today, unit, True)


def _en_ago(m: re.Match[str], text: str) -> _Cand | None:
    n, unit = _number(m.group("n")), m.group("unit").lower()
    future = not m.group(0).lower().endswith("ago")
    return _Cand(m.start(), m.end(), _shifted(unit, n if future else -n)) if _unit_ok(unit, n) else None


def _en_weekday(m: re.Match[str], text: str) -> _Cand:
    q = (m.group("q") or "").lower().split()  # "this coming" is "this", "this past" is "last"
    mode = _EN_WEEKDAY_MODES[q[-1]] if q else None
    return _Cand(m.start(), m.end(), _weekday_resolver(_EN_WEEKDAYS[m.group("wd").lower()], mode))


def _en_month(m: re.Match[str], text: str) -> _Cand | None:
    raw = m.group("mon")
    key = raw.rstrip(".").lower()
    month = _EN_MONTHS.get(key) or _EN_ABBR[key]
    if key in _EN_CAPITAL_ONLY and raw[0].islower():
        return None
    day = int(m.group("day")) if m.group("day") else None
    if day is not None and not 1 <= day <= 31:
        return None
    if m.group("wd") and day is None:
        return None
    q = (m.group("q") or "").lower() or None
    yq = (m.group("yq") or "").lower() or None
    year = _year(m.group("year"), None) if m.group("year") else None
    if m.group("year") and year is None:
        return None
    bare = day is None and year is None and q is None and yq is None
    if bare and _prev_word(text, m.start()) not in _EN_MONTH_CUES:
        return None
    shift = {"last": -1, "this": 0, "next": 1}[yq] if yq else None
    return _Cand(m.start(), m.end(), _month_resolver(month, day, year, q, shift))


def _en_year(m: re.Match[str], text: str) -> _Cand | None:
    year = _year(m.group("y"), None)
    if year is None:
        return None
    return _fixed(m.start("y"), m.end("y"), date(year, 1, 1), "year", relative=False)


def _iso(m: re.Match[str], text: str) -> _Cand | None:
    year = _year(m.group("y"), None)
    found = _valid(year, int(m.group("m")), int(m.group("d"))) if year else None
    return _fixed(m.start(), m.end(), found, "day", relative=False) if found else None


def _block(m: re.Match[str], text: str) -> _Cand:
    return _Cand(m.start(), m.end(), None)


_EN_NOT_AFTER = r"(?<![A-Za-z0-9])"
_EN_END = r"(?![A-Za-z])"
_EN_TAIL = r"(?:,?\s+(?P<year>\d{4})(?![\d:]))?(?:\s+(?P<yq>last|next|this)\s+year(?![A-Za-z]))?"
_EN_RULES: list[tuple[str, _Builder]] = [
    # recurrences and vague spans: no period, and nothing inside them is read either
    (rf"{_EN_NOT_AFTER}(?:every|each)\s+(?:other\s+)?(?:{_EN_WD}|{_alt(_EN_MONTHS)}|day|week|month|year|"
     r"morning|afternoon|evening|night)" + _EN_END, _block),
    (rf"{_EN_NOT_AFTER}(?:{_EN_WD})s{_EN_END}", _block),
    (rf"{_EN_NOT_AFTER}(?:(?:a\s+)?few|several|many|some|a\s+number\s+of)\s+{_EN_UNIT}\s+(?:ago|from\s+now)"
     + _EN_END, _block),
    (rf"{_EN_NOT_AFTER}in\s+(?:(?:a\s+)?few|several|many|some)\s+{_EN_UNIT}" + _EN_END, _block),
    (rf"{_EN_NOT_AFTER}the\s+(?:last|past|next|following|previous|same|first|second|third|fourth|final)\s+"
     rf"(?:{_EN_WD}|day|week|month|year|night|morning)s?" + _EN_END, _block),
    # day words, units, counts
    (rf"{_EN_NOT_AFTER}(?<!the )(?:{_words(_EN_DAY_WORDS)}){_EN_END}", _en_day_word),
    (rf"{_EN_NOT_AFTER}(?P<q>last|this|next)\s+(?P<unit>week|month|year){_EN_END}", _en_unit),
    (rf"{_EN_NOT_AFTER}{_EN_NUM}\s+{_EN_UNIT}\s+(?:ago|from\s+(?:now|today)){_EN_END}", _en_ago),
    (rf"{_EN_NOT_AFTER}in\s+{_EN_NUM}\s+{_EN_UNIT}{_EN_END}", _en_ago),
    # weekdays and dates
    (rf"{_EN_NOT_AFTER}(?:(?P<q>last|past|next|this\s+coming|this\s+past|this|coming)\s+)?(?P<wd>{_EN_WD}){_EN_END}",
     _en_weekday),
    (rf"{_EN_NOT_AFTER}(?:(?P<wd>{_EN_WD}),?\s+)?(?:(?P<q>last|next|this)\s+)?{_EN_MON}(?![A-Za-z])"
     rf"(?:\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![A-Za-z0-9:]))?{_EN_TAIL}", _en_month),
    (rf"(?<![A-Za-z0-9.:/])(?:(?P<wd>{_EN_WD}),?\s+)?(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+"
     rf"(?:of\s+)?(?P<q>)(?:{_EN_MON})(?![A-Za-z]){_EN_TAIL}", _en_month),
    (rf"{_EN_NOT_AFTER}(?:{_alt(_EN_YEAR_CUES)}|the\s+year)[\s-]+(?P<y>(?:1[89]|2[0-4])\d\d)"
     r"(?![\d:%/]|[-.,]\d)", _en_year),
    (r"(?<![\d/.-])(?P<y>\d{4})(?P<sep>[-/])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?!\d)", _iso),
]  # fmt: skip

# --- Thai --------------------------------------------------------------------------------------------------

_TH_QUAL = {"นี้": "this", "หน้า": "next", "ที่แล้ว": "last", "ที่ผ่านมา": "last", "ก่อน": "last"}
_TH_DAY_WORDS = {
    "วันนี้": 0, "คืนนี้": 0, "เช้านี้": 0, "บ่ายนี้": 0, "เย็นนี้": 0, "เมื่อเช้า": 0, "เมื่อเช้านี้": 0,
    "เมื่อบ่าย": 0, "เมื่อวาน": -1, "เมื่อวานนี้": -1, "วานนี้": -1, "เมื่อคืน": -1, "เมื่อคืนนี้": -1,
    "เมื่อวานซืน": -2, "เมื่อวานซืนนี้": -2, "วานซืน": -2, "พรุ่งนี้": 1, "วันพรุ่งนี้": 1,
    "มะรืน": 2, "มะรืนนี้": 2, "วันมะรืน": 2, "วันมะรืนนี้": 2,
}  # fmt: skip
_TH_UNITS = {"วัน": "day", "สัปดาห์": "week", "อาทิตย์": "week", "เดือน": "month", "ปี": "year"}
_TH_WEEKDAYS = {
    "จันทร์": 0, "อังคาร": 1, "พุธ": 2, "พฤหัสบดี": 3, "พฤหัส": 3, "ศุกร์": 4, "เสาร์": 5, "อาทิตย์": 6,
}  # fmt: skip
_TH_NUMBERS = {
    "หนึ่ง": 1, "สอง": 2, "สาม": 3, "สี่": 4, "ห้า": 5, "หก": 6, "เจ็ด": 7, "แปด": 8, "เก้า": 9, "สิบ": 10,
    "สิบเอ็ด": 11, "สิบสอง": 12, "ยี่สิบ": 20, "สามสิบ": 30,
}  # fmt: skip
_TH_MONTHS = {
    **{name: i + 1 for i, name in enumerate(_TH_MONTH_FULL)},
    **{name: i + 1 for i, name in enumerate(_TH_MONTH_ABBR)},
    **{name.rstrip("."): i + 1 for i, name in enumerate(_TH_MONTH_ABBR)},
    **{name: i + 1 for i, name in enumerate(_TH_MONTH_SHORT)},
}
_TH_WD = _alt(_TH_WEEKDAYS)
_TH_NUM = rf"(?P<n>\d{{1,4}}|{_alt(_TH_NUMBERS)})"
_TH_UNIT = rf"(?P<unit>{_alt(_TH_UNITS)})"
_TH_VAGUE = r"(?:หลาย|ไม่กี่|บาง|สองสาม|สามสี่|สี่ห้า)"
_TH_LETTER = r"[\u0e01-\u0e4e]"
_TH_MONTH_CUE = _Rx(r"(?:ใน|ช่วง|ตอน|เมื่อ|ตั้งแต่|ถึง|ก่อน|หลัง|ต้น|กลาง|ปลาย|เดือน)\s*$")
_TH_ERA = r"(?:พ\.\s?ศ\.|ค\.\s?ศ\.)"
_TH_TAIL = (
    rf"(?:\s*(?:(?P<era>{_TH_ERA})|ปี(?:\s*(?P<era2>{_TH_ERA}))?)?\s*"
    r"(?P<year>\d{4}(?!\d)|\d{2}(?![\d:]|\s*(?:โมง|น\.|นาฬิกา|ทุ่ม|คน|บาท|%|\.\d))))?"
    r"(?:\s*ปี\s*(?P<yq>นี้|หน้า|ที่แล้ว|ที่ผ่านมา|ก่อน))?"
    r"(?:\s*(?P<q>นี้|หน้า|ที่แล้ว|ที่ผ่านมา))?"
)


def _th_day_word(m: re.Match[str], text: str) -> _Cand:
    offset = _TH_DAY_WORDS[m.group(0)]
    return _Cand(m.start(), m.end(), _shift_or_this("day", offset))


def _th_unit(m: re.Match[str], text: str) -> _Cand:
    n = {"this": 0, "next": 1, "last": -1}[_TH_QUAL[m.group("q")]]
    return _Cand(m.start(), m.end(), _shift_or_this(_TH_UNITS[m.group("unit")], n))


def _th_count(m: re.Match[str], text: str) -> _Cand | None:
    raw, unit = m.group("n"), _TH_UNITS[m.group("unit")]
    n = _TH_NUMBERS[raw] if raw in _TH_NUMBERS else int(raw)
    future = "อีก" in m.group(0) or m.group(0).endswith("ข้างหน้า")
    return _Cand(m.start(), m.end(), _shifted(unit, n if future else -n)) if _unit_ok(unit, n) else None


def _th_weekday(m: re.Match[str], text: str) -> _Cand:
    q = m.group("q")
    mode = _TH_QUAL[q] if q else None
    return _Cand(m.start(), m.end(), _weekday_resolver(_TH_WEEKDAYS[m.group("wd")], mode))


def _th_month(m: re.Match[str], text: str) -> _Cand | None:
    name = m.group("mon")
    month = _TH_MONTHS[name]
    day = int(m.group("day")) if m.groupdict().get("day") else None
    if day is not None and not 1 <= day <= 31:
        return None
    year = None
    if m.group("year"):
        year = _year(m.group("year"), _era(m.group("era") or m.group("era2")))
        if year is None:
            return None
    q = _TH_QUAL[m.group("q").strip()] if m.group("q") else None
    shift = {"this": 0, "next": 1, "last": -1}[_TH_QUAL[m.group("yq")]] if m.group("yq") else None
    prefixed = bool(m.groupdict().get("pre"))
    if name not in _TH_MONTH_FULL and not (day or year or prefixed or q or shift is not None):
        # short names and abbreviations are other words too (ตุลาการ, the ก.พ. exam): they need a cue
        if not _TH_MONTH_CUE.search(text[max(0, m.start() - 12) : m.start()]):
            return None
        if name in _TH_MONTH_SHORT and re.match(_TH_LETTER, text[m.end() : m.end() + 1]):
            return None
    return _Cand(m.start(), m.end(), _month_resolver(month, day, year, q, shift))


def _th_day_of_month(m: re.Match[str], text: str) -> _Cand | None:
    day = int(m.group("day"))
    if not 1 <= day <= 31:
        return None
    return _Cand(m.start(), m.end(), _day_of_month_resolver(day, "future" if m.group("q") else None))


def _th_year(m: re.Match[str], text: str) -> _Cand | None:
    year = _year(m.group("y"), _era(m.group("era") or m.group("era_")))
    return _fixed(m.start(), m.end(), date(year, 1, 1), "year", relative=False) if year else None


def _th_numeric(m: re.Match[str], text: str) -> _Cand | None:
    if not _THAI_CHAR.search(text):  # day first is the Thai habit; in English 3/4/2026 is ambiguous
        return None
    year = _year(m.group("y"), None)
    found = _valid(year, int(m.group("m")), int(m.group("d"))) if year else None
    return _fixed(m.start(), m.end(), found, "day", relative=False) if found else None


_TH_MON = rf"(?P<mon>{_alt(_TH_MONTHS)})"
_TH_RULES: list[tuple[str, _Builder]] = [
    # recurrences ("every Monday", "nowadays") and vague counts: no period
    (rf"ทุก\s*(?:วัน(?:{_TH_WD})?(?:นี้)?|คืน|เช้า|สัปดาห์|อาทิตย์|เดือน(?:{_alt(_TH_MONTHS)})?|ปี|{_TH_WD})", _block),
    (rf"(?:อีก\s*)?{_TH_VAGUE}\s*{_TH_UNIT}(?:\s*(?:ก่อน|ที่แล้ว|ที่ผ่านมา|ข้างหน้า))?", _block),
    # day words, units, counts
    (_alt(_TH_DAY_WORDS), _th_day_word),
    (r"(?<!พระ)(?<!ดวง)(?<!วัน)(?P<unit>สัปดาห์|อาทิตย์|เดือน|ปี)\s*(?P<q>นี้|หน้า|ที่แล้ว|ที่ผ่านมา|ก่อน)", _th_unit),
    (rf"(?:(?:เมื่อ|ตอน)\s*)?(?<![\d.:/]){_TH_NUM}\s*{_TH_UNIT}\s*(?:ก่อน|ที่แล้ว|ที่ผ่านมา)", _th_count),
    (rf"(?:ใน\s*)?อีก\s*{_TH_NUM}\s*{_TH_UNIT}(?:\s*ข้างหน้า)?", _th_count),
    (rf"(?<![\d.:/]){_TH_NUM}\s*{_TH_UNIT}\s*ข้างหน้า", _th_count),
    # weekdays (วันอาทิตย์ is Sunday; อาทิตย์ alone is a week)
    (rf"วัน(?P<wd>{_TH_WD})(?:\s*(?P<q>นี้|หน้า|ที่แล้ว|ที่ผ่านมา|ก่อน(?!{_TH_LETTER})))?", _th_weekday),
    (rf"(?<!ดาว)(?<!พระ)(?<!วัน)(?P<wd>{_alt(w for w in _TH_WEEKDAYS if w != 'อาทิตย์')})\s*"
     rf"(?P<q>นี้|หน้า|ที่แล้ว|ที่ผ่านมา|ก่อน(?!{_TH_LETTER}))", _th_weekday),
    # dates and months
    (rf"(?<![\d.:/])(?:วัน(?:{_TH_WD})\s*(?:ที่\s*)?|วันที่\s*)?(?P<day>\d{{1,2}})\s*(?P<pre>เดือน\s*)?"
     rf"{_TH_MON}{_TH_TAIL}", _th_month),
    (rf"(?<!\.)(?P<pre>เดือน\s*)?{_TH_MON}{_TH_TAIL}", _th_month),
    (r"วันที่\s*(?P<day>\d{1,2})(?!\d)(?!\s*(?:ของ|[:.\-–/]\d))(?:\s*(?P<q>นี้))?", _th_day_of_month),
    (rf"(?<!ทุก)(?:ปี\s*(?P<era>{_TH_ERA})?|(?P<era_>{_TH_ERA}))\s*(?P<y>\d{{4}})(?!\d)", _th_year),
    (r"(?<![\d/.])(?P<d>\d{1,2})/(?P<m>\d{1,2})/(?P<y>\d{4}|\d{2})(?![\d/])", _th_numeric),
]  # fmt: skip


_RULES = [*((_Rx(p, _I), b) for p, b in _EN_RULES), *((_Rx(p), b) for p, b in _TH_RULES)]


def warm() -> None:
    """Compile every pattern now (a SnapStart hook's work), instead of on the first message read."""
    for value in [*(rx for rx, _ in _RULES), *globals().values()]:
        if isinstance(value, _Rx):
            value.compiled  # noqa: B018 - compiling is the point


def _scan(pattern: _Rx, build: _Builder, text: str) -> Iterator[_Cand]:
    """Every accepted match; a rejected one is retried one character later (a shorter reading may fit)."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        cand = build(m, text)
        if cand is not None:
            yield cand
        pos = max(m.end(), m.start() + 1) if cand is not None else m.start() + 1


def _select(cands: list[_Cand]) -> list[_Cand]:
    """The longest expressions win; blockers win ties."""
    chosen: list[_Cand] = []
    for c in sorted(cands, key=lambda c: (c.start - c.end, c.start, c.resolve is not None)):
        if all(c.end <= o.start or c.start >= o.end for o in chosen):
            chosen.append(c)
    return sorted(chosen, key=lambda c: c.start)


# --- tense -------------------------------------------------------------------------------------------------

_EN_FUTURE = _Rx(
    r"(?<![A-Za-z])(?:will|shall|won'?t|going\s+to|gonna|plan(?:s|ning)?\s+to|intend(?:s|ing)?\s+to|"
    r"ha(?:ve|s)\s+to|needs?\s+to|must|(?-i:may)|might|next(?!\s+to(?![A-Za-z]))|upcoming|scheduled|booked)"
    r"(?![A-Za-z])|(?<=[A-Za-z])['’]ll(?![A-Za-z])",
    _I,
)
_TH_FUTURE = _Rx(r"จะ|(?<!ถูก)ต้อง|(?<!ถ)นัด|วางแผน|ตั้งใจ|กำหนดการ|เตรียม")
_STRONG_END = _Rx(r"[.!?](?=\s)|\n")


def _future(text: str) -> bool:
    return bool(_EN_FUTURE.search(text) or _TH_FUTURE.search(text))


# --- finding -----------------------------------------------------------------------------------------------


def mentions(text: str, said_at: datetime, tz: ZoneInfo) -> list[Mention]:
    """Every time expression in `text`, left to right, resolved against `said_at` in `tz`."""
    return _find(text, _local_date(said_at, tz), tz, query=False)


def query_period(query: str, reference: datetime, tz: ZoneInfo) -> Period | None:
    """The period a question names (the most specific one, the first among equals), or None."""
    return most_specific(query_mentions(query, reference, tz))


def most_specific(found: list[Mention]) -> Period | None:
    """The shortest period among some mentions (the first among equals), or None for none."""
    if not found:
        return None
    return min(found, key=lambda m: (m.period.end - m.period.start, m.start)).period


def query_mentions(query: str, reference: datetime, tz: ZoneInfo) -> list[Mention]:
    """Every time expression of a question, read as `query_period` reads them (recall takes their
    words out of what it searches for: "last week" names no topic)."""
    return _find(query, _local_date(reference, tz), tz, query=True)


def _find(text: str, today: date, tz: ZoneInfo, query: bool) -> list[Mention]:
    work = text.translate(_THAI_DIGITS)  # one character for one: spans stay the text's
    cands = [c for pattern, build in _RULES for c in _scan(pattern, build, work)]
    chosen = [(c.start, c.end, c.resolve) for c in _select(cands) if c.resolve is not None]
    ends = [
        e.start() for e in _STRONG_END.finditer(work) if not any(a <= e.start() < b for a, b, _ in chosen)
    ]
    # a question's cue is read in all of it but its time expressions ("in May" is no modal "may")
    masked = list(work)
    for a, b, _ in chosen:
        masked[a:b] = " " * (b - a)
    whole_future = _future("".join(masked)) if query else False
    found: list[Mention] = []
    for i, (start, end, resolver) in enumerate(chosen):
        future = whole_future
        if not query:  # the clause around it: up to the neighbouring expressions, cut at sentence ends
            lo = max([chosen[i - 1][1] if i else 0, *(e + 1 for e in ends if e < start)])
            hi = min([chosen[i + 1][0] if i + 1 < len(chosen) else len(work), *(e for e in ends if e >= end)])
            future = _future(work[lo:start] + " " + work[end:hi])
        resolved = resolver(_Ctx(today, future))
        if resolved is not None:
            day, grain, relative = resolved
            found.append(Mention(start, end, text[start:end], period_of(day, grain, tz), relative))
    return found


# --- rewriting ---------------------------------------------------------------------------------------------

_EN_PREPS = {
    "on", "in", "at", "since", "until", "till", "by", "from", "to", "before", "after", "during", "of",
    "for", "through", "throughout", "around", "between", "than", "within", "about", "early", "mid", "late",
}  # fmt: skip
_EN_PART = _Rx(r"morning|afternoon|evening|night", _I)
_EN_VERB_AFTER = _Rx(
    r"\s*(?:was|is|were|are|will|would|has|had|seems|seemed|felt|feels|looks|looked)(?![A-Za-z])", _I
)
_TH_CONNECTOR = _Rx(r"(?:ในช่วง|เมื่อตอน|ช่วง|ตอน|เมื่อ)\s*$")
_TH_IN = _Rx(r"ใน\s*$")
_TH_PREP_BEFORE = _Rx(r"(?:ตั้งแต่|จนถึง|ถึง|ก่อน|หลัง|ภายใน|สำหรับ|จน)\s*$")
_SPACES = _Rx(r"[ \t]{2,}")
_BETWEEN_WORD = _Rx(r"(?<![A-Za-z])between(?![A-Za-z])", _I)


def resolve(text: str, said_at: datetime, tz: ZoneInfo) -> Dated:
    """The whole text as one clause: relative words replaced, `valid_at` the first period's start."""
    found = mentions(text, said_at, tz)
    return Dated(_render(text, found), found[0].period.start if found else None)


def _render(text: str, found: list[Mention]) -> str:
    relative = [m for m in found if m.relative]
    if not relative:
        return text
    if is_thai(text):
        return _render_thai(text, relative)
    return _replace(text, relative, _english_phrase)


def _render_thai(text: str, relative: list[Mention]) -> str:
    """Remove the relative words and append their date; in place after a preposition (ตั้งแต่ ก.พ.), or
    when the clause names several relative periods."""
    inline = [bool(_TH_PREP_BEFORE.search(text[max(0, m.start - 12) : m.start])) for m in relative]
    removed = [m for m, keep in zip(relative, inline, strict=True) if not keep]
    if len({(m.period.start, m.period.grain) for m in removed}) > 1:
        inline, removed = [True] * len(relative), []
    pieces: list[str] = []
    pos = 0
    for m, keep in zip(relative, inline, strict=True):
        before = text[pos : m.start]
        if keep:
            pieces += [before, _thai_phrase(m, before, text[m.end :])]
        else:
            before = _TH_CONNECTOR.sub("", before)
            pieces.append(_TH_IN.sub("", before) if m.period.grain != "day" else before)
        pos = m.end
    pieces.append(text[pos:])
    rest = _SPACES.sub(" ", "".join(pieces)).strip()
    if not removed:
        return rest
    label = format_date(removed[0].period.local_start, removed[0].period.grain, "th")
    return f"{rest} ({label})" if rest else label


def _replace(text: str, found: list[Mention], phrase: Callable[[Mention, str, str], str]) -> str:
    out: list[str] = []
    pos = 0
    for m in found:
        out.append(text[pos : m.start])
        out.append(phrase(m, text[: m.start], text[m.end :]))
        pos = m.end
    out.append(text[pos:])
    return _SPACES.sub(" ", "".join(out)).strip()


def _thai_phrase(m: Mention, before: str, after: str) -> str:
    label = format_date(m.period.local_start, m.period.grain, "th")
    word = {"day": f"วันที่ {label}", "month": f"เดือน {label}"}.get(m.period.grain, label)
    return f" {word} "


def _english_phrase(m: Mention, before: str, after: str) -> str:
    p = m.period
    core = format_date(p.local_start, p.grain, "en")
    part = _EN_PART.search(m.text)
    if p.grain == "day" and part:
        core = f"the {part.group(0).lower()} of {core}"
    prev = _prev_word(before, len(before))
    between = prev in ("and", "or") and _BETWEEN_WORD.search(before)
    # no preposition after one, before a possessive, or as the subject ("last week was hard")
    if prev in _EN_PREPS or between or after.startswith(("'s", "’s")) or _EN_VERB_AFTER.match(after):
        phrase = core
    else:
        phrase = f"{'on' if p.grain == 'day' else 'in'} {core}"
    at_start = not before.strip() or before.rstrip()[-1] in ".!?\n"
    if at_start and m.text[:1].isupper():
        phrase = phrase[:1].upper() + phrase[1:]
    return phrase


# --- clauses -----------------------------------------------------------------------------------------------

_EN_STRONG = _Rx(r"(?<=[.!?])\s+|\s*\n\s*")
_EN_WEAK = _Rx(r"\s*[,;]\s*(?:(?:and|but|then|so|while)\s+)?", _I)
_EN_CONJ = _Rx(r"\s+(?:and|but|then|so)\s+", _I)  # a split only right before a time expression
_BETWEEN = _Rx(r"(?<![A-Za-z])between\s+[^.!?,;]*$", _I)  # "between Monday and Friday" is one span
_TH_WEAK = _Rx(r"\s+")
_TH_CONJ = _Rx(r"(?:แล้วก็|แล้ว|และ|ส่วน|แต่)")
_FILLER = _Rx(
    r"(?:on|in|at|the|of|since|until|by|from|during|and|then|so|but|early|late|mid|morning|afternoon|"
    r"evening|night|เมื่อ|ตอน|ในช่วง|ใน|ช่วง|วันที่|เช้า|สาย|เที่ยง|บ่าย|เย็น|ค่ำ|คืน|ดึก|นี้|ครับ|ค่ะ|คะ|นะ|จ้ะ|จ้า|"
    r"[\s.,!?;:()\-–])*",
    _I,
)


@dataclass
class _Part:
    start: int
    end: int
    key: tuple[datetime, datetime] | None  # the first period it names
    time_only: bool  # nothing but a time expression ("เมื่อวาน", "On Monday")
    strong_before: bool  # a sentence ends before it


@dataclass
class _Group:
    start: int
    end: int
    key: tuple[datetime, datetime] | None
    open: bool  # the parts after it that name no time continue it


def _key(m: Mention) -> tuple[datetime, datetime]:
    return (m.period.start, m.period.end)


def dated_clauses(text: str, said_at: datetime, tz: ZoneInfo) -> list[Dated]:
    """`text` split into clauses that name different times, each rewritten and dated (see the rules)."""
    found = mentions(text, said_at, tz)
    if len({_key(m) for m in found}) <= 1:
        return [Dated(_render(text, found), found[0].period.start if found else None, (0, len(text)))]
    out: list[Dated] = []
    for g in _group(_parts(text, found)):
        piece = text[g.start : g.end]
        trimmed = piece.rstrip().rstrip(",;:").rstrip()
        start = g.start + len(piece) - len(piece.lstrip())
        trimmed = trimmed.lstrip()
        inner = [_shift(m, -start) for m in found if start <= m.start and m.end <= start + len(trimmed)]
        span = (start, start + len(trimmed))
        out.append(Dated(_render(trimmed, inner), inner[0].period.start if inner else None, span))
    return out


def _shift(m: Mention, by: int) -> Mention:
    return Mention(m.start + by, m.end + by, m.text, m.period, m.relative)


def _parts(text: str, found: list[Mention]) -> list[_Part]:
    """The text between separators (never inside an expression), each with the first period it names."""
    starts = {m.start for m in found}
    if is_thai(text):
        weak = [
            *_TH_WEAK.finditer(text),
            *(s for s in _TH_CONJ.finditer(text) if s.end() in starts and s.start()),
        ]
    else:
        conj = [
            s for s in _EN_CONJ.finditer(text) if s.end() in starts and not _BETWEEN.search(text[: s.start()])
        ]
        weak = [*_EN_WEAK.finditer(text), *conj]
    seps = [(s.start(), s.end(), True) for s in _EN_STRONG.finditer(text)]
    seps += [(s.start(), s.end(), False) for s in weak]
    merged: list[tuple[int, int, bool]] = []
    for start, end, strong in sorted(seps):
        if end == start or any(start < m.end and m.start < end for m in found):
            continue
        if merged and start <= merged[-1][1]:
            last = merged.pop()
            merged.append((last[0], max(last[1], end), last[2] or strong))
        else:
            merged.append((start, end, strong))
    parts: list[_Part] = []
    pos, strong_before = 0, False
    for start, end, strong in [*merged, (len(text), len(text), False)]:
        if start > pos:
            inside = [m for m in found if pos <= m.start and m.end <= start]
            cuts = [pos, *(x for m in inside for x in (m.start, m.end)), start]
            rest = "".join(text[cuts[k] : cuts[k + 1]] for k in range(0, len(cuts), 2))
            time_only = bool(inside) and _FILLER.fullmatch(rest) is not None
            parts.append(_Part(pos, start, _key(inside[0]) if inside else None, time_only, strong_before))
            strong_before = False
        strong_before = strong_before or strong
        pos = end
    return parts


def _group(parts: list[_Part]) -> list[_Group]:
    groups: list[_Group] = []
    for p in parts:
        cur = groups[-1] if groups and not p.strong_before else None
        if p.key is None:
            if cur is not None and cur.open:
                cur.end = p.end
            else:
                groups.append(_Group(p.start, p.end, None, True))
        elif cur is not None and cur.key == p.key:
            cur.end = p.end
        elif cur is not None and cur.key is None and cur.open:
            # words naming no time, then a time: a time-only part ends their clause; a timed clause takes them
            cur.end, cur.key, cur.open = p.end, p.key, not p.time_only
        else:
            groups.append(_Group(p.start, p.end, p.key, True))
    return groups
