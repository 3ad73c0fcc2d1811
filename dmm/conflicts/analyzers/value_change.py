"""Value change: the same subject given different numbers, durations, sizes or versions.

Units are normalised first (quantities.py), so 3600 seconds equals one hour and 20,000,000
bytes differs from 5 MB. A dimension only counts when both memories state it and no value of
one matches a value of the other; counts are bound to their noun ("3 projects", "five projects").
"""

from __future__ import annotations

from dmm.conflicts.analyzers import ScanContext
from dmm.conflicts.model import Candidate
from dmm.conflicts.quantities import same_value

NAME = "value_change"


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["value_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        if sim < floor:
            continue
        fa, fb = ctx.features[a], ctx.features[b]
        differing, agreeing = [], []
        dims_a = {q.dimension for q in fa.quantities}
        for dim in dims_a & {q.dimension for q in fb.quantities}:
            qa = [q for q in fa.quantities if q.dimension == dim]
            qb = [q for q in fb.quantities if q.dimension == dim]
            if any(same_value(x.value, y.value) for x in qa for y in qb):
                agreeing.append(dim)
            else:
                differing.append((qa[0].text, qb[0].text))
        for va in fa.versions:
            for vb in fb.versions:
                if va.name == vb.name and va.version != vb.version and not any(
                        v.name == va.name and v.version == vb.version for v in fa.versions):
                    differing.append((va.text, vb.text))
        if differing:
            x, y = differing[0]
            score = min(0.9, 0.45 + sim + 0.1 * (len(differing) - 1))
            out.append(Candidate(a, b, NAME, "contradictory", score,
                                 f"different values: {x!r} vs {y!r}", (x, y)))
        elif agreeing and sim >= ctx.config["duplicate_similarity"] * 0.6:
            out.append(Candidate(a, b, NAME, "duplicate", 0.3,
                                 f"the same values ({', '.join(sorted(agreeing))})"))
    return out
