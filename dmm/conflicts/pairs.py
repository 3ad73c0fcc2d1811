"""What two memories are to each other beyond their words: parallel documents for two subjects,
two kinds of one thing, a deliberate exception to a general rule, two guides, copies (their
cosine), shared tags.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dmm.conflicts.prose import without_code
from dmm.text.analyze import STOPWORDS, stem, terms

if TYPE_CHECKING:
    from dmm.conflicts.features import Features

def parallel(a: Features, b: Features) -> bool:
    """Two topic headings each naming a subject the other memory never mentions ("CentOS
    Administration Guidelines", "Fedora Administration Guidelines"): parallel documents for two
    subjects, however alike their advice is worded."""
    if not (a.heading and b.heading):
        return False
    only_a = a.corpus.specific(a.title_terms - b.all_terms)
    only_b = b.corpus.specific(b.title_terms - a.all_terms)
    return bool(only_a and only_b)


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


def kinds(a: Features, b: Features) -> tuple[str, str] | None:
    """Two kinds of one thing, each the subject of its title: "Access tokens are valid for 15
    minutes" and "Refresh tokens last 30 days" open with the same head ("tokens") under
    different modifiers, and one of the memories names both kinds ("a new access token and a
    new refresh token"), so its author holds them apart. Their values, rules and wording are
    about different things. Two modifiers that are one kind under two names ("JWT tokens",
    "access tokens") are not apart unless a memory names both."""
    x, y = a.subject, b.subject
    if not (x and y) or x[1] != y[1] or x[0] == y[0]:
        return None
    if y[0] in a.title_terms or x[0] in b.title_terms:
        return None
    if y in a.compounds or x in b.compounds:
        return " ".join(x), " ".join(y)
    return None


# a memory that knows the general rule and departs from it on purpose: "avatars should be small
# regardless of the general request ceiling", "this job overrides the default timeout", "an
# exception to the company-wide retention". Not "instead of" or "rather than": "use aiohttp
# instead of the default httpx" replaces an answer, it does not carve out a case
_EXCEPTION = re.compile(
    r"\b(?:regardless\s+of|unlike|(?:an\s+)?exception\s+to|overrid(?:es?|ing)|"
    r"deviat(?:es?|ing)\s+from|despite)\s+(?:the|our|its|their|any)?\s*"
    r"(?:general|default|global|usual|standard|normal|(?:company|team|platform|org)-wide)"
    r"\s+((?:[\w-]+\s+){0,2}[\w-]+)", re.I)


def exception_to(a: Features, b: Features) -> str | None:
    """What ``a`` says it departs from on purpose, when that is ``b``'s point: a general rule
    named in words specific in the store that ``b``'s point says ("regardless of the general
    request ceiling" against "Public API accepts request bodies up to 5 MB"). A specific rule
    that knows the general one and overrides it does not contradict it."""
    point = set(terms(b.point))
    for m in _EXCEPTION.finditer(without_code(a.memory.body)):
        if a.corpus.specific(set(terms(m.group(1))) & point):
            return m.group(0)
    return None


NEAR_COPY = 0.9  # two memories this similar are copies of one text, whatever their titles say
GUIDE_SECTIONS = 3  # a memory with this many headings in its body is a guide of many rules


def guides(a: Features, b: Features) -> bool:
    """Two guides of several sections each: two rule books for one library or two agents for one
    field share much of their words, names and values by nature (the analyzers ask more of
    them: a near copy to be duplicates, a prohibition in a title to contradict)."""
    return min(a.sections, b.sections) >= GUIDE_SECTIONS


def cosine(a: Features, b: Features, a_weights: dict[str, float] | None = None) -> float:
    """The cosine of two memories' vectors (unit length: their dot product). ``a_weights``:
    ``a.vector.lookup()``, for a caller that compares ``a`` with many others."""
    if len(a.vector) > len(b.vector):
        return b.vector.dot(a.vector if a_weights is None else a_weights)
    return a.vector.dot(b.vector)


def tag_jaccard(a: Features, b: Features) -> float:
    x, y = set(a.memory.tags), set(b.memory.tags)
    return len(x & y) / len(x | y) if x | y else 0.0
