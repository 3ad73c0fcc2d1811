"""What the writer of a memory declares about its nearest memories (conflict prevention at
write time, the seeds' phase 4).

Whoever proposes a memory is the one who knows what it means: an agent proposing one has its
own model at hand, and judging five pairs costs it nothing more. So dmm shows the writer the
memories nearest to the proposal (dmm.proposals.neighbours) and asks, for each, one of
``RELATIONS``. A declaration is a claim, never a decision: it travels with the proposal as
``Dmm-Relation`` trailers, is checked again wherever it is read (a branch made by hand may
write any trailer), is shown beside dmm's own findings, and can only ever send a proposal to a
person (a declared supersession retires a memory, which a person approves); it never removes
a finding, so it cannot make the reviewer approve what it would otherwise defer.

Pure: no IO; the caller passes what the cache says about the memories named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple

RELATIONS = ("supersedes", "contradicts", "refines", "duplicates", "unrelated")
MAX_NOTE_CHARS = 500  # a sentence or two: it goes into a commit trailer
MAX_RELATIONS = 20  # five neighbours, and a few the writer knows of besides
MAX_ID_CHARS = 300  # an id or a path, as the agents' tools bound one
TRAILER = "Dmm-Relation"
# the relations that acknowledge what dmm found about a memory: a contradiction is declared
# when the writer says the new memory contradicts or supersedes it (the new one replaces it);
# a near-duplicate when the writer says it duplicates, refines or supersedes it
ACKNOWLEDGES = {"contradicts": ("contradicts", "supersedes"),
                "duplicates": ("duplicates", "refines", "supersedes")}


@dataclass(frozen=True)
class Relation:
    """One declaration: the new memory ``relation`` the memory ``memory_id``."""

    memory_id: str
    relation: str
    note: str = ""

    def to_dict(self) -> dict:
        return {"memory_id": self.memory_id, "relation": self.relation, "note": self.note}

    def trailer(self) -> str:
        return " ".join(filter(None, (self.memory_id, self.relation, self.note)))


class Finding(NamedTuple):
    """What a check found about the proposal and one stored memory: ``kind`` is one of the
    keys of ACKNOWLEDGES; ``source`` says who found it (the conflict heuristics, the duplicate
    check, a model)."""

    memory_id: str
    path: str
    kind: str
    source: str
    detail: str = ""


def parse(raw: object) -> tuple[list[Relation], list[str]]:
    """The declarations in ``raw`` (a list of {memory_id, relation, note?} objects, as the
    agents' tools and the CLI give them) and every problem with their shape. Whether the
    memories exist is for ``check``."""
    if raw is None:
        return [], []
    if not isinstance(raw, (list, tuple)):
        return [], ["relations must be a list of {memory_id, relation, note} objects"]
    if len(raw) > MAX_RELATIONS:
        return [], [f"{len(raw)} relations declared; at most {MAX_RELATIONS}"]
    out, errors = [], []
    for n, item in enumerate(raw, 1):
        where = f"relation {n}"
        if not isinstance(item, dict):
            errors.append(f"{where} must be an object with memory_id and relation")
            continue
        unknown = sorted(set(item) - {"memory_id", "relation", "note"})
        if unknown:
            errors.append(f"{where}: unknown field {unknown[0]!r} (memory_id, relation, note)")
            continue
        memory_id, relation, note = item.get("memory_id"), item.get("relation"), \
            item.get("note") or ""
        if not isinstance(memory_id, str) or not memory_id.strip():
            errors.append(f"{where}: memory_id is required (the id of a stored memory)")
            continue
        if len(memory_id) > MAX_ID_CHARS:
            errors.append(f"{where}: memory_id is {len(memory_id)} characters: give a memory's "
                          "id (or path)")
            continue
        if relation not in RELATIONS:
            said = f"{relation[:40]!r}" if isinstance(relation, str) else "nothing"
            errors.append(f"{where} ({memory_id}): relation must be one of "
                          f"{', '.join(RELATIONS)}, not {said}")
            continue
        if not isinstance(note, str):
            errors.append(f"{where} ({memory_id}): note must be text")
            continue
        # one line of printable text: it becomes part of a trailer, read back as written
        note = " ".join("".join(ch for ch in note if ch.isprintable() or ch.isspace()).split())
        if len(note) > MAX_NOTE_CHARS:
            errors.append(f"{where} ({memory_id}): the note is {len(note)} characters; say it "
                          f"in at most {MAX_NOTE_CHARS}")
            continue
        out.append(Relation(memory_id.strip(), relation, note))
    return out, errors


def parse_option(text: str) -> dict:
    """``ID=RELATION`` or ``ID=RELATION:NOTE`` (the CLI's --relation) as the object ``parse``
    takes; a malformed one keeps what it has, so that ``parse`` says what is missing."""
    key, _, rest = text.partition("=")
    relation, _, note = rest.partition(":")
    return {"memory_id": key.strip(), "relation": relation.strip(), "note": note.strip()}


def check(relations: Iterable[Relation], known: dict[str, str | None],
          own_ids: Iterable[str]) -> list[str]:
    """Why declarations name memories they cannot (or one twice): ``known`` maps each id the
    store knows to its path while active, or None when it is deprecated; ``own_ids`` are the
    proposal's own memory (a memory relates to others, not to itself)."""
    own = set(own_ids)
    errors, seen = [], set()
    for r in relations:
        if r.memory_id in seen:
            errors.append(f"{r.memory_id} is declared twice: one relation per memory")
        seen.add(r.memory_id)
        if r.memory_id in own:
            errors.append(f"{r.memory_id} is the proposed memory itself: declare how it "
                          "relates to other memories")
        elif r.memory_id not in known:
            errors.append(f"{r.memory_id} is no memory of this store: name a stored memory "
                          "by its id (the answer's neighbours list the nearest ones)")
        elif known[r.memory_id] is None:
            errors.append(f"{r.memory_id} is deprecated already: only active memories can be "
                          "superseded, contradicted, refined or duplicated")
    return errors


def from_trailers(values: Iterable[str]) -> tuple[list[Relation], list[str]]:
    """The declarations a proposal commit's ``Dmm-Relation`` trailers claim, and why any of
    them cannot be read (a branch made by hand may write anything there)."""
    raw = []
    for value in values:
        memory_id, relation, note = (value.split(None, 2) + ["", ""])[:3]
        raw.append({"memory_id": memory_id, "relation": relation, "note": note})
    return parse(raw)


def request(neighbour_ids: Iterable[str], relations: Iterable[Relation]) -> str | None:
    """The request to declare, for the neighbours the writer has not declared anything about
    (None when every one is declared)."""
    declared = {r.memory_id for r in relations}
    todo = [i for i in neighbour_ids if i not in declared]
    if not todo:
        return None
    return (f"Say how the proposed memory relates to {', '.join(todo)} (see neighbours): "
            f"one of {', '.join(RELATIONS)} each, as relations [{{memory_id, relation, "
            "note}]. supersedes retires that memory when a person approves; contradicts "
            "tells the reviewer the two disagree on purpose. Declarations are claims a "
            "person reads beside dmm's own findings; they never approve anything.")


def superseded(relations: Iterable[Relation]) -> list[str]:
    """The ids the declarations say the new memory supersedes (it retires them)."""
    return [r.memory_id for r in relations if r.relation == "supersedes"]


def undeclared(findings: Iterable[Finding], relations: Iterable[Relation],
               ) -> list[tuple[Finding, str | None]]:
    """Each finding the writer's declarations do not acknowledge, with what the writer did
    declare about that memory (None: nothing). A check of any kind (the heuristics, a model)
    feeds its findings here; one finding per memory and kind is kept."""
    declared = {r.memory_id: r.relation for r in relations}
    out, seen = [], set()
    for f in findings:
        said = declared.get(f.memory_id)
        if (f.memory_id, f.kind) in seen or said in ACKNOWLEDGES.get(f.kind, ()):
            continue
        seen.add((f.memory_id, f.kind))
        out.append((f, said))
    return out
