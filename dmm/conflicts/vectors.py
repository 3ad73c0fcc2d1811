"""A memory's term weights as a conflict scan keeps them: its terms and their weights side by
side, a tuple of (interned) strings and an array of doubles.

A full scan holds one vector per memory for its whole length, and reads one of raw weights per
memory before it. As dicts ({term: weight}) each took about 5 KB at 73 terms (a hash table and
a float object per term); as two flat sequences, about 1.3 KB, and a memory's tf-idf vector
shares the tuple of terms its raw weights were read into.

Terms keep the order they were read in, and ``dot`` adds the products in that order with the
same expression as a sum over a dict: every similarity is the same float to the last bit.
"""

from __future__ import annotations

from array import array
from itertools import repeat
from operator import mul
from collections.abc import Iterable, Iterator, Mapping, Set


class TermVector(Set):
    """Terms and their weights, in the order read; a set of its terms (``in``, ``<=``, ``-``
    against sets, iteration), as a dict's keys are."""

    __slots__ = ("terms", "weights")

    def __init__(self, terms: tuple[str, ...] = (), weights: array | None = None) -> None:
        self.terms = terms
        self.weights = array("d") if weights is None else weights

    @classmethod
    def of(cls, mapping: Mapping[str, float]) -> TermVector:
        """The vector of ``mapping`` ({term: weight}), in its order."""
        return cls(tuple(mapping), array("d", mapping.values()))

    def __len__(self) -> int:
        return len(self.terms)

    def __iter__(self) -> Iterator[str]:
        return iter(self.terms)

    def __contains__(self, term: object) -> bool:
        return term in self.terms

    def __repr__(self) -> str:
        return f"TermVector({dict(self.items())!r})"

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> set[str]:
        # what the set operators (Set's mixins) build: a plain set of terms
        return set(it)

    def items(self) -> Iterator[tuple[str, float]]:
        return zip(self.terms, self.weights)

    def lookup(self) -> dict[str, float]:
        """{term: weight}, built when a similarity asks for it."""
        return dict(zip(self.terms, self.weights))

    def dot(self, other: TermVector | dict[str, float]) -> float:
        """The sum of the products of the weights of the terms both hold, added in this
        vector's order (iterate the shorter, as a sum over a dict would). ``other`` may be
        another vector's lookup(), for a caller comparing one vector with many."""
        weight = (other if isinstance(other, dict) else other.lookup()).get
        # v * weight(t, 0.0) for each (t, v), iterated in C
        return sum(map(mul, self.weights, map(weight, self.terms, repeat(0.0))))


EMPTY = TermVector()
