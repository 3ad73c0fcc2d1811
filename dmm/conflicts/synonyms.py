"""Words that name one thing: a subject said in other words is the same subject.

"Every container must declare a CPU limit" and "Don't cap processor time on our containers"
share one word, "container", yet the second forbids what the first prescribes: a CPU is a
processor, and to cap is to limit. Each line below is one group of such words, true synonyms in
how engineering rules are written (not neighbours that often appear together: "staging" and
"production", "active" and "inactive" are opposites however close their contexts). The
analyzers that bind two memories by the words of a rule (what a sentence forbids, what a value
is said about) read a memory's words widened by their groups.

Pure data and three functions (widen, among, canonical). Words are stemmed as everywhere
(dmm.text.analyze.terms).
"""

from __future__ import annotations

from collections.abc import Set
from typing import Iterable

from dmm.text.analyze import terms

GROUPS = """
    cpu cpus processor processors
    limit limits cap caps capped ceiling ceilings
    idle inactive inactivity
    expire expires expired expiry expiration timeout timeouts
    database databases db
    repository repositories repo repos
    configuration config
    environment environments env
    authentication authenticate auth
    kubernetes k8s
    production prod
    administrator administrators admin admins
    documentation docs
    login logins signin
    directory directories folder folders
    password passwords passphrase passphrases
    seat seats member members
""".strip().splitlines()

_GROUP: dict[str, frozenset[str]] = {}
for _line in GROUPS:
    _stems = frozenset(terms(_line))
    for _stem in _stems:
        _GROUP[_stem] = _GROUP.get(_stem, frozenset()) | _stems


_WORDS = frozenset(_GROUP)


def canonical(term: str) -> str:
    """One stem for every word of ``term``'s group ("processor" -> "cpu"): what a count of
    members and a count of seats are both counting."""
    group = _GROUP.get(term)
    return min(group) if group else term


def widen(found: Iterable[str]) -> set[str]:
    """``found`` (stemmed terms) with every word of the groups they belong to."""
    out = set(found)
    for t in _WORDS.intersection(out):
        out |= _GROUP[t]
    return out


def among(term: str, found: Set[str]) -> bool:
    """Whether ``term`` is in ``widen(found)``, without building that set: it is one of
    ``found`` or shares a group with one of them (a group that holds one word holds the other
    both ways, so ``term``'s own groups tell)."""
    return term in found or (term in _GROUP and not _GROUP[term].isdisjoint(found))
