"""Titles that name a topic or a document ("Vue 3 Development Instructions", "Cursor rules for
Angular development", a title repeating its file's name) rather than state a rule.
"""

from __future__ import annotations

import re

from dmm.conflicts.cues import DIRECTIVE
from dmm.text.analyze import STOPWORDS

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


def is_heading(title: str) -> bool:
    """A Title Case title ("Vue 3 Development Instructions", "Power BI Security Best
    Practices") or one describing a document ("Cursor rules for Vue 3 with Nuxt") names a
    topic; a sentence-case statement ("Passwords are hashed with bcrypt") makes a claim."""
    if _describes_document(title):
        return True
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
