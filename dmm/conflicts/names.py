"""Proper names (products, teams, people) in a memory's text and title, and the roles its point
says a named person holds.
"""

from __future__ import annotations

import re

from dmm.conflicts.headings import is_heading
from dmm.text.analyze import STOPWORDS

# A person's name: two or three capitalised words ("Marta Ruiz", "Priya Raman")
# (a line break inside it is a wrapped line, a blank line ends it)
_PERSON = r"(?P<person>[A-Z][a-z'’-]+(?:[ \t]*\n?[ \t]+[A-Z][a-z'’-]+|\n[A-Z][a-z'’-]+){1,2})"
# a role: an acronym (DPO, DRI, CISO) or a noun phrase ending in a role noun ("Data Protection
# Officer", "release manager"), at most four words
_ROLE_NOUN = (r"officer|owner|lead|manager|maintainer|contact|approver|administrator|steward|"
              r"champion|coordinator|director|head|chair|sponsor|dri")
_ROLE = rf"(?P<role>[A-Z]{{2,5}}|(?:[\w-]+\s+){{0,3}}(?i:{_ROLE_NOUN}))"
_DETERMINER = r"(?:our|the|its|their)\s+(?:(?:appointed|designated|named|current|acting|sole)\s+)?"
# "Marta Ruiz is our appointed Data Protection Officer", "Priya acts as the release manager",
# "The person named as DPO in our policy is Tomasz Nowak", "Our DRI is Sam Lee"
_HOLDS = [
    re.compile(rf"{_PERSON}\s+(?:is|remains|(?:acts|serves)\s+as)\s+{_DETERMINER}{_ROLE}\b"),
    re.compile(rf"\b(?:[Tt]he|[Oo]ur)\s+(?:person|one)\s+(?:named|designated|appointed)\s+as"
               rf"\s+(?:(?:the|our|a)\s+)?{_ROLE}\b[^.;:]{{0,80}}?\bis\s+{_PERSON}"),
    re.compile(rf"\b(?:[Tt]he|[Oo]ur)\s+{_ROLE}\s+is\s+{_PERSON}"),
]


_QUALIFIED = re.compile(r"\s+(?:of|for|on|in|at|to)\b")


def _role_keys(role: str) -> set[str]:
    """What names one role: its words, an acronym, the initials of a capitalised phrase
    ("Data Protection Officer" is the DPO)."""
    words = role.split()
    keys = {" ".join(w.lower() for w in words)}
    if len(words) >= 2 and all(w[0].isupper() for w in words):
        keys.add("".join(w[0] for w in words).lower())
    return keys


def holders(text: str) -> dict[str, tuple[str, str]]:
    """The roles ``text`` (a memory's point: who holds a role is what such a memory is
    about) says a named person holds: {key: (person, role as written)} for every key of the
    role (_role_keys)."""
    out: dict[str, tuple[str, str]] = {}
    if " is " not in text and " as " not in text:
        return out
    for pattern in _HOLDS:
        for m in pattern.finditer(text):
            role = " ".join(m.group("role").split())
            # a bare "owner" or "lead" says nothing of what; "the tech lead of payments" is a
            # role of payments, to be compared only where payments is bound
            if (" " not in role and not role.isupper()) or (
                    m.end("role") == m.end() and _QUALIFIED.match(text, m.end())):
                continue
            for key in _role_keys(role):
                out.setdefault(key, (" ".join(m.group("person").split()), role))
    return out


_NAME = re.compile(r"(?<![\w.-])([A-Z][A-Za-z0-9.+#-]{2,})\b")
# what may come right before the first word of a sentence: the start, a full stop, a blank
# line, a list item's bullet, a heading's hashes; not a line break inside a paragraph (memories
# are often wrapped at 80 columns: "the contractor team at\nNordwave" names Nordwave)
_SENTENCE_START = re.compile(r"(^|[.!?:]\s+|\n[ \t]*\n\s*|\n[ \t]*(?:[-*+>]|\d+[.)]|#+)[ \t]+)$")


def proper_names(text: str) -> set[str]:
    """Proper names (products, teams, people): capitalised words that are not just the first
    word of a sentence, unless they look like a name anyway (RabbitMQ, ADR-12, PostgreSQL)."""
    out = set()
    for m in _NAME.finditer(text):
        word = m.group(1).rstrip(".")
        shaped = any(c.isupper() or c.isdigit() for c in word[1:])
        if shaped or not _SENTENCE_START.search(text[max(0, m.start() - 8):m.start()]):
            if word.lower() not in STOPWORDS:
                out.add(word.lower())
    return out


def title_proper_names(title: str) -> set[str]:
    """Proper names in a title. In a heading a capital says nothing, so only words shaped like
    names count (PostgreSQL, C#, ADR-12)."""
    if is_heading(title):
        return {n for n in proper_names(title) if _shaped(n, title)}
    return proper_names(title)


def _shaped(name: str, text: str) -> bool:
    """Whether ``name`` is written in ``text`` with a capital or digit after its first letter."""
    m = re.search(rf"(?<![\w.-]){re.escape(name)}\b", text, re.I)
    word = m.group(0) if m else name
    return any(c.isupper() or c.isdigit() for c in word[1:]) or not word.isalnum()
