"""Conflict check: would the proposed memory conflict with the store? (warns; the reviewer
then defers to a person). Runs the conflict analyzers on the proposal against its most similar
memories, found through the cache's postings, so it stays fast on large stores."""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext, registry
from dmm.conflicts.features import build, cosine
from dmm.conflicts.merger import merge
from dmm.index import read
from dmm.index.similar import similar_memories
from dmm.proposals.checks import Issue, ReviewContext

NAME = "conflicts"
NEIGHBOURS = 15


def run(ctx: ReviewContext) -> list[Issue]:
    if ctx.proposal.type == "deprecate" or ctx.memory is None:
        return []
    own = ctx.own_paths
    near = similar_memories(ctx.conn, ctx.memory, exclude=tuple(own), limit=NEIGHBOURS)
    others = [m for m in read.memories_by_doc(ctx.conn, [s.doc for s in near]).values()
              if m.id != ctx.memory.id]
    if not others:
        return []
    features = build(others + [ctx.memory])
    me = features[ctx.memory.id]
    pairs = sorted((min(ctx.memory.id, o.id), max(ctx.memory.id, o.id), cosine(me, features[o.id]))
                   for o in others)
    cfg = ctx.config["conflicts"]
    scan = ScanContext(features, [p for p in pairs if p[2] >= cfg["pair_similarity"]],
                       {ctx.memory.id}, cfg)
    candidates = [c for analyzer in registry().values() for c in analyzer.analyze(scan)]
    found = merge(candidates, features, cfg["min_confidence"], "")
    return [Issue(NAME, "warning", f"would conflict with {c.memories[1].path if c.memories[0].memory_id == ctx.memory.id else c.memories[0].path}: {c.description}",
                  suggestion="clarify both memories, or deprecate the one that is wrong")
            for c in found]
