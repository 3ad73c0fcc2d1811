"""How sure a conflict is: the analyzers' evidence for a pair, weighed by fitted coefficients.

Each analyzer says what it found and how strongly (a Candidate's score); a pair's confidence is
a logistic function of those scores and of a few facts about the pair that tell a real conflict
from an artifact of how a store is written: how similar the two texts are, how long they are
(two long guides on one topic share much of their words), how many title words they share that
are specific to them in this store, and whether both titles are topic headings.

The coefficients are fitted at development time by tools/fit_conflicts.py (a logistic
regression whose weights of evidence are kept >= 0, on labelled pairs and on every pair of whole
real stores) and shipped as data in dmm/conflicts/data/weights.json; the scan itself only
multiplies and adds. Pure.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from dmm.conflicts.features import Features
from dmm.conflicts.pairs import cosine
from dmm.conflicts.model import Candidate

WEIGHTS_FILE = Path(__file__).parent / "data" / "weights.json"
SCORED_METHODS = ("supersession_chain", "semantic_similarity", "value_change", "negation",
                  "alternatives", "temporal", "tag_overlap")
FEATURES = (*SCORED_METHODS, "on_point", "similarity", "length", "specific_title_words",
            "headings")
# what can only raise the confidence, and is fitted with a weight >= 0: an analyzer's finding,
# evidence on the memories' point, how similar the two are, the specific title words they share.
# A fit left free learns the shapes of its stores instead (similar pairs with shared tags are
# guides of one collection in the real stores; every labelled case is short) and gave a near copy
# with another value a confidence of 0.16. Length and headings are such shapes: either way.
EVIDENCE = frozenset({*SCORED_METHODS, "on_point", "similarity", "specific_title_words"})


def pair_features(fa: Features, fb: Features, group: list[Candidate]) -> dict[str, float]:
    """What the calibrated confidence of one pair is computed from, each in [0, 1]."""
    out = {m: 0.0 for m in SCORED_METHODS}
    for c in group:
        if c.method in out:
            out[c.method] = max(out[c.method], c.score)
    out["on_point"] = max(c.on_point for c in group)
    shorter = min(fa.memory.tokens, fb.memory.tokens)
    shared = fa.corpus.specific(fa.title_terms & fb.title_terms)
    out.update(similarity=cosine(fa, fb), length=min(1.0, math.log10(1 + shorter) / 4),
               specific_title_words=min(len(shared), 3) / 3,
               headings=float(fa.heading and fb.heading))
    return out


@lru_cache(maxsize=1)
def weights() -> dict:
    """The fitted coefficients: {"intercept": b, "coefficients": {feature: w}, ...}."""
    return json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))


def confidence(features: dict[str, float], fitted: dict | None = None) -> float:
    fitted = fitted or weights()
    z = fitted["intercept"] + sum(w * features.get(name, 0.0)
                                  for name, w in fitted["coefficients"].items())
    return 1.0 / (1.0 + math.exp(-z))
