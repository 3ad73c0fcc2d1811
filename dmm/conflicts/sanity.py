"""Store-level sanity check: findings that say more about how a store is written than about
any two memories.

A memory reported against dozens of others (a glossary, a template, a guide that touches every
subject), or one analyzer firing on a large share of the store's pairs, is an artifact: no
person would read those N conflicts one by one, and no agent should be warned about them. Such
findings are reported once, as an artifact naming the memory or the rule and why, and left out
of the conflicts. Structural findings (broken `supersedes` links) are facts about the links and
always kept. Pure.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from typing import TypeVar

from dmm.conflicts.merger import Finding
from dmm.conflicts.model import Conflict

MAX_PER_MEMORY = 12  # one memory in more conflicts than this: an artifact of that memory
MAX_RULE_SHARE = 0.02  # one analyzer on more than this share of a store's pairs ...
MIN_RULE_COUNT = 25  # ... and on more pairs than this: an artifact of the rule
KEEP = {"supersession_chain"}  # structural: facts about the links, never artifacts
F = TypeVar("F", Conflict, Finding)


@dataclass
class Artifact:
    kind: str  # "memory": one memory against many others; "rule": one analyzer everywhere
    subject: str  # the memory id or the analyzer
    count: int  # the conflicts left out
    why: str

    def to_dict(self) -> dict:
        return asdict(self)


def check(conflicts: list[F], store_size: int) -> tuple[list[F], list[Artifact]]:
    """The conflicts worth reporting one by one, and the artifacts left out instead (of
    conflicts, or of the merger's findings before their text is written)."""
    artifacts: list[Artifact] = []
    pairs = store_size * (store_size - 1) // 2
    by_rule = Counter(c.detection_method for c in conflicts if c.detection_method not in KEEP)
    noisy_rules = {rule for rule, n in by_rule.items()
                   if n > MIN_RULE_COUNT and n > MAX_RULE_SHARE * pairs}
    for rule in sorted(noisy_rules):
        artifacts.append(Artifact(
            "rule", rule, by_rule[rule],
            f"{rule} reports {by_rule[rule]} of the store's {pairs} pairs: it reads something "
            "most memories of this store share (a template, a collection's common subject) "
            "as a conflict"))
    kept = [c for c in conflicts if c.detection_method not in noisy_rules]
    per_memory: dict[str, list[F]] = defaultdict(list)
    for c in kept:
        if c.detection_method not in KEEP:
            for mid in c.memory_ids:
                per_memory[mid].append(c)
    crowded = {mid: found for mid, found in per_memory.items() if len(found) > MAX_PER_MEMORY}
    for mid, found in sorted(crowded.items()):
        rules = Counter(c.detection_method for c in found).most_common()
        title = found[0].title_of(mid)
        summary = ", ".join(f"{rule}: {n}" for rule, n in rules)
        artifacts.append(Artifact(
            "memory", mid, len(found),
            f"{mid} ({title!r}) is reported against {len(found)} other memories ({summary}): "
            f"a memory that touches every subject of the store, not {len(found)} "
            "contradictions"))
    drop = {id(c) for found in crowded.values() for c in found}
    return [c for c in kept if id(c) not in drop], artifacts
