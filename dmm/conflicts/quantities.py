"""Find quantities in text and normalise their units, so that values can be compared.

"3600 seconds" and "one hour" are both 3600 s; "10,485,760 bytes" and "10 MiB" are both
10485760 B; "five projects" is the count 5 of "project". Pure functions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from dmm.conflicts.synonyms import canonical
from dmm.text.analyze import STOPWORDS, stem

WORD_NUMBERS = {
    "zero": 0, "one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000, "single": 1,
    "double": 2, "twice": 2,
    # German, Spanish
    "ein": 1, "eine": 1, "einzige": 1, "einziges": 1, "einzigen": 1, "einziger": 1, "zwei": 2,
    "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10,
    "zwölf": 12, "uno": 1, "una": 1, "único": 1, "única": 1, "dos": 2, "tres": 3, "cuatro": 4,
    "cinco": 5, "seis": 6, "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "doce": 12,
    "quince": 15,
}
SCALE = {"million": 1_000_000, "millions": 1_000_000, "billion": 1_000_000_000,
         "thousand": 1000, "hundred": 100}
DURATION = {  # seconds
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001, "msec": 0.001,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "sekunden": 1, "segundos": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60, "minuten": 60, "minutos": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "stunden": 3600,
    "stunde": 3600, "horas": 3600, "hora": 3600,
    "d": 86400, "day": 86400, "days": 86400, "tage": 86400, "tagen": 86400, "días": 86400,
    "week": 604800, "weeks": 604800, "wochen": 604800, "fortnight": 1209600,
    "month": 2592000, "months": 2592000, "year": 31536000, "years": 31536000,
}
SIZE = {  # bytes
    "b": 1, "byte": 1, "bytes": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2,
    "gb": 1000**3, "gib": 1024**3, "tb": 1000**4, "tib": 1024**4, "gigabyte": 1000**3,
    "gigabytes": 1000**3, "megabyte": 1000**2, "megabytes": 1000**2, "kilobyte": 1000,
    "kilobytes": 1000, "terabyte": 1000**4,
}
# "14 August", "3. März", "5 de enero": a day of the month, not a count of months
MONTHS = frozenset("""january february march april may june july august september october
    november december jan feb mar apr jun jul aug sep sept oct nov dec januar februar märz
    juni juli oktober dezember enero febrero marzo abril mayo junio julio agosto septiembre
    octubre noviembre diciembre""".split())
_NUM = r"(\d{1,3}(?:[,_ ]\d{3})+|\d+(?:\.\d+)?)"
# a number not inside a clock time ("02:00"), a version or a name ("powershell-7", "python-3.11")
_NUMBER = re.compile(rf"(?<![\w.:])(?<![A-Za-z]-){_NUM}(?![:\d])"
                     r"(?:\s*(million|billion|thousand))?\s*%?", re.I)
# number words are looked up word by word: one regular expression alternating 66 words, tried
# at every position, cost 0.4 ms per memory, six times what the digits cost
_WORD = re.compile(r"\b[^\W\d_]+\b")


def _tokens(text: str) -> list[tuple[int, int, str | None, str | None, str | None]]:
    """(start, end, digits, scale, number word) of each number and number word, in order; a
    scale word is part of its number ("5 thousand")."""
    out = [(m.start(), m.end(), m.group(1), m.group(2), None) for m in _NUMBER.finditer(text)]
    scaled = {i for start, end, _, scale, _ in out if scale for i in range(start, end)}
    out += [(m.start(), m.end(), None, None, word) for m in _WORD.finditer(text)
            if (word := m.group(0).lower()) in WORD_NUMBERS and m.start() not in scaled]
    return sorted(out)


_UNIT = re.compile(r"\s*-?\s*([A-Za-zÀ-ÿ]+)")
_VERSION = re.compile(r"\b([A-Z][A-Za-z.+#-]{1,20})\s+v?(\d+(?:\.\d+){0,2})\b(?![.,]\d)(?!\s*%)")


# Chinese: a numeral and a measure word ("两位审阅者" two reviewers, "三天" three days); a
# numeral after 第 is an ordinal ("第二个" the second)
_CJK_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
               "七": 7, "八": 8, "九": 9}
_CJK_SCALE = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_CJK_DURATIONS = {"秒": "second", "秒钟": "second", "分钟": "minute", "小时": "hour",
                  "个小时": "hour", "天": "day", "周": "week", "个星期": "week", "个月": "month",
                  "年": "year"}
_CJK_COUNTS = {"位": "人", "名": "人", "个人": "人", "人": "人", "次": "次"}  # people, times
_CJK_NUMERALS = "".join(_CJK_DIGITS) + "".join(_CJK_SCALE)
_CJK_QUANTITY = re.compile(
    rf"(?<![第\d{_CJK_NUMERALS}])(\d+|[{_CJK_NUMERALS}]+)\s*("
    + "|".join(sorted([*_CJK_DURATIONS, *_CJK_COUNTS], key=len, reverse=True)) + ")")
# a text without any of these has no Chinese quantity (most texts: spares the expression above)
_CJK_UNIT_STARTS = {unit[0] for unit in [*_CJK_DURATIONS, *_CJK_COUNTS]}


def _cjk_number(text: str) -> int | None:
    """一 -> 1, 十二 -> 12, 二十 -> 20, 三百五十 -> 350; None for what is not a number."""
    if text.isdigit():
        return int(text)
    total, digit = 0, None
    for ch in text:
        if ch in _CJK_DIGITS:
            digit = _CJK_DIGITS[ch]
        elif ch in _CJK_SCALE:
            total += (1 if digit is None else digit) * _CJK_SCALE[ch]
            digit = None
        else:
            return None
    return total + (digit or 0)


class Quantity(NamedTuple):
    dimension: str  # "duration", "size", "percent", "count:<noun stem>"
    value: float
    text: str
    start: int


class Version(NamedTuple):
    name: str  # lower-case product name
    version: str
    text: str
    start: int
    or_later: bool = False  # "Node.js 18.0 or later", "Python 3.9+", "at least Go 1.21"


def _number(raw: str, scale: str | None) -> float:
    value = float(re.sub(r"[,_ ]", "", raw))
    return value * SCALE.get((scale or "").lower(), 1)


# "twice a minute", "3 times per hour", "once a day": a frequency, read as the period between
# two events (30 seconds, 20 minutes, a day), so that it meets "every 30 seconds"
_FREQUENCY = re.compile(r"\b(once|twice|thrice|(\d+|[a-z]+)\s+times)\s+(?:a|an|per|every|each)\s+"
                        r"([a-z]+)\b", re.I)
_FREQUENCY_CUE = re.compile(r"\b(?:once|twice|thrice|times)\s+(?:a|an|per|every|each)\s", re.I)
_TIMES = {"once": 1, "twice": 2, "thrice": 3}


def _frequencies(text: str) -> list[Quantity]:
    if not _FREQUENCY_CUE.search(text):
        return []  # most texts: spares the expression below, tried at every word
    out = []
    for m in _FREQUENCY.finditer(text):
        unit = m.group(3).lower()
        count = m.group(2)
        n = _TIMES.get(m.group(1).lower()) or (
            int(count) if count and count.isdigit() else WORD_NUMBERS.get((count or "").lower()))
        if unit in DURATION and n:
            out.append(Quantity("duration", DURATION[unit] / n, m.group(0), m.start()))
    return out


# HTTP error statuses: "404s" and "503s" are responses counted, not durations (a glued "s"
# is otherwise seconds: "30s")
_HTTP_ERRORS = frozenset(range(400, 419)) | {421, 422, 423, 424, 425, 426, 428, 429, 431, 451} \
    | frozenset(range(500, 512))


# A number right after one of these words names a document or a part of one ("ADR 39",
# "RFC 7231", "section 4.2", "step 3", "PEP 8", "ISO 8601", "issue #12"): it identifies, it is
# no value of a quantity, and two of them never disagree.
DOCUMENT_WORDS = frozenset("""adr adrs rfc rfcs pep peps iso iec ieee section sections sec
    chapter chapters step steps phase stage part parts appendix annex figure fig table page
    pages item rule rules article articles paragraph clause issue issues ticket tickets pr
    prs mr story epic lesson exhibit nr decision record footnote""".split())
_DOCUMENT_REF = re.compile(r"(?:\b([A-Za-z]+)\.?|[§#])\s*[#:-]?\s*$")


def names_document(text: str, start: int) -> bool:
    """The number at ``start`` follows a word that makes it a document's number."""
    m = _DOCUMENT_REF.search(text, max(0, start - 24), start)
    return bool(m) and (m.group(1) is None or m.group(1).lower() in DOCUMENT_WORDS)


# A bare number a noun is set to, ending its clause: "pool size is 20", "retries = 3", "max
# workers: 8", "a pool size of 20". The noun is what is counted; the number has no unit of its
# own. Not after a verb: "capped at 200", "set to 50", "limited to 5" say how a value is
# bounded or changed, and their word is no noun.
_SETTING = re.compile(
    rf"\b([^\W\d_]{{3,}})\s*(?:\s(?:is|are|was|were|of|equals)\s+|[=:]\s*){_NUM}"
    r"(?=\s*(?:$|[,;.)](?:\s|$)))", re.I)
_VERB_FORM = re.compile(r"(?:ed|ing)$")


_VERSION_NOUNS = frozenset("version versions release releases".split())  # versions.py's


def settings(text: str) -> list[Quantity]:
    """The bare values ``text`` sets its nouns to ("Database connection pool size is 20":
    size 20), each as a count of its noun; a noun that is a stop word or a month names
    nothing ("is 20" of "it", "May 20")."""
    out = []
    for m in _SETTING.finditer(text):
        noun = m.group(1).lower()
        if (noun in STOPWORDS or noun in MONTHS or noun in _VERSION_NOUNS
                or _VERB_FORM.search(noun) or names_document(text, m.start(2))):
            continue
        out.append(Quantity(f"count:{canonical(stem(noun))}", _number(m.group(2), None),
                            text[m.start(1):m.end(2)], m.start(1)))
    return out


def quantities(text: str) -> list[Quantity]:
    out = _frequencies(text)
    taken = {i for q in out for i in range(q.start, q.start + len(q.text))}
    in_version = {i for v in _versions(text) for i in range(v.start(2), v.end(2))}
    for start, end, digits, scale, word in _tokens(text):
        if start in in_version or start in taken:
            continue
        if digits and names_document(text, start):
            continue
        if word:
            if word in ("a", "an", "ein", "eine", "una", "uno"):
                # "an hour", "a fortnight": only with a unit right after
                u = _UNIT.match(text, end)
                if not u or u.group(1).lower() not in DURATION:
                    continue
            value = float(WORD_NUMBERS[word])
        else:
            value = _number(digits, scale)
        if text[start:end].rstrip().endswith("%") or text[end:end + 8].lower().startswith(
                ("%", " percent", " per cent", " prozent", " por ciento")):
            out.append(Quantity("percent", value, text[start:end], start))
            continue
        u = _UNIT.match(text, end)
        unit = u.group(1).lower() if u else ""
        if len(unit) == 1 and (word or u.start(1) != end):
            unit = ""  # "30s", "46d": a one-letter unit only written against a number
        if unit == "s" and value in _HTTP_ERRORS and digits and "." not in digits:
            continue  # "high numbers of 404s", "503s from the origin": statuses, not seconds
        if unit == "second" and word in ("a", "an", "one", "ein", "eine"):
            continue  # "a second approach": an ordinal far more often than a duration
        if unit in DURATION:
            out.append(Quantity("duration", value * DURATION[unit], text[start:u.end()], start))
        elif unit in SIZE:
            out.append(Quantity("size", value * SIZE[unit], text[start:u.end()], start))
        elif (unit and len(unit) > 2 and unit.isalpha() and unit not in STOPWORDS
              and unit not in MONTHS):
            # counted in other words, the same count: "3 seats", "five members"
            out.append(Quantity(f"count:{canonical(stem(unit))}", value, text[start:u.end()],
                                start))
    for m in (_CJK_QUANTITY.finditer(text) if any(c in text for c in _CJK_UNIT_STARTS)
              else ()):
        value = _cjk_number(m.group(1))
        if value is not None:
            unit = m.group(2)
            if unit in _CJK_DURATIONS:
                out.append(Quantity("duration", value * DURATION[_CJK_DURATIONS[unit]],
                                    m.group(0), m.start()))
            else:
                out.append(Quantity(f"count:{_CJK_COUNTS[unit]}", value, m.group(0), m.start()))
    return out


_MORE_VERSIONS = re.compile(r"\s*(?:to|through|and|or|,|-|–)\s*v?(\d+(?:\.\d+){0,2})\b(?![.,]\d)")


# words that bound the quantity after them: "Max 10 retries", "Top 5 results"
_BOUNDS = frozenset("max maximum min minimum top limit".split())


@lru_cache(maxsize=1)  # quantities() and versions() read the same text one after the other
def _versions(text: str) -> tuple[re.Match, ...]:
    """Matches of a name and a version number; a capitalised word is no product name when it
    is a stop word ("The 3 replicas", "Every 10 minutes", "Only 2 approvals") or bounds the
    quantity after it ("Max 10 retries")."""
    return tuple(m for m in _VERSION.finditer(text)
                 if m.group(1).lower() not in STOPWORDS and m.group(1).lower() not in _BOUNDS
                 and m.group(1).lower().rstrip(".") not in DOCUMENT_WORDS)


# a lower bound, not a pick: "18.0 or later", "3.9+", "v20 and above"; "at least Node 18"
_OR_LATER = re.compile(r"\+(?!\w)|\s*(?:or|and)\s+(?:later|newer|above|higher|greater)\b", re.I)
_AT_LEAST = re.compile(r"\b(?:at\s+least|minimum(?:\s+of)?|min\.?|>=|≥)\s*$", re.I)


def versions(text: str) -> list[Version]:
    """Product versions; "Python 3.9 to 3.13" and "3.9, 3.11 and 3.13" give every version;
    "Node.js 18.0 or later" and "at least Go 1.21" give a lower bound (``or_later``)."""
    out = []
    for m in _versions(text):
        name = m.group(1).lower().rstrip(".-")
        found = [Version(name, m.group(2), m.group(0), m.start())]
        pos = m.end()
        while (more := _MORE_VERSIONS.match(text, pos)):
            found.append(Version(name, more.group(1), f"{m.group(1)} {more.group(1)}",
                                 more.start(1)))
            pos = more.end()
        if _OR_LATER.match(text, pos) or _AT_LEAST.search(text, max(0, m.start() - 12), m.start()):
            found[-1] = found[-1]._replace(or_later=True)
        out.extend(found)
    return out


def same_value(a: float, b: float, tolerance: float = 0.06) -> bool:
    """Equal within ``tolerance`` (10 MB and 10 MiB are the same limit in prose)."""
    if a == b:
        return True
    return abs(a - b) <= tolerance * max(abs(a), abs(b))
