"""The memories nearest to a proposed one, each with its passage most relevant to it: what the
writer is asked to judge (dmm.proposals.relations).

Found by dmm's own retrieval, the query being the proposed memory's title and body: words and
meaning fused where the semantic index is ready (a long-lived `dmm mcp` or `dmm serve`), words
alone in a one-off command, as `dmm query` ranks. Measured on two labelled sets of conflicting
memories, each pooled into one store (tools/eval_neighbours.py): the partner of a conflicting
pair is among the first memory's five nearest for 0.92-0.96 of pairs by words, 0.96 by words
and meaning (0.96-1.00 from either side), so five is what the writer is asked about. Every active memory may be a neighbour,
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
    import sys

    from dmm.index import db, read
    from dmm.query.rank import rank

    query = f"{memory.title}\n\n{memory.body}"
    where = "m.status = 'active' AND m.confidence != 'deprecated'"
    params: list = []
    if exclude:
        where += f" AND m.path NOT IN ({','.join('?' * len(exclude))})"
        params += list(exclude)
    # a whole memory names its subject in many words already: looking each one up with its
    # lexicon neighbours too took 1.1-1.6 s instead of 0.5 s at 10,000 memories and found no
    # more of the labelled conflicting partners (tools/eval_neighbours.py)
    cfg = {**ws.config["query"], "expansion": False}
    # only a long-lived process that started the semantic layer has an index to rank with;
    # importing it in a one-off command would cost 0.1 s for nothing
    service = sys.modules.get("dmm.semantic.service")
    index = service.for_query(ws, conn)[0] if service is not None else None
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
