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


def _in_title(f, text: str) -> bool:
    return text.split()[0] in f.memory.title


def _version_range(f, name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    found = sorted(tuple(int(x) for x in v.version.split(".")) for v in f.versions
                   if v.name == name)
    return found[0], found[-1]


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["value_similarity"]
    out = []
    for a, b, sim in ctx.pairs:
        if sim < floor:
            continue
        fa, fb = ctx.features[a], ctx.features[b]
        differing, agreeing = [], []
        for dim in {q.dimension for q in fa.quantities} & {q.dimension for q in fb.quantities}:
            qa = [(q, c) for q, c in zip(fa.quantities, fa.contexts) if q.dimension == dim]
            qb = [(q, c) for q, c in zip(fb.quantities, fb.contexts) if q.dimension == dim]
            if any(same_value(x.value, y.value) for x, _ in qa for y, _ in qb):
                agreeing.append(dim)
                continue
            # bind the subject: the two values must be said about shared words, and one of
            # them must be the point of its memory (in the title) unless the pair is close
            for x, cx in qa:
                y, cy = next(((y, cy) for y, cy in qb if cx & cy), (None, None))
                if y is not None and (sim >= 0.3 or _in_title(fa, x.text)
                                      or _in_title(fb, y.text)):
                    differing.append((x.text, y.text))
                    break
        names = {v.name for v in fa.versions} & {v.name for v in fb.versions}
        for name in sorted(names):
            if name not in fa.memory.title.lower() and name not in fb.memory.title.lower():
                continue
            lo_a, hi_a = _version_range(fa, name)
            lo_b, hi_b = _version_range(fb, name)
            if hi_a < lo_b or hi_b < lo_a:  # no version in common, ranges included
                differing.append((f"{name} {'.'.join(map(str, hi_a))}",
                                  f"{name} {'.'.join(map(str, hi_b))}"))
        if differing:
            x, y = differing[0]
            score = min(0.9, 0.45 + sim + 0.1 * (len(differing) - 1))
            out.append(Candidate(a, b, NAME, "contradictory", score,
                                 f"different values: {x!r} vs {y!r}", (x, y)))
        elif agreeing and sim >= ctx.config["duplicate_similarity"] * 0.6:
            out.append(Candidate(a, b, NAME, "duplicate", 0.3,
                                 f"the same values ({', '.join(sorted(agreeing))})"))
    return out
