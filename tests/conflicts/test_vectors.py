"""Compact term vectors (vectors.py): the similarities and term sets of a conflict scan are
those of the plain dicts they replace, to the last bit."""

from __future__ import annotations

import itertools

from dmm.conflicts.features import build
from dmm.conflicts.pairs import cosine
from dmm.conflicts.vectors import TermVector
from dmm.index.refresh import posting_weights
from dmm.memory import Memory

TEXTS = [
    ("Access tokens are valid for 15 minutes",
     "The auth service signs access tokens with RS256; a token expires after 15 minutes."),
    ("Refresh tokens last 30 days", "A refresh token is rotated on every use and lasts 30 days."),
    ("Tokens expire after fifteen minutes", "Access tokens expire after fifteen minutes."),
    ("Invoices are numbered per tenant", "Each tenant has its own invoice sequence, no gaps."),
    ("Empty", ""),
]


def memories() -> list[Memory]:
    return [Memory(id=f"mem_2025_01_01_{i:03d}", path=f"project/m{i}.md", title=title, body=body,
                   tags=["auth"] if i < 3 else [], scope="project", priority=0.5,
                   confidence="active", status="active")
            for i, (title, body) in enumerate(TEXTS, 1)]


def dict_cosine(a: dict[str, float], b: dict[str, float]) -> float:
    """The similarity as computed over dicts: iterate the shorter, look up in the longer."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(t, 0.0) for t, v in a.items())


def test_cosine_is_the_dict_cosine_to_the_last_bit():
    features = build(memories())
    assert any(cosine(f, g) > 0.1 for f, g in itertools.combinations(features.values(), 2))
    for f, g in itertools.permutations(features.values(), 2):
        got = cosine(f, g)
        assert got == dict_cosine(dict(f.vector.items()), dict(g.vector.items()))
        assert type(got) is type(dict_cosine(dict(f.vector.items()), dict(g.vector.items())))
        assert got == cosine(f, g, f.vector.lookup())  # one memory against many


def test_weights_read_as_vectors_give_the_same_features():
    ms = memories()
    as_dicts = build(ms, {m.id: posting_weights(m)[0] for m in ms})
    as_vectors = build(ms, {m.id: TermVector.of(posting_weights(m)[0]) for m in ms})
    for m in ms:
        assert list(as_dicts[m.id].vector.items()) == list(as_vectors[m.id].vector.items())
        assert as_dicts[m.id].vector.terms == tuple(posting_weights(m)[0])  # the order read


def test_a_vector_is_the_set_of_its_terms():
    f = build(memories())["mem_2025_01_01_001"]
    terms = set(f.all_terms)
    assert "token" in f.all_terms and "invoic" not in f.all_terms
    assert {"token", "access"} <= f.all_terms and not {"token", "invoic"} <= f.all_terms
    assert {"token", "invoic"} - f.all_terms == {"invoic"}
    assert f.all_terms - {"token"} == terms - {"token"}
    assert len(f.all_terms) == len(terms) == len(f.vector.weights)
