"""Titles that name a topic or a document ("Vue 3 Development Instructions", "Cursor rules for
Angular development", a title repeating its file's name) rather than state a rule.
"""

from __future__ import annotations

import re

from dmm.conflicts.cues import DIRECTIVE, IMPERATIVE
from dmm.text.analyze import STOPWORDS, has_cjk

# a title that describes a document by what it is for or when it applies: "Cursor rules for
# Angular development", "vite best practices", "Use this agent when building Vue 3 applications"
_DOCUMENT = ("rules|guidelines|guidance|instructions|conventions|best practices|standards|"
             "principles|guide|checklist|recommendations")
_DOCUMENT_FOR = re.compile(rf"\b(?:{_DOCUMENT}|setup)\s+(?:for|on|of|in|when)\b", re.I)
_DOCUMENT_END = re.compile(rf"\b(?:{_DOCUMENT})\W*$", re.I)
_USE_WHEN = re.compile(r"^use\s+(?:this\s+\w+\s+)?when\b", re.I)
# a title that speaks of its own document: "This file provides guidance on building Go
# applications" (not "This repository uses Conventional Commits", a rule)
_SELF_DESCRIBED = re.compile(r"^(?:this|these)\s+(?:files?|documents?|docs?|guides?|pages?|notes?|"
                             r"instructions|skills?)\s+(?:provides?|describes?|contains?|"
                             r"explains?|covers?|gives?|offers?|outlines?|lists?|collects?)\b",
                             re.I)
# the little words of a noun phrase; any other ("is", "must", "use", "should") makes a sentence
_PHRASE_WORDS = frozenset("a an the and or for on of in when with to using via into from by "
                          "at".split())


def _describes_document(title: str) -> bool:
    """A title that names a document rather than stating a rule. "Rules for commits: use squash
    merges" and "Docstrings follow the NumPy style guide" are sentences; "Python best
    practices" and "Checklist for changing the database schema" are not."""
    if _USE_WHEN.search(title) or _SELF_DESCRIBED.search(title):
        return True
    if DIRECTIVE.search(title):
        return False
    little = STOPWORDS.intersection(re.findall(r"\w+", title.lower()))
    if _DOCUMENT_END.search(title) and not little - {"and", "or"}:  # "vite best practices"
        return True
    return bool(_DOCUMENT_FOR.search(title)) and not little - _PHRASE_WORDS


# "Area: statement": a label, then what the title says about it ("Code Style: Use Tabs for
# Indentation", "ADR029: Use AWS Shield Advanced")
_LABELLED = re.compile(r"^[^:\n]{1,60}:\s+(\S.*)$")
# a bare verb followed by "of" is a noun ("Use of RDS Aurora", "Release of 4.0")
_NOUN_OF = re.compile(r"^\s*\w+\s+of\b", re.I)


def _instructs(statement: str) -> bool:
    """A statement that opens with an imperative and says what it acts on ("Use Tabs for
    Indentation", "Never Commit Secrets"): a claim however it is capitalised."""
    return bool(IMPERATIVE.match(statement)) and len(statement.split()) > 1 and not (
        _NOUN_OF.match(statement) or _describes_document(statement))


def is_heading(title: str) -> bool:
    """A Title Case title ("Vue 3 Development Instructions", "Power BI Security Best
    Practices") or one describing a document ("Cursor rules for Vue 3 with Nuxt") names a
    topic; a sentence-case statement ("Passwords are hashed with bcrypt") makes a claim, and
    so does a label followed by an instruction, each word capitalised or not ("Code Style: Use
    Tabs for Indentation" is a heading and a claim: the claim is the memory's point)."""
    labelled = _LABELLED.match(title)
    if labelled and _instructs(labelled.group(1)):
        return False
    if _describes_document(title):
        return True
    if has_cjk(title):  # Chinese and Japanese have no capitals: a capitalised name says nothing
        return False
    long_words = [w for w in re.findall(r"[^\W\d_]{4,}", title) if w.lower() not in STOPWORDS]
    return len(long_words) >= 2 and all(w[0].isupper() for w in long_words)


def names_its_file(title: str, path: str) -> bool:
    """A title that only repeats the file's name ("react mobx cursorrules prompt file" in
    react-mobx-cursorrules-prompt-file.md, as imported documents get) names a topic, unless it
    reads as a sentence: a file named after its statement ("postgres_is_the_database.md",
    "use_uuid_keys.md") still states it."""
    words = re.sub(r"[\W_]+", " ", title).lower().split()
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return (words == re.sub(r"[\W_]+", " ", stem).lower().split()
            and not STOPWORDS.intersection(words) and not DIRECTIVE.search(title))
