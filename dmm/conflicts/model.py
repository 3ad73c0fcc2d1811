"""Conflict records (PRD phase 3, section 3) with ids that depend only on the memory pair."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from dmm.errors import InvalidInputError

TYPES = ("contradictory", "duplicate", "supersession", "scope_overlap", "stale")
METHODS = ("tag_overlap", "semantic_similarity", "supersession_chain", "value_change",
           "negation", "alternatives", "temporal", "co_retrieval", "rule_extraction", "manual",
           "narrative")
# the analyzers every scan runs (`--methods` chooses among them); rule_extraction is the
# judge's second pass (analyzers/rule_extraction.py), manual a person's flag, narrative the
# narrative pass (narrative.py)
ANALYZERS = METHODS[:-3]
# methods no scan runs: a person's flag, and the pass that reads the store another way (the
# narrative pass asks a language model about a scope's story). A scan keeps what they found
# while the memories they found it in are unchanged (store.save).
PASSES = ("manual", "narrative")
# methods that are a language model's reading (the judge's verdicts, the narrative pass): what
# they find or confirm is shown to a person, never acted on by dmm alone (auto.py)
MODEL_METHODS = ("rule_extraction", "narrative")
STATUSES = ("unresolved", "in_progress", "resolved", "dismissed", "flagged", "deferred")
# statuses that still need someone's attention; in_progress: a proposal that resolves it is
# open (`resolve --propose`), and until it lands the conflict is still there
OPEN = ("unresolved", "flagged", "in_progress")
# the PRD's short names of the analyzers (`--methods tag,semantic,supersession,rule`); "rule"
# is the judge's pass, which `scan` turns on rather than runs alone
METHOD_NAMES = {"tag": "tag_overlap", "semantic": "semantic_similarity",
                "supersession": "supersession_chain", "rule": "rule_extraction"}
# seed 002's severities, least first
SEVERITIES = ("low", "medium", "high", "critical")
# what each resolution action leaves the conflict as
STATUS_AFTER = {"deprecate": "resolved", "merge": "resolved", "clarify": "resolved",
                "dismiss": "dismissed", "defer": "deferred"}


def status_of(decision: dict, today: str) -> str:
    """The status a committed decision gives its conflict on ``today`` (an ISO date): a
    deferral with `suppressed_until` on or before today is over, and the conflict is open
    again (its record stays, as the history of the deferral). A record is repository content
    anyone can commit: an end that is not a date (``"never"``, a number, ``2026-13-45``)
    silences nothing, rather than comparing as text after every real day. A deferral with
    no end (none written) lasts until someone decides, as a dismissal does."""
    status = decision.get("status")
    if status != "deferred" or decision.get("suppressed_until") is None:
        return status
    until = decision["suppressed_until"]
    try:
        ends = dt.date.fromisoformat(until) if isinstance(until, str) and len(until) == 10 \
            else None
    except ValueError:
        ends = None
    return "unresolved" if ends is None or ends.isoformat() <= today else status


CONFLICT_ID = re.compile(r"conflict_[0-9a-f]{12}", re.ASCII)


def check_conflict_id(cid: str) -> str:
    """``cid`` when it has the shape of a conflict id; ids are literals, never patterns."""
    if not isinstance(cid, str) or not CONFLICT_ID.fullmatch(cid):
        raise InvalidInputError(f"{cid!r} is not a conflict id (conflict_ and 12 hex digits)",
                                hint="`dmm conflicts list` shows them")
    return cid


def pair_key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def conflict_id(a: str, b: str) -> str:
    """Stable id of the conflict between two memories: the same after any cache rebuild."""
    import hashlib  # OpenSSL loads in 3 ms: only when an id is made, never to list conflicts

    x, y = pair_key(a, b)
    return "conflict_" + hashlib.sha1(f"{x}\n{y}".encode()).hexdigest()[:12]


@dataclass(slots=True)
class Candidate:
    """One analyzer's finding about a pair, before merging (a full scan of 100,000 generated
    memories makes 630,000: no instance dictionary)."""

    a: str  # memory ids
    b: str
    method: str
    type: str
    score: float  # 0..1, the analyzer's confidence
    evidence: str
    statements: tuple[str, str] = ("", "")  # the contradicting sentences, when known
    # how much of the evidence is each memory's point (its title or first sentence): 1.0
    # when it is both memories', 0.5 when one's, 0 when it lies deeper in the bodies
    on_point: float = 0.0


@dataclass
class ConflictMemory:
    memory_id: str
    path: str
    title: str
    scope: str
    priority: float
    role: str  # primary | secondary
    created: str | None = None

    @classmethod
    def of(cls, memory, role: str) -> ConflictMemory:
        """The conflict's view of ``memory`` (a dmm.memory.Memory)."""
        return cls(memory.id, memory.path, memory.title, memory.scope, memory.priority, role,
                   memory.created.isoformat() if memory.created else None)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Conflict:
    conflict_id: str
    type: str
    detection_method: str
    confidence: float
    description: str
    evidence: str
    memories: list[ConflictMemory]
    status: str = "unresolved"
    detected_at: str = ""
    methods: list[str] = field(default_factory=list)
    decision: dict | None = None  # the committed human decision, if any
    # the yes/no question a person answers to settle it (the narrative pass asks one)
    question: str | None = None
    # {memory id: the digest of its text the finding rests on}: kept only while they hold
    basis: dict[str, str] | None = None
    # low | medium | high | critical (severity.py), judged when the conflict is read: it
    # depends on today's date, so the cache never keeps it
    severity: str | None = None
    scan_id: str | None = None  # the scan that last found it (None: known from a decision)

    @property
    def memory_ids(self) -> tuple[str, ...]:
        return tuple(m.memory_id for m in self.memories)

    def title_of(self, memory_id: str) -> str:
        return next(m.title for m in self.memories if m.memory_id == memory_id)

    def to_dict(self) -> dict:
        out = {"conflict_id": self.conflict_id, "type": self.type,
               "detection_method": self.detection_method,
               "confidence": round(self.confidence, 3), "status": self.status,
               "description": self.description, "evidence": self.evidence,
               "memories": [m.to_dict() for m in self.memories],
               "detected_at": self.detected_at, "methods": self.methods,
               "scan_id": self.scan_id}
        if self.severity:
            out["severity"] = self.severity
        if self.question:
            out["question"] = self.question
        if self.basis:
            out["basis"] = self.basis
        if self.decision:
            out["decision"] = self.decision
        return out
