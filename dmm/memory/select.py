"""Choose and order memories the way `dmm list` offers: by scope, tag, status, folder and
age, sorted by any column. Pure: a list of Memory records in, a list out."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from dmm.memory.model import Memory

SORTS = ("path", "id", "created", "priority", "tokens", "title", "scope")


@dataclass
class Selection:
    scopes: list[str] = field(default_factory=list)  # any of these (empty: every scope)
    tags: list[str] = field(default_factory=list)  # all of these
    status: str = "active"  # active, deprecated or all
    under: str = ""  # a folder (path prefix) below .dmm/memory/
    older_than: int | None = None  # days since `created`
    newer_than: int | None = None
    sort: str = "path"
    reverse: bool = False
    words: list[str] = field(default_factory=list)  # every one in the text (any case)


def select(memories: list[Memory], s: Selection, today: dt.date | None = None) -> list[Memory]:
    today = today or dt.date.today()
    prefix = s.under.strip("/")
    tags = {t.lower() for t in s.tags}
    words = [w.casefold() for w in s.words if w.strip()]
    out = []
    for m in memories:
        if s.status != "all" and (m.is_active != (s.status == "active")):
            continue
        if s.scopes and m.scope not in s.scopes:
            continue
        if not tags <= {t.lower() for t in m.tags}:
            continue
        if prefix and not (m.path == prefix or m.path.startswith(prefix + "/")):
            continue
        if words and not _has_words(m, words):
            continue
        age = (today - m.created).days if m.created else None
        if s.older_than is not None and (age is None or age <= s.older_than):
            continue
        if s.newer_than is not None and (age is None or age >= s.newer_than):
            continue
        out.append(m)

    known = [m for m in out if getattr(m, s.sort) is not None]
    unknown = [m for m in out if getattr(m, s.sort) is None]  # no `created`: last either way
    return sorted(known, key=lambda m: getattr(m, s.sort), reverse=s.reverse) + unknown


def _has_words(m: Memory, words: list[str]) -> bool:
    """Whether every word (or phrase) occurs in the memory's title, body, tags or path."""
    text = " ".join([m.title, m.body, " ".join(m.tags), m.path]).casefold()
    return all(w in text for w in words)
