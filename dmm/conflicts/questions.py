"""The yes/no question a person answers to settle a conflict, made without a model (seeds/003:
"a 1-2 sentence yes/no question a human can answer ... Is [specific thing] still the case?"),
from the conflict's memories' titles, roles and scopes. The narrative pass's model asks its
own (narrative.py); this one is for every other conflict, made when conflicts are read.

Pure, and light: `dmm conflicts list` imports it.
"""

from __future__ import annotations

from dmm.conflicts.model import Conflict
from dmm.judge.text import one_line


def question(c: Conflict) -> str:
    """A yes/no question a person can answer to settle ``c``, naming what is in dispute
    (seeds/003: "Is [specific thing] still the case?"), from its memories' titles and roles
    alone: no model."""
    if len(c.memories) < 2:
        return ""
    newer, older = c.memories[0], c.memories[1]
    n, o = one_line(newer.title, 120), one_line(older.title, 120)
    if c.type == "scope_overlap":
        return (f"Should {o!r} ({older.memory_id}, {older.scope}) and {n!r} "
                f"({newer.memory_id}, {newer.scope}) both hold, each in its scope?")
    if c.type == "duplicate":
        return (f"Is {o!r} ({older.memory_id}) still needed beside {n!r} "
                f"({newer.memory_id}), which says the same?")
    if c.type == "supersession":
        return (f"Their supersedes links leave it open: is {o!r} ({older.memory_id}) still "
                f"the case beside {n!r} ({newer.memory_id})?")
    if c.type == "stale":
        return (f"Is {o!r} ({older.memory_id}) still the case, now that {newer.memory_id} "
                f"records a change ({n!r})?")
    return (f"Is {o!r} ({older.memory_id}) still the case, although {newer.memory_id} says "
            f"{n!r}?")
