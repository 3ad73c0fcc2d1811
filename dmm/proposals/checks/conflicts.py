"""Conflict check: would the proposed memory conflict with the store? (warns; the reviewer
then defers to a person). Runs the conflict analyzers on the proposal against its most similar
memories (found through the cache's postings, so it stays fast on large stores) and the
memories choosing another answer to the same question (alternatives.py), with the pairs the
scanner would compare."""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext, registry
from dmm.conflicts.features import build
from dmm.conflicts.merger import merge
from dmm.conflicts.scanner import candidate_pairs, other_answers
from dmm.index import read
from dmm.index.similar import similar_memories
from dmm.proposals.checks import Issue, ReviewContext

NAME = "conflicts"
NEIGHBOURS = 15


def run(ctx: ReviewContext) -> list[Issue]:
    if ctx.proposal.type == "deprecate" or ctx.memory is None:
        return []
    own = ctx.own_paths
    docs = {s.doc for s in similar_memories(ctx.conn, ctx.memory, exclude=tuple(own),
                                            limit=NEIGHBOURS)}
    docs |= set(other_answers(ctx.conn, ctx.memory.title).values())
    others = [m for m in read.memories_by_doc(ctx.conn, sorted(docs)).values()
              if m.id != ctx.memory.id and m.path not in own]
    if not others:
        return []
    features = build(others + [ctx.memory])
    cfg = ctx.config["conflicts"]
    pairs = candidate_pairs(features, {ctx.memory.id}, cfg["pair_similarity"],
                            cfg["skip_ephemeral_pairs"])
    scan = ScanContext(features, pairs, {ctx.memory.id}, cfg)
    candidates = [c for analyzer in registry().values() for c in analyzer.analyze(scan)]
    found = merge(candidates, features, cfg["min_confidence"], "")
    return [Issue(NAME, "warning", f"would conflict with {c.memories[1].path if c.memories[0].memory_id == ctx.memory.id else c.memories[0].path}: {c.description}",
                  suggestion="clarify both memories, or deprecate the one that is wrong")
            for c in found]
