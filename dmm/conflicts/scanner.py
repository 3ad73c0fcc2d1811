"""Run conflict scans: full (every pair), incremental (memories changed since a commit or since
the last scan, against the memories a full scan would compare them with) and targeted (one
memory).

Reads memories from the fresh cache, computes features once, finds the pairs worth comparing
through an inverted index (terms in more than 2 % of a large store are skipped while looking
for candidates, then every candidate is scored with its full vectors), runs the analyzers and
hands the merged conflicts to the store.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import sqlite3
import sys
import time
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from dmm.conflicts import narrative, relations, sanity, store
from dmm.conflicts.alternatives import FAMILIES, asks, choices, names_of
from dmm.conflicts.analyzers import fingerprint, registry
from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.contexts import apart
from dmm.conflicts.feature_cache import Kept, code_version
from dmm.conflicts.features import Features, build, unit_vector
from dmm.conflicts.merger import conflict, decide
from dmm.conflicts.pairs import NEAR_COPY, cosine, kinds, parallel
from dmm.conflicts.vectors import EMPTY, TermVector
from dmm.index import db, read
from dmm.index.db import in_chunks
from dmm.index.refresh import ACTIVE
from dmm.index.similar import corpus_stats, similar_memories

MAX_DF_RATIO = 0.02
MIN_MAX_DF = 50
MIN_SHARED_TERMS = 2


@dataclass
class ScanResult:
    scan_id: str
    scan_type: str
    started_at: str
    completed_at: str
    duration_ms: int
    memories_scanned: int
    methods_used: list[str]
    conflicts_detected: int
    conflicts_new: int
    conflicts_existing: int
    by_type: dict = field(default_factory=dict)
    by_method: dict = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # findings left out as artifacts of how the store is written (sanity.py), as dicts
    artifacts: list[dict] = field(default_factory=list)
    new_conflict_ids: list[str] = field(default_factory=list)  # the conflicts_new ones
    # the judge's pass (analyzers/rule_extraction.py Report), when the judge is on
    judge: dict | None = None

    def to_dict(self) -> dict:
        out = dict(self.__dict__)
        if out["judge"] is None:  # the judge off: the result as before it existed
            del out["judge"]
        return out


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def candidate_pairs(features: dict[str, Features], focus: set[str], min_sim: float,
                    skip_ephemeral: bool) -> list[tuple[str, str, float]]:
    """Pairs of active memories, at least one in ``focus``, with cosine >= ``min_sim`` or
    choosing answers to one question of a family of alternatives (Argon2id vs bcrypt: few
    shared words, one question; the family names its subject, or both titles name its
    question), that are not set in different contexts (Python vs YAML, tests vs
    production)."""
    active = [i for i, f in features.items() if f.memory.is_active]
    postings: dict[str, list[str]] = defaultdict(list)
    chosen: dict[str, list[str]] = defaultdict(list)
    for i in active:
        for term in features[i].vector:
            postings[term].append(i)
        for family in features[i].choices:
            if _bound(features[i], family):
                chosen[family].append(i)
    corpus = next(iter(features.values())).corpus if features else None
    if corpus is not None and corpus.active_df is not None:
        # an incremental scan loaded a part of the store: a word is common by the store's
        # counts, as the full scan finds it (the part's would make every word rare)
        max_df = max(MIN_MAX_DF, int(MAX_DF_RATIO * corpus.active_n))
        counts = corpus.active_df
        rare = lambda term, docs: counts.get(term, len(docs)) <= max_df  # noqa: E731
    else:
        max_df = max(MIN_MAX_DF, int(MAX_DF_RATIO * len(active)))
        rare = lambda term, docs: len(docs) <= max_df  # noqa: E731
    # the pairs the alternatives compared: few. The pairs found by shared words are not kept
    # (millions in a full scan of a large store); each is met once, from its smaller id when
    # both memories are in focus
    seen: set[tuple[str, str]] = set()
    out = []

    def compare(f: Features, g: Features, min_sim: float, remember: bool = False,
                f_weights: dict[str, float] | None = None) -> None:
        key = (f.id, g.id) if f.id < g.id else (g.id, f.id)
        if key in seen:
            return
        if remember:
            seen.add(key)
        if skip_ephemeral and f.memory.scope == "ephemeral" == g.memory.scope:
            return
        if apart(f.named_contexts, g.named_contexts) or parallel(f, g):
            return
        sim = cosine(f, g, f_weights)
        if sim >= min_sim and (sim >= NEAR_COPY or not kinds(f, g)):
            out.append((key[0], key[1], sim))

    focused = [features[i] for i in sorted(focus) if i in features
               and features[i].memory.is_active]
    for f in focused:  # alternatives first: the pair is compared whatever its similarity
        for family, member in f.choices.items():
            if _bound(f, family):
                for j in chosen.get(family, ()):
                    # another answer, or the same answer to a question both titles ask
                    if features[j].choices[family] != member or (
                            j != f.id and family in f.asks & features[j].asks):
                        compare(f, features[j], 0.0, remember=True)
    in_focus = {f.id for f in focused}
    for f in focused:
        i = f.id
        f_weights = f.vector.lookup()  # built once for every comparison of f
        shared: dict[str, int] = defaultdict(int)
        for term in f.vector:
            docs = postings.get(term, ())
            if rare(term, docs):
                for j in docs:
                    shared[j] += 1
        # one shared rare word (an id, a number) is chance; two start to be a subject
        for j in [j for j, n in shared.items() if n >= MIN_SHARED_TERMS]:
            if j != i and not (j < i and j in in_focus):  # met from j's side
                compare(f, features[j], min_sim, f_weights=f_weights)
    return sorted(out)


def nearest(features: dict[str, Features], focus: set[str], k: int) -> dict[str, list[str]]:
    """The ``k`` nearest active memories of each active memory of ``focus`` among
    ``features``, best first, by the cosine of their TF-IDF vectors (the cosine
    index/similar.py computes from the cache). A memory is a candidate when it shares a term
    that is not common (as candidate_pairs finds pairs): one pass over the loaded vectors,
    where asking the cache memory by memory took 130 ms each on 1,000 memories."""
    import heapq

    active = [i for i, f in features.items() if f.memory.is_active]
    postings: dict[str, list[str]] = defaultdict(list)
    for i in active:
        for term in features[i].vector:
            postings[term].append(i)
    max_df = max(MIN_MAX_DF, int(MAX_DF_RATIO * len(active)))
    out = {}
    for i in sorted(focus):
        f = features.get(i)
        if f is None or not f.memory.is_active:
            continue
        weights = f.vector.lookup()
        others: set[str] = set()
        for term in f.vector:
            docs = postings.get(term, ())
            if len(docs) <= max_df:
                others.update(docs)
        others.discard(i)
        best = heapq.nlargest(k, ((cosine(f, features[j], weights), j) for j in others))
        out[i] = [j for sim, j in sorted(best, key=lambda x: (-x[0], x[1])) if sim > 0]
    return out


def detect(features: dict[str, Features], focus: set[str], config: dict,
           analyzers: list | None = None, detected_at: str = "", judged: list | None = None,
           together: dict | None = None) -> tuple[list, list[sanity.Artifact]]:
    """The conflicts among ``features`` that involve a memory of ``focus``: candidate pairs,
    every analyzer (or those given), with the judge's verdicts (``judged``: candidates of
    analyzers/rule_extraction.py) merged into one conflict per pair, less the artifacts of
    how the store is written (sanity.py), which are returned apart. Pure: no cache, no git
    (tools/eval_conflicts.py runs exactly this on the evaluation sets)."""
    found = decide(candidates(features, focus, config, analyzers, together)
                   + list(judged or ()),
                   features, config["min_confidence"])
    found = relations.apply(found, features)  # what `related` declares (relations.py)
    store_size = max((f.corpus.n for f in features.values()), default=0)
    kept, artifacts = sanity.check(found, store_size)
    # the text of what is reported only: most findings of a large store are artifacts
    return [conflict(f, features, detected_at) for f in kept], artifacts


def _bound(f: Features, family: str) -> bool:
    """Whether ``f``'s choice in ``family`` says by itself what it is about: the family names
    its subject, or the title names the family's question ("Prices are BigDecimal")."""
    return FAMILIES[family].names_subject or family in f.asks


def candidates(features: dict[str, Features], focus: set[str], config: dict,
               analyzers: list | None = None, together: dict | None = None) -> list:
    """What every analyzer (or those given) finds among the candidate pairs, and among the
    pairs ``together`` names (the queries often return them together:
    analyzers/co_retrieval.py) when the co_retrieval method runs."""
    pairs = candidate_pairs(features, focus, config["pair_similarity"],
                            config["skip_ephemeral_pairs"])
    use = analyzers if analyzers is not None else list(registry().values())
    if together and any(a.NAME == "co_retrieval" for a in use):
        pairs = sorted(pairs + co_retrieved_pairs(features, focus, together, pairs,
                                                  config["skip_ephemeral_pairs"]))
    ctx = ScanContext(features, pairs, focus, config, together or {})
    return [c for analyzer in use for c in analyzer.analyze(ctx)]


def co_retrieved_pairs(features: dict[str, Features], focus: set[str], together: dict,
                       known: list[tuple[str, str, float]], skip_ephemeral: bool,
                       ) -> list[tuple[str, str, float]]:
    """The pairs of ``together`` not among the ``known`` candidate pairs, whatever their
    similarity, that candidate_pairs would compare otherwise: both active, one in ``focus``,
    not two ephemeral notes, not set in different contexts, not parallel documents; and no
    link their authors wrote joins them (`supersedes`, `related`: they know of each other)."""
    seen = {(a, b) for a, b, _ in known}
    out = []
    for a, b in sorted(together):
        f, g = features.get(a), features.get(b)
        if (a, b) in seen or f is None or g is None or not (a in focus or b in focus):
            continue
        if not (f.memory.is_active and g.memory.is_active) \
                or relations.linked(f.memory, g.memory):
            continue
        if skip_ephemeral and f.memory.scope == "ephemeral" == g.memory.scope:
            continue
        if apart(f.named_contexts, g.named_contexts) or parallel(f, g):
            continue
        sim = cosine(f, g)
        if sim >= NEAR_COPY or not kinds(f, g):
            out.append((a, b, sim))
    return out


def _weights(conn: sqlite3.Connection, docs: list[int] | None) -> dict[int, TermVector]:
    """BM25 term weights from the cache's postings (no re-tokenising), as compact vectors
    (vectors.py). SQLite returns a new string for every row: each term is interned, kept once
    (a full scan of 50,000 memories reads about five million postings of a few hundred
    thousand distinct terms)."""
    terms: dict[int, list[str]] = defaultdict(list)
    weights: dict[int, array] = defaultdict(lambda: array("d"))

    def take(rows) -> None:
        try:
            for doc, term, weight in rows:
                terms[doc].append(sys.intern(term))
                weights[doc].append(weight)
        except TypeError as exc:  # a damaged page SQLite did not notice: a NULL or a blob
            raise sqlite3.DatabaseError(f"malformed postings in the cache: {exc}") from exc

    if docs is None:
        take(conn.execute("SELECT doc, term, weight FROM postings"))
    for chunk, marks in in_chunks(docs or ()):
        take(conn.execute(f"SELECT doc, term, weight FROM postings WHERE doc IN ({marks})",
                          chunk))
    out = {}
    while terms:  # one memory's list at a time becomes its tuple
        doc, found = terms.popitem()
        out[doc] = TermVector(tuple(found), weights.pop(doc))
    return out


def other_answers(conn: sqlite3.Connection, title: str) -> dict[str, int]:
    """Active memories (id: doc) whose titles answer the question ``title`` answers (bcrypt
    for Argon2id; minor units for "Prices are BigDecimal"), when the family names its subject
    or both titles name its question: they may share no words, so no similarity search finds
    them."""
    out = {}
    asked = asks(title)
    for family, member in choices(title).items():
        named = FAMILIES[family].names_subject
        if not (named or family in asked):
            continue
        for other in FAMILIES[family].members:
            if other == member and family not in asked:
                continue  # the same answer counts only to a question both titles ask
            for name in names_of(family, other):
                for mid, doc, other_title in conn.execute(
                        "SELECT id, doc, title FROM memories WHERE lower(title) LIKE ? AND "
                        "status = 'active'", (f"%{name}%",)):
                    other_asks = family in asks(other_title)
                    if choices(other_title).get(family) == other and (
                            other_asks if other == member else named or other_asks):
                        out[mid] = doc
    return out


def load_features(conn: sqlite3.Connection, focus_ids: set[str] | None,
                  progress=None, extra: set[str] = frozenset(), min_sim: float = 0.0,
                  ) -> tuple[dict[str, Features], set[str]]:
    """Features for a scan and the ids it is about.

    A full scan (``focus_ids`` None) reads every memory. An incremental or targeted scan reads
    only the changed memories, the memories a full scan would compare them with by shared
    words (``_compared``; ``min_sim``: the scan's pair_similarity), the memories linked to
    them by `supersedes`, the memories that record a move "from X to Y" (reversals), those
    choosing another answer to the same question (alternatives.py) and ``extra`` ones (the
    judge's verdicts' other memories), with the store's statistics the cache keeps (document
    frequencies, its size): work in proportion to the change, not to the store, so a hook's
    scan stays fast on large stores.
    """
    # every read in one snapshot (a refresh by another process in between would renumber the
    # rows one statement found and the next looks up); the features are computed after it, so
    # no writer waits for them
    kept = Kept(conn)  # the text features earlier scans computed (feature_cache.py)
    with db.snapshot(conn):
        memories, weights, df, n, focus, active = _read_for_scan(conn, focus_ids, extra,
                                                                 min_sim, kept)
        kept.read(memories)
    features = build(memories, weights, df, n, progress, active, kept.texts)
    kept.save(tidy=focus_ids is None)
    return features, focus


def _chains(ids: set[str], links: dict[str, list[str]]) -> set[str]:
    """The memories joined to ``ids`` by `supersedes` links, either way, at any distance."""
    near: dict[str, set[str]] = {}
    for mid, olds in links.items():  # links: the memories that supersede something
        for old in olds:
            near.setdefault(mid, set()).add(old)
            near.setdefault(old, set()).add(mid)
    seen, todo = set(ids), [i for i in ids if i in near]
    while todo:
        for other in near[todo.pop()] - seen:
            seen.add(other)
            todo.append(other)
    return seen - set(ids)


def _read_for_scan(conn: sqlite3.Connection, focus_ids: set[str] | None,
                   extra: set[str] = frozenset(), min_sim: float = 0.0,
                   kept: Kept | None = None) -> tuple:
    if focus_ids is None:
        docs = dict(conn.execute("SELECT id, doc FROM memories"))
        memories = read.memories(conn)
        by_doc = _weights(conn, None)
        weights = {m.id: by_doc.get(docs[m.id], EMPTY) for m in memories}
        return memories, weights, None, None, {m.id for m in memories}, None
    # only the rows of the memories the scan loads: never the whole store's (each of these
    # reads was proportional to the store, for one changed memory)
    docs = _docs(conn, set(focus_ids) | set(extra))
    focus = {i for i in focus_ids if i in docs}
    wanted = set(focus) | {i for i in extra if i in docs}
    links = _links(conn)
    # a changed link may open or close a circle whose finding is stored under two other
    # memories of the chain: the whole chain is scanned again
    chained = _chains(focus, links)
    docs.update(_docs(conn, chained - set(docs)))
    focus |= {i for i in chained if i in docs}
    wanted |= focus
    for mid, olds in links.items():
        if mid in focus or focus & set(olds):
            wanted.add(mid)
            wanted.update(olds)
    targets = {old for mid in wanted for old in links.get(mid, [])}
    wanted |= {mid for mid, olds in links.items() if targets & set(olds)}
    focused = list(read.memories_by_doc(conn, [docs[i] for i in focus]).values())
    kept = kept or Kept(conn)
    kept.read(focused)
    named = set().union(*(kept.fields(m)["names"] for m in focused))
    wanted |= _moves(conn, named)
    for memory in focused:
        wanted |= other_answers(conn, memory.title).keys()
    n = conn.execute("SELECT count(DISTINCT id) FROM memories").fetchone()[0]
    active_n = conn.execute(f"SELECT count(*) FROM memories m WHERE {ACTIVE}").fetchone()[0]
    compared, by_doc = _compared(conn, [docs[i] for i in focus], min_sim, n, active_n)
    wanted |= compared
    docs.update(_docs(conn, wanted - set(docs)))
    subset = list(read.memories_by_doc(conn, [docs[i] for i in wanted if i in docs]).values())
    by_doc.update(_weights(conn, [docs[m.id] for m in subset if docs[m.id] not in by_doc]))
    weights = {m.id: by_doc.get(docs[m.id], EMPTY) for m in subset}
    # document frequencies from the statistics the cache keeps
    stats = corpus_stats(conn, sorted({t for w in weights.values() for t in w}))
    df = {term: s.df for term, s in stats.items()}
    return subset, weights, df, n, focus, ({t: s.active for t, s in stats.items()}, active_n)


def _moves(conn: sqlite3.Connection, named: set[str]) -> set[str]:
    """Ids of the active memories recording a move "from X to Y" (table ``moves``) that
    temporal.py's reversals can pair with a memory naming ``named``: those whose X is one of
    them, by their kept features (feature_cache.py), and those whose kept features do not say
    (none kept, or kept from another text or code). Every such memory was loaded before: a
    sixth of a generated store. The rows are read from the index that holds these columns
    (the table's rows are wide: the primary key's index would be followed to each)."""
    return {mid for mid, moved_from, known in conn.execute(
        "SELECT m.id, f.moved_from, f.code = ? AND f.digest = m.digest AND f.title = m.title "
        "FROM moves v JOIN memories m ON m.doc = v.doc LEFT JOIN features f INDEXED BY "
        "features_valid ON f.path = m.path WHERE m.status = 'active'", (code_version(),))
        if not known or moved_from in named}


def _compared(conn: sqlite3.Connection, focus_docs: list[int], min_sim: float, n: int,
              active_n: int) -> tuple[set[str], dict[int, TermVector]]:
    """Ids of the memories a full scan compares with an active memory of ``focus_docs`` by
    shared words (candidate_pairs: an active memory with at least MIN_SHARED_TERMS of its
    terms found in at most max_df active memories of the store) whose cosine with it reaches
    ``min_sim`` (a pair below is not compared): found from the postings of those rare terms
    alone, and the cosines from the postings of the memories found; and the term weights
    read meanwhile, by doc (not read again)."""
    focus = [d for (d,) in conn.execute(
        f"SELECT m.doc FROM memories m WHERE m.doc IN ({','.join('?' * len(focus_docs))}) "
        f"AND {ACTIVE}", focus_docs)]
    if not focus:
        return set(), {}
    max_df = max(MIN_MAX_DF, int(MAX_DF_RATIO * active_n))
    vectors = _weights(conn, focus)
    stats = corpus_stats(conn, sorted({t for v in vectors.values() for t in v}))
    found: dict[int, set[int]] = {}
    for doc in focus:
        rare = [t for t in vectors.get(doc, EMPTY) if stats[t].active <= max_df]
        shared: Counter = Counter()
        for chunk, marks in in_chunks(rare):
            # the postings' key alone (term, doc): joining each row to its memory to ask
            # whether it is active cost a lookup per posting, tens of thousands at 50,000
            shared.update(d for (d,) in conn.execute(
                f"SELECT doc FROM postings WHERE term IN ({marks})", chunk))
        found[doc] = _active_docs(conn, {d for d, k in shared.items()
                                         if k >= MIN_SHARED_TERMS and d != doc})
    others = sorted(set().union(*found.values()) - set(vectors))
    vectors.update(_weights(conn, others))
    stats.update(corpus_stats(conn, sorted({t for v in vectors.values() for t in v}
                                           - set(stats))))
    df = {t: s.df for t, s in stats.items()}
    units = {doc: unit_vector(v, df, n) for doc, v in vectors.items()}
    # a little below the floor: the scan compares these again from their features, exactly
    keep = {d for doc, ds in found.items() for d in ds
            if units[doc].dot(units[d]) >= min_sim - 1e-9}
    return {mid for (mid,) in conn.execute(
        f"SELECT id FROM memories WHERE doc IN ({','.join('?' * len(keep))})",
        sorted(keep))} if keep else set(), vectors


def _active_docs(conn: sqlite3.Connection, docs: set[int]) -> set[int]:
    """Those of ``docs`` whose memories are active."""
    out: set[int] = set()
    for chunk, marks in in_chunks(sorted(docs)):
        out.update(d for (d,) in conn.execute(
            f"SELECT m.doc FROM memories m WHERE m.doc IN ({marks}) AND {ACTIVE}", chunk))
    return out


def _docs(conn: sqlite3.Connection, ids: set[str]) -> dict[str, int]:
    """The cache row of each of ``ids`` it holds (of two files with one id, the last read,
    as a scan of the whole table found)."""
    out: dict[str, int] = {}
    ordered = sorted(ids)
    for chunk, marks in in_chunks(ordered):
        out.update(conn.execute(f"SELECT id, max(doc) FROM memories WHERE id IN "
                                f"({marks}) GROUP BY id", chunk))
    return out


def _links(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Each memory's `supersedes` list, for the memories (by id) where some file with that id
    supersedes something: the rows of every other memory are never returned."""
    return {mid: json.loads(sup) for mid, sup in conn.execute(
        "SELECT id, supersedes FROM memories WHERE id IN "
        "(SELECT id FROM memories WHERE supersedes != '[]') ORDER BY doc")}


def scan(conn: sqlite3.Connection, config: dict, *, scan_type: str = "full",
         focus_ids: set[str] | None = None, methods: list[str] | None = None,
         progress=None, second_pass=None, loaded: tuple | None = None,
         complete: bool = True, together: dict | None = None, commits=None) -> ScanResult:
    """Scan and store the result. ``complete``: False when the scan looked at part of the
    store on request (a scope), whatever changed elsewhere: the store is not marked as
    scanned, so the next scan still looks at what changed. ``focus_ids`` limits incremental and targeted scans;
    ``progress(done, total)`` follows the reading of the memories (most of the time);
    ``second_pass``: the judge's (analyzers/rule_extraction.RuleExtraction), whose cached
    verdicts join the analyzers' candidates; ``loaded``: (features, focus) the judge's pass
    read from this very state of the cache, not read again; ``together``: the pairs the
    queries often return together (dmm.usage.together), for the co_retrieval method;
    ``commits(paths)``: the last commit of each memory (narrative.apply_rules)."""
    started = time.perf_counter()
    started_at = now()
    analyzers = registry()
    unknown = set(methods or []) - set(analyzers)
    if unknown:
        raise ValueError(f"unknown method(s): {', '.join(sorted(unknown))}")
    use = [analyzers[m] for m in (methods or analyzers)]
    if loaded is not None:
        features, focus = loaded
    else:
        extra = second_pass.partners(conn, focus_ids) if second_pass else set()
        if focus_ids is not None and together:  # the partners the queries return with them
            extra = extra | {x for pair in together if set(pair) & focus_ids for x in pair}
        features, focus = load_features(conn, focus_ids, progress, extra,
                                        config["pair_similarity"])
    judged = second_pass.candidates(conn, features, focus) if second_pass else None
    conflicts, artifacts = detect(features, focus, config, use, started_at, judged, together)
    # the story's rules that need no model: working sessions, progression (narrative.py)
    conflicts = narrative.apply_rules(conflicts, features, config, commits)
    scan_id = f"scan_{dt.datetime.now(dt.timezone.utc):%Y%m%d_%H%M%S}_{secrets.token_hex(2)}"
    partial = {a.NAME for a in use} if methods and set(methods) != set(analyzers) else None
    new_ids, existing = store.save(conn, conflicts, focus if scan_type != "full" else None,
                                   scan_id, fingerprint(config), partial, complete)
    by_type: dict[str, int] = defaultdict(int)
    by_method: dict[str, int] = defaultdict(int)
    for c in conflicts:
        by_type[c.type] += 1
        by_method[c.detection_method] += 1
    result = ScanResult(scan_id, scan_type, started_at, now(),
                        int((time.perf_counter() - started) * 1000), len(focus),
                        [a.NAME for a in use], len(conflicts), len(new_ids), existing,
                        dict(by_type), dict(by_method), artifacts=[a.to_dict() for a in artifacts],
                        new_conflict_ids=new_ids,
                        judge=second_pass.report.to_dict() if second_pass else None)
    if second_pass:
        result.errors += second_pass.report.errors
    store.record_scan(conn, result)
    return result


NEIGHBOURS = 15  # a new text is compared with its most similar memories (and other answers)


def against_store(conn: sqlite3.Connection, memory, config: dict,
                  exclude_paths: tuple[str, ...] = ()) -> list:
    """The conflicts ``memory`` (a draft or a proposal's new text, not in the store) would
    have with the store: the same analyzers and pairs a scan uses, against its most similar
    memories (through the cache's postings, so it stays fast on large stores) and the
    memories choosing another answer to the same question. Only the conflicts ``memory`` takes
    part in."""
    exclude = set(exclude_paths)
    with db.snapshot(conn):
        docs = {s.doc for s in similar_memories(conn, memory, exclude=tuple(exclude),
                                                limit=NEIGHBOURS)}
        docs |= set(other_answers(conn, memory.title).values())
        others = [m for m in read.memories_by_doc(conn, sorted(docs)).values()
                  if m.id != memory.id and m.path not in exclude]
    if not others:
        return []
    # only what the draft takes part in: a conflict among the neighbours it brought along is
    # the store's, already listed, and says nothing about the draft
    return [c for c in detect(build(others + [memory]), {memory.id}, config)[0]
            if memory.id in {m.memory_id for m in c.memories}]
