"""Automatic resolution: decide which conflicts dates, confidence and structure settle.

Pure: takes the open conflicts and their memories, returns one Step per conflict saying what to
do and why, or why it is left for a person. The rules (issue #5; seeds/002 section "Automatic
Resolution Algorithms"):

- duplicate, stale: keep the newer memory, deprecate the older;
- contradictory: keep the newer one when they were created at least ``auto_age_days`` apart
  (unless the older one is clearly more trusted: then dates and confidence disagree and a
  person decides), else the one with clearly higher confidence or priority, else ask;
- supersession: an orphaned link (A supersedes B, both active) is repaired by deprecating B;
  circular (of any length: B leads back to A), contested and incomplete chains are left to a
  person;
- scope_overlap: a person decides (the two scopes may both be intended);
- never: a baseline memory, a conflict flagged by hand, one known only from a committed decision
  record (no scan found it: a commit can write any record), one a language model took part in (the
  narrative pass's question, or the judge's verdict that found, confirmed or lowered it: the
  judge never decides, so its word never retires a memory), one below ``min_confidence``, or
  a memory without a `created` date where the rule needs one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from dmm.conflicts.model import MODEL_METHODS, PASSES, Conflict
from dmm.memory.model import SCOPES, Memory
from dmm.render import count

TRUST = {"experimental": 0, "active": 1, "stable": 2}


@dataclass
class Step:
    conflict: Conflict
    action: str | None  # "deprecate", or None: left for a person
    keep: str | None  # memory ids
    target: str | None
    why: str
    recommendation: str = ""  # what a person might do, when action is None

    def to_dict(self) -> dict:
        return {"conflict_id": self.conflict.conflict_id, "type": self.conflict.type,
                "confidence": round(self.conflict.confidence, 3), "action": self.action,
                "keep": self.keep, "deprecate": self.target, "why": self.why,
                "recommendation": self.recommendation,
                "memories": [m.memory_id for m in self.conflict.memories]}


def clearly_more_trusted(a: Memory, b: Memory, priority_gap: float) -> bool:
    """``a`` has a higher confidence level and no lower priority, or a priority higher by at
    least ``priority_gap`` and no lower confidence level."""
    ta, tb = TRUST.get(a.confidence, 0), TRUST.get(b.confidence, 0)
    return (ta > tb and a.priority >= b.priority) or (
        ta >= tb and a.priority - b.priority >= priority_gap - 1e-9)


def ordered(a: Memory, b: Memory, added: dict[str, int] | None = None,
            ) -> tuple[Memory, Memory]:
    """(newer, older): by `created` when the dates differ; else by the commit that added each
    memory (``added``: memory id -> rank in the history, later is higher), which is what git
    records; the ids only when git knows neither (their digits are a date and a counter, not
    an order of writing)."""
    if a.created is not None and b.created is not None and a.created != b.created:
        return (a, b) if a.created > b.created else (b, a)
    added = added or {}
    if a.id in added and b.id in added and added[a.id] != added[b.id]:
        return (a, b) if added[a.id] > added[b.id] else (b, a)
    return (a, b) if (a.created is not None, a.id) > (b.created is not None, b.id) else (b, a)


def in_circle(new: Memory, old: Memory, memories: dict[str, Memory]) -> bool:
    """``old`` leads back to ``new`` through `supersedes` links among ``memories``: the link
    ``new`` -> ``old`` closes a circle, and deprecating ``old`` would settle nothing."""
    seen, todo = {old.id}, [old]
    while todo:
        for nxt in todo.pop().supersedes:
            if nxt == new.id:
                return True
            if nxt not in seen and nxt in memories:
                seen.add(nxt)
                todo.append(memories[nxt])
    return False


def decide(conflict: Conflict, a: Memory, b: Memory, cfg: dict,
           added: dict[str, int] | None = None,
           memories: dict[str, Memory] | None = None) -> Step:
    """What to do about one conflict between ``a`` and ``b``; ``added`` as in ``ordered``;
    ``memories``: the others their `supersedes` chains run through (a circle is told by the
    whole chain)."""
    def keep(winner: Memory, why: str) -> Step:
        loser = b if winner is a else a
        if loser.scope == "baseline":
            return ask(f"{why}, but {loser.id} is a baseline memory: only a person retires it",
                       f"deprecate {loser.id}")
        return Step(conflict, "deprecate", winner.id, loser.id, why)

    def ask(why: str, recommendation: str = "") -> Step:
        return Step(conflict, None, None, None, why, recommendation)

    dated = a.created is not None and b.created is not None
    newer, older = ordered(a, b, added)
    # which one git added later, when the dates cannot tell (same day, or undated)
    by_commit = (not dated or a.created == b.created) and a.id in (added or {}) \
        and b.id in (added or {}) and added[a.id] != added[b.id]
    days = abs((a.created - b.created).days) if dated else None
    kind = conflict.type
    if kind in ("duplicate", "stale"):
        if not dated or days == 0:
            return ask("created the same day (or undated): which is newer is unclear",
                       f"merge them, or deprecate {older.id} (committed before {newer.id})"
                       if by_commit else "merge them, or deprecate the weaker one")
        return keep(newer, f"{kind}: {newer.id} ({newer.created}) is newer than {older.id} "
                           f"({older.created})")
    if kind == "supersession":
        links = [(x, y) for x, y in ((a, b), (b, a)) if y.id in x.supersedes]
        if len(links) == 1 and a.is_active and b.is_active:
            new, old = links[0]
            if in_circle(new, old, memories or {}):
                return ask(f"circular: {old.id} leads back to {new.id} through `supersedes` "
                           "links, so the links cannot say which memory is current",
                           "deprecate the memories that are no longer true and drop the link "
                           "that closes the circle")
            return keep(new, f"{new.id} supersedes {old.id}, which is still active")
        return ask("the supersession chain is circular, contested or incomplete: which memory "
                   "is current is a decision", "deprecate the memory that is no longer true")
    if kind == "contradictory":
        gap = cfg["auto_priority_gap"]
        if dated and days >= cfg["auto_age_days"]:
            if clearly_more_trusted(older, newer, gap):
                return ask(f"contradiction: {newer.id} is {count(days, 'day')} newer, but "
                           f"{older.id} has higher confidence/priority ({older.confidence}, "
                           f"{older.priority} vs {newer.confidence}, {newer.priority})",
                           f"keep {newer.id} if the rule changed, or merge them")
            return keep(newer, f"contradiction: {newer.id} ({newer.created}) is "
                               f"{count(days, 'day')} newer than {older.id}")
        for x, y in ((a, b), (b, a)):
            if clearly_more_trusted(x, y, gap):
                return keep(x, f"contradiction: {x.id} ({x.confidence}, priority {x.priority}) "
                               f"is clearly more trusted than {y.id} ({y.confidence}, "
                               f"priority {y.priority})")
        when = f"{count(days, 'day')} apart" if dated else "undated"
        return ask(f"contradiction between memories {when} with similar confidence: a "
                   "person decides", f"keep {newer.id} (newer)" if dated and not by_commit
                   else f"keep {newer.id} (committed later)" if by_commit else "")
    broader = min((a, b), key=lambda m: SCOPES.index(m.scope) if m.scope in SCOPES else 9)
    return ask("the same rule in two scopes may be intended: a person decides",
               f"keep {broader.id} ({broader.scope}) and deprecate the other, or merge")


def plan(conflicts: list[Conflict], memories: dict[str, Memory], cfg: dict,
         min_confidence: float, detected: set[str] | None = None,
         added: dict[str, int] | None = None, today: dt.date | None = None) -> list[Step]:
    """One Step per open conflict, most confident first. A conflict one of whose memories an
    earlier step retires is skipped (retiring it resolves that conflict too, or changes it).
    ``detected``: the ids this clone's scan found; any other conflict is known only from a
    committed decision record, repository content that a commit can forge, and is left to a
    person (None: every conflict was detected). ``added``: when git added each memory (see
    ``ordered``). ``today``: a memory `created` after it is left to a person."""
    today = today or dt.date.today()
    steps, retired = [], set()
    for c in sorted(conflicts, key=lambda c: (-c.confidence, c.conflict_id)):
        a, b = (memories.get(m.memory_id) for m in c.memories)
        if c.status not in ("unresolved",):
            steps.append(Step(c, None, None, None, f"{c.status}: a person looks at it"))
        elif a is None or b is None:
            steps.append(Step(c, None, None, None, "a memory is gone: scan again"))
        elif detected is not None and c.conflict_id not in detected:
            # its type, score and method are what a committed file says: never acted on
            steps.append(Step(c, None, None, None, "known only from a committed decision "
                                                   "record, not found by a scan: a person "
                                                   "decides"))
        elif retired & {a.id, b.id}:
            steps.append(Step(c, None, None, None, "an earlier step retires one of its "
                                                   "memories: scan again afterwards"))
        elif c.methods and set(c.methods) <= set(PASSES):
            # a language model's reading of the story, not a measurement: its question is for
            # a person to answer
            steps.append(Step(c, None, None, None, "found by the narrative pass alone: a "
                                                   "person answers its question",
                              c.question or ""))
        elif set(c.methods or ()) & set(MODEL_METHODS):
            # the confidence (or the very conflict) rests on a model's answer, which is
            # untrusted: a model saying "conflict" must not make dmm retire a memory
            steps.append(Step(c, None, None, None, "a language model's verdict is part of "
                                                   "this finding: a person decides"))
        elif c.confidence < min_confidence:
            steps.append(Step(c, None, None, None, f"detection confidence {c.confidence:.2f} is "
                                                   f"below {min_confidence:.2f}"))
        elif any(m.created is not None and m.created > today for m in (a, b)):
            # `created` is the writer's claim: a date that has not come yet would make its
            # memory "newer" than any other, whatever was really written last
            ahead = next(m for m in (a, b) if m.created is not None and m.created > today)
            steps.append(Step(c, None, None, None, f"{ahead.id} is dated after today "
                                                   f"({ahead.created}): which is newer is "
                                                   "unclear, a person decides"))
        else:
            step = decide(c, a, b, cfg, added, memories)
            if step.target:
                retired.add(step.target)
            steps.append(step)
    return steps
