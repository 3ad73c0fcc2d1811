"""What the analyzers need to know about each memory and each pair, computed once per scan.

Pure: built from Memory records. Term vectors are TF-IDF over the scanned memories with the
same analyzer as retrieval (vectors.py); similarity is their cosine (pairs.py, with what else
two memories are to each other). A memory is read with the modules of one concept each: cues
(what a sentence forbids, records as changed), prose (sentences, the point), anchors, names
and roles, headings.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Mapping, Set as AbstractSet
from typing import Callable
from dataclasses import dataclass, field
from functools import cached_property

from dmm.conflicts.alternatives import asks, choices
from dmm.conflicts.anchors import anchors
from dmm.conflicts.contexts import named_contexts
from dmm.conflicts.compounds import compounds, subject_compound
from dmm.conflicts.cues import Prohibition, point_code, prohibitions, records_change
from dmm.conflicts.headings import is_heading, names_its_file
from dmm.conflicts.names import holders, proper_names, title_proper_names
from dmm.conflicts.prose import (in_spans, lead, rationale_spans, split_sentences, stated_prose,
                                 value_contexts, without_code)
from dmm.conflicts.quantities import Quantity, Version, quantities, settings, versions
from dmm.conflicts.synonyms import among, widen
from dmm.conflicts.vectors import EMPTY, TermVector
from dmm.index.refresh import posting_weights
from dmm.memory import Memory
from dmm.text.analyze import terms

# In a store of at least MIN_STORE memories, a term found in more than COMMON_SHARE of them is
# how the store is written (a collection tag, a template's headings, the stack every rule is
# about), not evidence that two memories share a subject. Smaller stores are too small to tell.
MIN_STORE = 20
COMMON_SHARE = 0.1


@dataclass(frozen=True)
class Corpus:
    """Document frequencies of the store a scan reads (every memory, not only those loaded)."""

    df: dict[str, int]
    n: int
    # an incremental scan's: each term's count among the store's active memories, and their
    # number (the full scan counts them over what it loaded: every memory)
    active_df: dict[str, int] | None = None
    active_n: int = 0

    def common(self, term: str) -> bool:
        return self.n >= MIN_STORE and self.df.get(term, 0) > COMMON_SHARE * self.n

    def specific(self, found: set[str] | tuple[str, ...]) -> set[str]:
        """The terms of ``found`` that are not common in the store."""
        return {t for t in found if not self.common(t)}


_NO_CORPUS = Corpus({}, 0)


@dataclass
class Features:
    memory: Memory
    vector: TermVector = field(default_factory=TermVector)  # tf-idf, L2-normalised
    title_terms: set[str] = field(default_factory=set)
    quantities: list[Quantity] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)
    contexts: list[set[str]] = field(default_factory=list)  # terms of each quantity's sentence
    # what the title forbids, then what body sentences forbid (see prohibitions)
    title_prohibitions: list[Prohibition] = field(default_factory=list)
    prohibitions: list[Prohibition] = field(default_factory=list)
    # words that read the same in every language: code, identifiers, acronyms, numbers and
    # normalised quantities ("RFC 9457", "application/problem+json", "duration=3600")
    anchors: set[str] = field(default_factory=set)
    named_contexts: dict[str, set[str]] = field(default_factory=dict)  # see contexts.py
    choices: dict[str, str] = field(default_factory=dict)  # see alternatives.py
    asks: set[str] = field(default_factory=set)  # families whose question the title names
    names: set[str] = field(default_factory=set)  # proper names in title and body
    # who holds a role, as the memory says so (holders): {role key: (person, role as written)}
    roles: dict[str, tuple[str, str]] = field(default_factory=dict)
    title_names: set[str] = field(default_factory=set)  # proper names in the title
    # sentences with a change cue: (sentence, its proper names, its terms)
    changes: list[tuple[str, set[str], set[str]]] = field(default_factory=list)
    corpus: Corpus = _NO_CORPUS  # the store's document frequencies, shared by every memory
    heading: bool = False  # the title names a topic (is_heading), it states nothing
    point: str = ""  # the title and the first sentence: what the memory is about (see lead)
    point_versions: list[Version] = field(default_factory=list)  # the versions it states there
    sections: int = 0  # headings in the body: a guide of many sections, or one rule (0)

    @property
    def id(self) -> str:
        return self.memory.id

    @cached_property
    def sentences(self) -> list[str]:
        """The body's sentences, read when an analyzer first asks (only alternatives does, for
        memories choosing an answer): kept for every memory, they were a tenth of a full scan's
        memory."""
        return split_sentences(self.memory.body)

    @property
    def all_terms(self) -> AbstractSet[str]:
        """Every indexed term of title, tags, folders and body: the vector's terms."""
        return self.vector

    @cached_property
    def subject(self) -> tuple[str, str] | None:
        """The modifier and head the title opens with ("Access tokens ..."), if it does."""
        return subject_compound(self.memory.title)

    @cached_property
    def compounds(self) -> set[tuple[str, str]]:
        """Every pair of adjacent content words in the title and the prose ("access token",
        "refresh token"), stemmed; read when a title's compound meets another's (kinds)."""
        return compounds(self.memory.title + ".\n" + without_code(self.memory.body))

    @cached_property
    def wide_title_terms(self) -> set[str]:
        """The title's terms with their synonyms (synonyms.py): "CPU limit" also says
        "processor" and "cap"."""
        return widen(self.title_terms)

    def says(self, found: tuple[str, ...] | set[str]) -> bool:
        """Whether the memory says every term of ``found``, itself or by a synonym (each in
        ``widen(all_terms)``). Asked, not kept: a widened copy of every term of each memory a
        negation reads was most of what a full scan's analyzers held."""
        return all(among(t, self.all_terms) for t in found)

    @cached_property
    def code(self) -> tuple[dict[str, str], set[str]]:
        """The code the point prescribes and the code it names where it forbids (point_code),
        read once per scan, when an analyzer first asks."""
        return point_code(self.point)


# a memory stating more values than this is a table or a dump, not a rule with its answer:
# its first values are read (comparing every value of two such memories is quadratic)
MAX_QUANTITIES = 200

_SECTION = re.compile(r"^#{1,6}\s+\S", re.M)
def _changes(point: list[str]) -> list[tuple[str, set[str], set[str]]]:
    """The sentences of a memory's point that record a change, each with its names and terms.
    A title that records a change is told in the first sentence ("Android app upkeep handed to
    the Harbor team": "Since Priya left for payments, the Harbor team ..."): the names there
    are the change's too."""
    out = []
    for i, s in enumerate(point):
        if records_change(s):
            names = proper_names(s)
            if i == 0 and len(point) > 1:
                names |= proper_names(point[1])
            out.append((s, names, set(terms(s))))
    return out


def unit_vector(raw: Mapping[str, float] | TermVector, df: Mapping[str, int],
                n: int) -> TermVector:
    """A memory's TF-IDF vector of unit length from its BM25 weights ``raw``, in a store of
    ``n`` memories with document frequencies ``df``."""
    vec = [w * math.log(1 + (n + 1) / df.get(t, 1)) for t, w in raw.items()]
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    # the raw weights' terms, in their order (a TermVector's tuple is shared, not copied)
    return TermVector(raw.terms if isinstance(raw, TermVector) else tuple(raw),
                      array("d", [v / norm for v in vec]))


def text_features(m: Memory) -> dict:
    """The features of ``m`` that its own text decides (title, body, tags, path), whatever the
    store holds: every field of Features but the memory, its vector and the corpus. Most of a
    scan's time is spent here, so the cache keeps them (feature_cache.py)."""
    body = m.body
    prose = without_code(body)
    stated = stated_prose(prose)
    qs = quantities(stated)[:MAX_QUANTITIES]
    # the values the memory sets, not the figures its reasons cite (issue 37 item 11)
    reasons = rationale_spans(stated)
    claimed = [q for q in qs if not in_spans(q.start, reasons)] if reasons else qs
    # a bare value the title sets ("pool size is 20") is the memory's point, though it has
    # no unit the body would repeat
    set_in_title = settings(m.title)
    title_terms = set(terms(m.title))
    title_names = title_proper_names(m.title)
    prose_sentences = split_sentences(prose)
    point = lead(m.title, prose_sentences)
    point_text = "\n".join(point)
    heading = is_heading(m.title) or names_its_file(m.title, m.path)
    contexts, chosen = named_contexts(m.title, m.tags), choices(m.title)
    if chosen and heading:
        # "Vue 3 Development Instructions" is the rule book for Vue projects, not a choice
        # of Vue over React: its member is the context it governs
        contexts.update({f"choice of {family}": {member}
                         for family, member in chosen.items()})
        chosen = {}
    return dict(
        title_terms=title_terms, quantities=set_in_title + claimed,
        contexts=[title_terms] * len(set_in_title)
        + value_contexts(stated, claimed, title_terms),
        versions=versions(stated),
        title_prohibitions=prohibitions(m.title),
        prohibitions=[p for s in prose_sentences for p in prohibitions(s)],
        anchors=anchors(m.title + "\n" + prose, qs),
        named_contexts=contexts, choices=chosen, asks=asks(m.title) if chosen else set(),
        names=title_names | proper_names(body), title_names=title_names,
        roles=holders(point_text),
        changes=_changes(point),
        heading=heading, point=point_text, point_versions=versions(point_text),
        sections=len(_SECTION.findall(prose)))


def build(memories: list[Memory],
          weights: Mapping[str, Mapping[str, float] | TermVector] | None = None,
          df: dict[str, int] | None = None, n: int | None = None,
          progress: Callable[[int, int], None] | None = None,
          active: tuple[dict[str, int], int] | None = None,
          texts: Callable[[Memory], dict] | None = None) -> dict[str, Features]:
    """Features of ``memories``. ``weights`` (BM25 term weights by memory id, as in the cache's
    postings: dicts or TermVectors) are computed when not given; ``df`` and ``n`` (document frequencies and store
    size) default to those of ``memories`` themselves. ``progress(done, total)`` is told
    after each memory (most of a full scan's time is spent here). ``active``: the store's
    (active_df, active_n) when ``memories`` are a part of it (Corpus). ``texts(memory)``: its
    text_features, as computed or kept (the scanner reads them from the cache,
    feature_cache.py)."""
    texts = texts or text_features
    if weights is None:
        weights = {m.id: posting_weights(m)[0] for m in memories}
    if df is None:
        df = Counter(t for w in weights.values() for t in w)
    corpus = Corpus(df, n or len(memories), *(active or (None, 0)))
    n = n or len(memories)
    out = {}
    for done, m in enumerate(memories):
        if progress is not None and done % 50 == 0:
            progress(done, len(memories))
        unit = unit_vector(weights.get(m.id, EMPTY), df, n)
        out[m.id] = Features(memory=m, vector=unit, corpus=corpus, **texts(m))
    if progress is not None:
        progress(len(memories), len(memories))
    return out
