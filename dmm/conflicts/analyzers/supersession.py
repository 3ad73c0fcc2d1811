"""Supersession chains: orphaned, circular, contested and incomplete `supersedes` links.

Structural, so nearly certain: a proper chain (the superseded memory is deprecated) is fine.
"""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.model import Candidate

NAME = "supersession_chain"


def analyze(ctx: ScanContext) -> list[Candidate]:
    feats = ctx.features
    active = {i for i, f in feats.items() if f.memory.is_active}
    out = []
    superseders: dict[str, list[str]] = {}
    for mid, f in feats.items():
        for old in f.memory.supersedes:
            if old == mid or old not in feats:
                continue
            superseders.setdefault(old, []).append(mid)
            if mid in active and old in active:
                if mid in feats[old].memory.supersedes:
                    if mid < old:
                        out.append(Candidate(mid, old, NAME, "supersession", 0.97,
                                             f"circular: {mid} and {old} supersede each other"))
                else:
                    out.append(Candidate(mid, old, NAME, "supersession", 0.95,
                                         f"orphaned: {mid} supersedes {old}, which is still "
                                         "active"))
            elif mid not in active and old in active:
                out.append(Candidate(mid, old, NAME, "supersession", 0.9,
                                     f"incomplete: deprecated {mid} supersedes {old}, which is "
                                     "still active"))
    for old, news in superseders.items():
        contenders = sorted(n for n in news if n in active)
        for i, a in enumerate(contenders):
            for b in contenders[i + 1:]:
                out.append(Candidate(a, b, NAME, "supersession", 0.93,
                                     f"contested: both {a} and {b} supersede {old}"))
    for c in out:
        c.on_point = 1.0  # the links are the memories' own frontmatter
    return [c for c in out if c.a in ctx.focus or c.b in ctx.focus]
