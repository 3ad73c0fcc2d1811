"""A memory's prose and sentences: the body without code blocks and links, the prose that states
values (no tables), its sentences, its point (title and first sentence), and the sentence each
value is said in.

Pure: text in, text out.
"""

from __future__ import annotations

import bisect
import re

from dmm.conflicts.quantities import Quantity
from dmm.text.analyze import terms

_CODE_BLOCK = re.compile(r"^```.*?^```", re.S | re.M)
_LINK = re.compile(r"\[[^\]\n]*\]\([^)\n]*\)")


def without_code(body: str) -> str:
    """``body`` without code blocks and links: a link's text ("see [Avoid X](x.md)") cites
    another memory, it does not forbid anything."""
    return _LINK.sub("", _CODE_BLOCK.sub("", body))


_TABLE_ROW = re.compile(r"^\s*\|.*$", re.M)


def stated_prose(prose: str) -> str:
    """The prose that states values: a table (of targets, of examples, of versions per
    platform) lists values side by side, none of them is the memory's one answer."""
    return _TABLE_ROW.sub("", prose)


def lead(title: str, prose_sentences: list[str]) -> list[str]:
    """A memory's point: its title and the first sentence of its prose. A memory that records
    a change says so there ("Paging moved from Opsgenie to PagerDuty"); a change mentioned
    further down a guide ("models trained on the 1.x API generate code that no longer works")
    is a detail of its subject, not a claim that another memory is out of date."""
    first = next((s for s in prose_sentences if not s.lstrip().startswith(("|", ">"))), "")
    return [title, first] if first else [title]


def split_sentences(text: str) -> list[str]:
    text = re.sub(r"^#.*$", "", text, flags=re.M)
    parts = re.split(r"(?<=[.!?。；;])\s+|\n\s*\n|(?<=[。！？])", text)
    return [" ".join(p.split()) for p in parts if p and p.strip()]


# A sentence or paragraph that gives the reason for a rule ("Why: the server accepts 200
# connections", "Because users leave after 10 seconds, ...", a "## Rationale" section): its
# numbers are facts the rule rests on, not the values it sets. German, Spanish and Chinese too.
_REASON_OPENS = re.compile(
    r"(?:^|(?<=[.!?。！？])\s+|\n)[ \t>*_-]*(?:(?:why|reason|reasons|rationale|background|"
    r"warum|grund|begründung|por\s+qué|motivo|razón)\b\W*?[:：]|because\b|weil\b|porque\b|"
    r"this\s+is\s+because\b|the\s+reason\s+is\b|原因[:：]|因为)", re.I)
_REASON_SECTION = re.compile(
    r"^#{1,6}\s*(?:why|reasons?|rationale|background|warum|begründung|por\s+qué|原因)\b.*$",
    re.I | re.M)
_NEXT_SECTION = re.compile(r"^#{1,6}\s", re.M)
_PARAGRAPH_END = re.compile(r"[.!?。！？](?:\s|$)|\n\s*\n")


def rationale_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` gives reasons: each sentence opening with "Why:", "Because", "Reason:"
    (to its end) and each section under a "Why" or "Rationale" heading (to the next
    heading). A "Why:" label covers its whole paragraph."""
    spans = []
    for m in _REASON_OPENS.finditer(text):
        labelled = ":" in m.group(0) or "：" in m.group(0)
        end = (_BLANK_LINE.search(text, m.end()) if labelled
               else _PARAGRAPH_END.search(text, m.end()))
        spans.append((m.start(), end.end() if end else len(text)))
    for m in _REASON_SECTION.finditer(text):
        end = _NEXT_SECTION.search(text, m.end())
        spans.append((m.start(), end.start() if end else len(text)))
    return spans


_BLANK_LINE = re.compile(r"\n\s*\n")


def in_spans(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


# where a sentence ends: its full stop, a blank line, a list item or a heading; not a line
# break inside a paragraph (memories are markdown, often wrapped at 80 columns)
_SENTENCE_BREAK = re.compile(r"[.!?](?:\s|$)|\n\s*(?:\n|[-*+]\s|\d+[.)]\s|#)")


# a "sentence" longer than this either side of a value is a run-on text (a pasted log, a list
# of figures without full stops): the words near the value are its context
CONTEXT_CHARS = 300


def value_contexts(text: str, qs: list[Quantity], title_terms: set[str]) -> list[set[str]]:
    """The terms of the sentence each quantity of ``text`` is said in, with the title's. Each
    sentence is read once, however many values it holds."""
    breaks = [(m.start(), m.end()) for m in _SENTENCE_BREAK.finditer(text)]
    starts, ends = [b[0] for b in breaks], [b[1] for b in breaks]
    read: dict[tuple[int, int], set[str]] = {}
    out = []
    for q in qs:
        i = bisect.bisect_right(ends, q.start) - 1
        j = bisect.bisect_left(starts, q.start)
        span = (ends[i] if i >= 0 else 0, starts[j] if j < len(starts) else len(text))
        if span[1] - span[0] > 2 * CONTEXT_CHARS:
            span = (max(span[0], q.start - CONTEXT_CHARS), min(span[1], q.start + CONTEXT_CHARS))
        if span not in read:
            read[span] = set(terms(text[span[0]:span[1]])) | title_terms
        out.append(read[span])
    return out
