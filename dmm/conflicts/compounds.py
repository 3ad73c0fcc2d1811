"""Noun compounds of a text: a modifier and its head ("access tokens" -> access, token), and
the compound a title opens with (the noun phrase a statement is about).

Pure: text in, stemmed word pairs out. Read for each memory by features.py, compared between
two memories by pairs.kinds.
"""

from __future__ import annotations

import re

from dmm.text.analyze import STOPWORDS, stem

# a compound's words: letters only, so that "15 minutes" and "30 minutes" are values of one
# thing, not two kinds of minutes; a comma or a full stop ends a compound, a line break does not
# (prose is wrapped at 80 columns)
_COMPOUND_WORD = re.compile(r"[^\W\d_]{3,}|[^\w\s-]|\b\w+\b")


def compounds(text: str) -> set[tuple[str, str]]:
    """Adjacent pairs of content words of ``text``, stemmed: a modifier and its head noun
    ("access tokens" -> ("access", "token")) among others ("tokens last")."""
    out = set()
    previous = None
    for token in _COMPOUND_WORD.findall(text.lower()):
        word = token if len(token) >= 3 and token.isalpha() and token not in STOPWORDS else None
        if previous and word:
            out.add((stem(previous), stem(word)))
        previous = word
    return out


_ARTICLES = {"the", "a", "an", "our", "your", "its", "their"}


def subject_compound(title: str) -> tuple[str, str] | None:
    """The two words a title opens with, past an article, when both are content words: the
    noun phrase a statement is about ("Access tokens are valid for 15 minutes", "The
    technician app is built with Expo"); a question opens otherwise ("How to track technical
    debt")."""
    tokens = _COMPOUND_WORD.findall(title.lower())
    if tokens and tokens[0] in _ARTICLES:
        tokens.pop(0)
    found = compounds(" ".join(tokens[:2]))
    return next(iter(found), None)
