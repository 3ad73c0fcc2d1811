"""Anchors: the words of a memory that read the same in every language (code, identifiers,
acronyms, numbers, quantities in base units), with dates left out; two memories sharing many
are copies in other words or another language (pairs.anchor_overlap compares them).
"""

from __future__ import annotations

import re
from dmm.conflicts.cues import INLINE_CODE
from dmm.conflicts.quantities import MONTHS, Quantity

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._/+-][A-Za-z0-9]+)*|\d+(?:[.,]\d+)*")
_SHAPED = re.compile(r"\d|[A-Z].*[A-Z]|[._/+]")


# dates say when something was written or decided, never what about: ISO dates, years, and
# the day next to a month's name ("30 June", "June 30"), looked for only when a month is named
_YEAR_OR_ISO = re.compile(r"(?:19|20)\d\d(?:-\d{1,2}-\d{1,2})?")  # digits first: fast to scan
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY_MONTH = re.compile(rf"\b\d{{1,2}}\.?\s+(?:{_MONTH})\b|\b(?:{_MONTH})\.?\s+\d{{1,2}}\b",
                        re.I)
_LOWER_WORD = re.compile(r"[a-zäöüéíóúñ]+")


def _not_in_a_number(m: re.Match) -> str:
    """A year or an ISO date, unless it is part of a longer number ("12024", "1.2024")."""
    s, a, b = m.string, m.start(), m.end()
    before, after = s[max(0, a - 2):a], s[b:b + 2]
    if before[-1:].isdigit() or (before[-1:] == "." and before[:1].isdigit()) \
            or after[:1].isdigit() or (after[:1] == "." and after[1:].isdigit()):
        return m.group(0)
    return " "


def _undated(text: str) -> str:
    text = _YEAR_OR_ISO.sub(_not_in_a_number, text)
    if MONTHS.isdisjoint(_LOWER_WORD.findall(text.lower())):
        return text
    return _DAY_MONTH.sub(" ", text)


def anchors(text: str, qs: list[Quantity]) -> set[str]:
    """Language-independent tokens of ``text``: every token of inline code, and the tokens
    outside it that hold a digit, two capitals or a separator (RFC, E501, UTC, docs/x.md),
    plus each quantity as dimension=value in its base unit."""
    text = _undated(text)
    out = {t.lower() for code in INLINE_CODE.findall(text) for t in _TOKEN.findall(code)
           if len(t) > 1}
    out.update(t.lower() for t in _TOKEN.findall(INLINE_CODE.sub(" ", text))
               if len(t) > 1 and _SHAPED.search(t))
    out.update(f"{q.dimension}={q.value:g}" for q in qs)
    return out
