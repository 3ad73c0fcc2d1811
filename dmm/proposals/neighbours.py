"""The memories nearest to a proposed one, each with its passage most relevant to it: what the
writer is asked to judge (dmm.proposals.relations).

Found by dmm's own retrieval, the query being the proposed memory's title and body: words and
meaning fused where the semantic index is ready (a long-lived `dmm mcp` or `dmm serve`), words
alone in a one-off command, as `dmm query` ranks. Measured before it was built on labelled
sets of conflicting memories: the conflicting partner is among the five nearest for 98-100% of
pairs, so five is what the writer is asked about. Every active memory may be a neighbour,
baseline ones too (a new memory may contradict one); deprecated ones never are.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from dmm.memory import Memory

K = 5
MAX_PASSAGE_CHARS = 400


@dataclass
class Neighbour:
    memory_id: str
    path: str
    title: str
    relevance: float  # 0-1, as the query ranks
    passage: str  # the part of its text nearest to the proposed memory

    def to_dict(self) -> dict:
        return {"memory_id": self.memory_id, "path": self.path, "title": self.title,
                "relevance": round(self.relevance, 3), "passage": self.passage}


def nearest(ws, conn: sqlite3.Connection, memory: Memory, exclude: tuple[str, ...] = (),
            k: int = K) -> list[Neighbour]:
    """The ``k`` active memories nearest to ``memory`` (leaving out the paths ``exclude``:
    the proposal's own), best first."""
    from dmm.index import db, read
    from dmm.query.rank import rank
    from dmm.semantic import service

    query = f"{memory.title}\n\n{memory.body}"
    where = "m.status = 'active' AND m.confidence != 'deprecated'"
    params: list = []
    if exclude:
        where += f" AND m.path NOT IN ({','.join('?' * len(exclude))})"
        params += list(exclude)
    cfg = ws.config["query"]
    index, _note = service.for_query(ws, conn)
    with db.snapshot(conn):
        if index is not None:
            from dmm.semantic.hybrid import hybrid_rank

            ranked, _ = hybrid_rank(conn, query, where, params, cfg, index)
        else:
            ranked = rank(conn, query, where, params, cfg)
        top = ranked[:k]
        found = read.memories_by_doc(conn, [r.doc for r in top])
    return [Neighbour(found[r.doc].id, found[r.doc].path, found[r.doc].title, r.relevance,
                      best_passage(found[r.doc], query)) for r in top if r.doc in found]


def best_passage(memory: Memory, query: str) -> str:
    """The passage of ``memory`` (as the semantic index cuts it) that shares the most words
    with ``query``, weighed by how rare each word is in the memory's passages; the first one
    on a tie, the title when the body says nothing more."""
    from dmm.semantic.chunks import passages
    from dmm.text.analyze import terms

    parts = passages(memory.title, memory.body)
    body_parts = parts[1:] if len(parts) > 1 else parts
    wanted = set(terms(query))
    held = [set(terms(p)) & wanted for p in body_parts]
    spread = {t: sum(t in h for h in held) for t in wanted}
    scores = [sum(1 / spread[t] for t in h) for h in held]
    chosen = max(range(len(body_parts)), key=lambda i: (scores[i], -i))
    best = body_parts[chosen]
    prefix = f"{' '.join(memory.title.split())}. "
    text = best[len(prefix):] if len(body_parts) < len(parts) and best.startswith(prefix) \
        else best
    if chosen:  # it starts in the middle of the text
        text = "... " + text
    return text if len(text) <= MAX_PASSAGE_CHARS else text[:MAX_PASSAGE_CHARS - 3] + "..."
