"""Fuse the lexical and the semantic ranking into one relevance (pure: no IO, no model).

Lexical relevance (BM25 over stems and lexicon neighbours, 0-1, see query/rank.py) is exact
about words; the model's cosine is good at meaning but blind to a rare identifier. The fused
relevance is a weighted sum of the two, the cosine first mapped onto 0-1 between a floor (what
unrelated texts score with this model) and a ceiling (a passage that says the same thing):

    fused = (1 - w) * lexical + w * clip((cosine - floor) / (ceiling - floor), 0, 1)

w, floor and ceiling were chosen by cross-validation on 184 agent-style tasks over two stores
(tools/fit_fusion.py; docs/semantic.md has the held-out figures), never on the shared set.
A memory found only by meaning gets no lexical part; one found only by words no semantic part.
"""

from __future__ import annotations

from typing import NamedTuple

WEIGHT = 0.6
FLOOR = 0.1
CEILING = 0.9


class Evidence(NamedTuple):
    """Why a memory is in the ranking: its lexical relevance and its best passage's cosine."""
    lexical: float
    cosine: float | None  # None: no vector (model absent, or the memory not yet embedded)


def semantic_part(cosine: float, floor: float = FLOOR, ceiling: float = CEILING) -> float:
    return min(1.0, max(0.0, (cosine - floor) / (ceiling - floor)))


def fuse(lexical: dict[int, float], cosines: dict[int, float], weight: float = WEIGHT,
         floor: float = FLOOR, ceiling: float = CEILING) -> dict[int, tuple[float, Evidence]]:
    """{doc: (fused relevance, evidence)} for every doc either ranking knows."""
    out = {}
    for doc in lexical.keys() | cosines.keys():
        lex = lexical.get(doc, 0.0)
        cos = cosines.get(doc)
        sem = semantic_part(cos, floor, ceiling) if cos is not None else 0.0
        out[doc] = ((1 - weight) * lex + weight * sem, Evidence(lex, cos))
    return out
