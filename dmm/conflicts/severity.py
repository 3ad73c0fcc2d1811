"""How much a conflict matters: low, medium, high or critical (seed 002, `_calculate_severity`).

Pure. Points for each factor 002 names, read in dmm's terms:

- scope (+3): a memory that applies everywhere, `baseline` or `global` (002's "universal");
- recency (+2): both memories created within the last 7 days, not after today (a fresh
  disagreement is still being acted on);
- confidence (+2): a memory people trust most, `confidence: stable` or priority 0.9 or more
  (002's memory confidence above 0.9);
- type (+2): a contradiction; a duplicate is always low (002's redundancy), whatever else.

7 points or more is critical, 5 high, 3 medium, less low. The detection score (how sure dmm
is that there is a conflict) is not a factor: it is shown and sorted on its own.
"""

from __future__ import annotations

import datetime as dt

from dmm.conflicts.model import SEVERITIES, Conflict
from dmm.memory.model import Memory

BROAD_SCOPES = ("baseline", "global")
RECENT_DAYS = 7
TRUSTED_PRIORITY = 0.9


def points(conflict: Conflict, memories: list[Memory], today: dt.date) -> int:
    """The factors' points for ``conflict`` between ``memories`` (those known)."""
    score = 0
    if any(m.scope in BROAD_SCOPES for m in conflict.memories):
        score += 3
    # a `created` after today is the memory's claim, not a recent write
    if len(memories) == 2 and all(m.created is not None
                                  and 0 <= (today - m.created).days < RECENT_DAYS
                                  for m in memories):
        score += 2
    if any(m.confidence == "stable" or m.priority >= TRUSTED_PRIORITY for m in memories):
        score += 2
    if conflict.type == "contradictory":
        score += 2
    return score


def by_type(conflict: Conflict) -> str | None:
    """The severity ``conflict``'s type alone decides (a duplicate is always low), or None
    when its memories decide: a caller reads the memories of these conflicts alone."""
    return "low" if conflict.type == "duplicate" else None


def severity(conflict: Conflict, memories: list[Memory], today: dt.date) -> str:
    decided = by_type(conflict)
    if decided is not None:
        return decided
    score = points(conflict, memories, today)
    return "critical" if score >= 7 else "high" if score >= 5 else \
        "medium" if score >= 3 else "low"


def rank(level: str | None) -> int:
    """A severity's place, least first (-1 for none)."""
    return SEVERITIES.index(level) if level in SEVERITIES else -1
