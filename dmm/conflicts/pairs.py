"""What two memories are to each other beyond their words: parallel documents for two subjects,
two kinds of one thing, a deliberate exception to a general rule, two guides, copies (their
cosine, their shared anchors), shared tags.

Above features.py: it reads two memories' Features; what one text says (its compounds, its
anchors) is read below, in compounds.py and anchors.py.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dmm.conflicts.prose import without_code
from dmm.text.analyze import terms

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


def anchor_overlap(a: Features, b: Features) -> tuple[float, set[str]]:
    """Jaccard similarity of two memories' anchors (anchors.py), and the anchors they share."""
    shared = a.anchors & b.anchors
    union = len(a.anchors | b.anchors)
    return (len(shared) / union if union else 0.0), shared


def tag_jaccard(a: Features, b: Features) -> float:
    x, y = set(a.memory.tags), set(b.memory.tags)
    return len(x & y) / len(x | y) if x | y else 0.0
