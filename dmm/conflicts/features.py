"""What the analyzers need to know about each memory and each pair, computed once per scan.

Pure: built from Memory records. Term vectors are TF-IDF over the scanned memories with the
same analyzer as retrieval; similarity is their cosine. Cue lists match on word boundaries and
cover English, German, Spanish and Chinese (CJK has no word boundaries, so Chinese cues are
plain substrings).
"""

from __future__ import annotations

import bisect
import math
import re
from array import array
from collections import Counter
from collections.abc import Mapping, Set as AbstractSet
from typing import Callable
from dataclasses import dataclass, field
from functools import cached_property

from dmm.conflicts.alternatives import asks, choices
from dmm.conflicts.contexts import named_contexts
from dmm.conflicts.quantities import MONTHS, Quantity, Version, quantities, versions
from dmm.conflicts.synonyms import among, widen
from dmm.conflicts.vectors import EMPTY, TermVector
from dmm.index.refresh import posting_weights
from dmm.memory import Memory
from dmm.text.analyze import STOPWORDS, stem, terms

# A change recorded as done: a verb of change in the past ("moved", "was upgraded", "took
# over"), "no longer", or a noun of change said to have happened ("the migration is complete",
# "after the reorganisation"). "Upgrade the project to ..." (an instruction), "Migration
# guide" (a how-to) and "a breaking change may occur" record nothing.
CHANGED = re.compile(
    r"\b(moved|migrated|switched|replaced|replaces|upgraded|bumped|took over|taken over|"
    r"takes over|handed over|handed to|no longer|retired|switched off|turned off|shut down|"
    r"converted|ported|renamed|"
    r"decommissioned|dissolved|(?:has|have|was|were) been (?:deleted|removed|dropped)|"
    r"umgestellt|ersetzt|migriert|abgelöst|migramos|migrado|reemplazad[oa]s?|"
    r"sustituid[oa]s?)\b|已迁移|迁移到|改为|已替换|替换为|已升级|升级到|不再", re.I)
_CHANGE_NOUN = r"(?:migration|upgrade|reorg|reorganisation|reorganization|switchover|cutover)"
CHANGE_DONE = re.compile(
    rf"\b{_CHANGE_NOUN}\b.*\b(?:is|was|has been)\s+(?:complete|completed|finished|done)\b|"
    rf"\b(?:after|since|following)\s+the\s+(?:[\w-]+\s+){{0,3}}{_CHANGE_NOUN}\b|"
    rf"\b{_CHANGE_NOUN}\s+(?:complete|completed|finished|done)\b", re.I)
# Any mention of a change, done or not: a name in such a sentence is no endorsement of it
# ("bcrypt was replaced", "the bcrypt path has been deleted", "the Opsgenie sunset")
CHANGE = re.compile(
    rf"{CHANGED.pattern}|\b(?:{_CHANGE_NOUN}|sunset|deleted|removed|dropped|abandoned|"
    r"phased out|invalidated|reemplaz\w*|sustituid\w*)\b|迁移|替换", re.I)
# "from X to Y": what a change left behind (X) and what it moved to (Y)
TRANSITION = re.compile(r"\bfrom\s+([A-Z][\w.+#-]+)(?:\s+\w+){0,3}?\s+to\s+([A-Z][\w.+#-]+)")
# Cues that forbid what precedes them: "tab characters are not allowed", "... are sent back",
# "the lockfile stays out of version control"
PROHIBITED = re.compile(
    r"\b(?:(?:is|are|be|get|gets)\s+(?:not\s+(?:allowed|permitted|accepted|used)|"
    r"forbidden|prohibited|banned|rejected|refused|sent back)|"
    r"(?:should|must|will)\s+be\s+(?:rejected|refused|sent back)|"
    r"(?:stays?|remains?|(?:is|are)\s+kept)\s+out\s+of)\b"
    r"|\b(?:nicht\s+(?:erlaubt|zulässig|gestattet)|verboten|no\s+(?:está|están)\s+permitid[oa]s?|"
    r"prohibid[oa]s?)\b|不允许|不能使用", re.I)
# Cues that forbid the action that follows them ("never merges", "do not introduce") and cues
# that forbid the thing that follows them ("no tabs", "decided against mappers")
FORBIDS_ACTION = re.compile(
    r"\b(?:never|do not|don't|does not|doesn't|must not|mustn't|should not|shouldn't|"
    r"cannot|can't|avoid|nie|niemals|nunca|jamás|evita|evitar)\b|不要|禁止|不得|切勿", re.I)
FORBIDS_THING = re.compile(
    r"\b(?:no|not|against|instead of|rather than|nicht|kein|keine|keinen|statt|"
    r"anstatt|en lugar de)\b|不|没有", re.I)
# verbs that only carry their object: "do not introduce X" forbids X
LIGHT_VERBS = frozenset(terms("use add introduce write create put make have do take bring "
                              "commit push adopt rely depend start allow let"))
# the first word of every cue above: a set lookup spares most sentences the regexes
_CUE_WORDS = frozenset("""never do don't does doesn't must mustn't should shouldn't cannot can't
    avoid nie niemals nunca jamás evita evitar no not against instead rather nicht kein keine
    keinen statt anstatt en forbidden prohibited banned rejected refused sent out verboten
    prohibido prohibida prohibidos prohibidas""".split())
_CJK_CUES = ("不", "没有", "禁止", "切勿")
_SPLIT = re.compile(r"[^\w'’]+")


# any of the cues: one vocabulary of negation for every analyzer
NEGATION = re.compile("|".join(f"(?:{p.pattern})" for p in (PROHIBITED, FORBIDS_ACTION,
                                                            FORBIDS_THING)), re.I)
_CLAUSE = re.compile(r"[;:,()]|\s+(?:but|and then|while|whereas|aber|sondern|pero|sino)\s+|，|；")


def _may_forbid(sentence: str) -> bool:
    return (not _CUE_WORDS.isdisjoint(_SPLIT.split(sentence.lower()))
            or any(c in sentence for c in _CJK_CUES))


Prohibition = tuple[bool, tuple[str, ...], str]  # (is_action, terms in order, the clause)

# "not a git repository", "not the owner": a negated description, not a ban; "worse than no
# memory": a comparison
_DESCRIBES = re.compile(r"\s+(?:a|an|the)\b", re.I)
_COMPARES = re.compile(r"\bthan\s*$", re.I)


def _forbids(clause: str, cue: re.Match) -> bool:
    """Whether a "no"/"not" cue forbids what follows it."""
    if cue.group(0).lower() == "not" and _DESCRIBES.match(clause, cue.end()):
        return False
    return not _COMPARES.search(clause, 0, cue.start())


# a conditional clause states when something holds, it forbids nothing: "if there is no session
# cookie", "when no token is given", "unless nothing changed"
# ("si" not in capitals: "SI units" are no condition)
_CONDITION = re.compile(r"\b(?:if|when|whenever|unless|in case|wenn|falls|sofern|(?-i:[Ss]i)|"
                        r"cuando)\b[^,;:()\n.!?]*", re.I)


def prohibitions(sentence: str) -> list[Prohibition]:
    """What ``sentence`` forbids: (is_action, terms in order, clause) for each clause with a
    cue (the clause in its own words, to quote as evidence). The
    words after "never", "do not" (an action; a light verb such as "use" gives way to its
    object) or after "no", "against" (a thing), or the words before "are not allowed",
    "should be rejected" (a thing)."""
    out: list[Prohibition] = []
    if not _may_forbid(sentence):
        return out
    for clause in _CLAUSE.split(_CONDITION.sub(";", sentence)):
        if not clause or not clause.strip():
            continue
        action = False
        m = PROHIBITED.search(clause)
        if m:
            scope = terms(clause[:m.start()])[-4:]
        elif m := FORBIDS_ACTION.search(clause):
            scope = terms(clause[m.end():])
            action = bool(scope) and scope[0] not in LIGHT_VERBS
            scope = (scope if action else scope[1:])[:4]
        elif m := next((m for m in FORBIDS_THING.finditer(clause) if _forbids(clause, m)),
                       None):
            scope = terms(clause[m.end():])[:4]
        else:
            continue
        if scope:
            out.append((action, tuple(scope), clause.strip()))
    return out


def point_code(point: str) -> tuple[dict[str, str], set[str]]:
    """The code a memory's point names: what it prescribes (named outside any clause that
    forbids something), each with the sentence naming it, and what it names inside such a
    clause."""
    prescribed: dict[str, str] = {}
    forbidden: set[str] = set()
    for sentence in point.split("\n"):
        forbidden_here = {c.lower() for _, _, clause in prohibitions(sentence)
                          for c in INLINE_CODE.findall(clause)}
        forbidden |= forbidden_here
        for code in INLINE_CODE.findall(sentence):
            if code.lower() not in forbidden_here:
                prescribed.setdefault(code.lower(), sentence)
    return prescribed, forbidden


# A directive tells the reader what to do (a rule); a fact describes how things are. A newer
# memory recording a change makes an old fact stale, but contradicts an old rule.
IMPERATIVE = re.compile(
    r"^\s*(use|do|don't|never|always|keep|run|give|install|indent|format|prefer|avoid|ask|"
    r"write|put|store|make|add|set|send|call|retry|wrap|follow|name|mark|open|push|merge|"
    r"commit|deploy|release|no)\b", re.I)
DIRECTIVE = re.compile(rf"{IMPERATIVE.pattern}|\b(must|should|shall|may|never|always|only|"
                       r"required|not allowed|forbidden)\b", re.I)


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
    # every term of title, tags and body (the vector's terms, not a second set)
    all_terms: AbstractSet[str] = field(default_factory=set)
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

    @cached_property
    def subject(self) -> tuple[str, str] | None:
        """The modifier and head the title opens with ("Access tokens ..."), if it does."""
        return _subject_compound(self.memory.title)

    @cached_property
    def compounds(self) -> set[tuple[str, str]]:
        """Every pair of adjacent content words in the title and the prose ("access token",
        "refresh token"), stemmed; read when a title's compound meets another's (kinds)."""
        return compounds(self.memory.title + ".\n" + _prose(self.memory.body))

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
_CODE_BLOCK = re.compile(r"^```.*?^```", re.S | re.M)
_LINK = re.compile(r"\[[^\]\n]*\]\([^)\n]*\)")


def _prose(body: str) -> str:
    """``body`` without code blocks and links: a link's text ("see [Avoid X](x.md)") cites
    another memory, it does not forbid anything."""
    return _LINK.sub("", _CODE_BLOCK.sub("", body))


_TABLE_ROW = re.compile(r"^\s*\|.*$", re.M)


def _stated(prose: str) -> str:
    """The prose that states values: a table (of targets, of examples, of versions per
    platform) lists values side by side, none of them is the memory's one answer."""
    return _TABLE_ROW.sub("", prose)


# a code span may wrap onto the next line (markdown reads the line break as a space), never
# across a blank line
INLINE_CODE = re.compile(r"`([^`\n]+(?:\n[^`\n]+)*)`")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._/+-][A-Za-z0-9]+)*|\d+(?:[.,]\d+)*")
_SHAPED = re.compile(r"\d|[A-Z].*[A-Z]|[._/+]")


# dates say when something was written or decided, never what about: ISO dates, years, and
# the day next to a month's name ("30 June", "June 30"), looked for only when a month is named
_YEAR_OR_ISO = re.compile(r"(?:19|20)\d\d(?:-\d{1,2}-\d{1,2})?")  # digits first: fast to scan
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY_MONTH = re.compile(rf"\b\d{{1,2}}\.?\s+(?:{_MONTH})\b|\b(?:{_MONTH})\.?\s+\d{{1,2}}\b",
                        re.I)
_LOWER_WORD = re.compile(r"[a-zäöüéíóúñ]+")


def _not_in_a_number(m: re.Match) -> str:
    """A year or an ISO date, unless it is part of a longer number ("12024", "1.2024")."""
    s, a, b = m.string, m.start(), m.end()
    before, after = s[max(0, a - 2):a], s[b:b + 2]
    if before[-1:].isdigit() or (before[-1:] == "." and before[:1].isdigit()) \
            or after[:1].isdigit() or (after[:1] == "." and after[1:].isdigit()):
        return m.group(0)
    return " "


def _undated(text: str) -> str:
    text = _YEAR_OR_ISO.sub(_not_in_a_number, text)
    if MONTHS.isdisjoint(_LOWER_WORD.findall(text.lower())):
        return text
    return _DAY_MONTH.sub(" ", text)


def anchors(text: str, qs: list[Quantity]) -> set[str]:
    """Language-independent tokens of ``text``: every token of inline code, and the tokens
    outside it that hold a digit, two capitals or a separator (RFC, E501, UTC, docs/x.md),
    plus each quantity as dimension=value in its base unit."""
    text = _undated(text)
    out = {t.lower() for code in INLINE_CODE.findall(text) for t in _TOKEN.findall(code)
           if len(t) > 1}
    out.update(t.lower() for t in _TOKEN.findall(INLINE_CODE.sub(" ", text))
               if len(t) > 1 and _SHAPED.search(t))
    out.update(f"{q.dimension}={q.value:g}" for q in qs)
    return out


def anchor_overlap(a: Features, b: Features) -> tuple[float, set[str]]:
    """Jaccard similarity of two memories' anchors, and the anchors they share."""
    shared = a.anchors & b.anchors
    union = len(a.anchors | b.anchors)
    return (len(shared) / union if union else 0.0), shared


def records_change(sentence: str) -> bool:
    """A change recorded as done; an instruction ("Add a note that the repo has been retired")
    records none."""
    return (not IMPERATIVE.match(sentence)
            and bool(CHANGED.search(sentence) or CHANGE_DONE.search(sentence)))


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


def lead(title: str, prose_sentences: list[str]) -> list[str]:
    """A memory's point: its title and the first sentence of its prose. A memory that records
    a change says so there ("Paging moved from Opsgenie to PagerDuty"); a change mentioned
    further down a guide ("models trained on the 1.x API generate code that no longer works")
    is a detail of its subject, not a claim that another memory is out of date."""
    first = next((s for s in prose_sentences if not s.lstrip().startswith(("|", ">"))), "")
    return [title, first] if first else [title]


def split_sentences(text: str) -> list[str]:
    text = re.sub(r"^#.*$", "", text, flags=re.M)
    parts = re.split(r"(?<=[.!?。；;])\s+|\n\s*\n|(?<=[。！？])", text)
    return [" ".join(p.split()) for p in parts if p and p.strip()]


def build(memories: list[Memory],
          weights: Mapping[str, Mapping[str, float] | TermVector] | None = None,
          df: dict[str, int] | None = None, n: int | None = None,
          progress: Callable[[int, int], None] | None = None) -> dict[str, Features]:
    """Features of ``memories``. ``weights`` (BM25 term weights by memory id, as in the cache's
    postings: dicts or TermVectors) are computed when not given; ``df`` and ``n`` (document frequencies and store
    size) default to those of ``memories`` themselves. ``progress(done, total)`` is told
    after each memory (most of a full scan's time is spent here)."""
    if weights is None:
        weights = {m.id: posting_weights(m)[0] for m in memories}
    if df is None:
        df = Counter(t for w in weights.values() for t in w)
    corpus = Corpus(df, n or len(memories))
    n = (n or len(memories)) + 1
    out = {}
    for done, m in enumerate(memories):
        if progress is not None and done % 50 == 0:
            progress(done, len(memories))
        raw = weights.get(m.id, EMPTY)
        vec = [w * math.log(1 + n / df.get(t, 1)) for t, w in raw.items()]
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        # the raw weights' terms, in their order (a TermVector's tuple is shared, not copied)
        unit = TermVector(raw.terms if isinstance(raw, TermVector) else tuple(raw),
                          array("d", [v / norm for v in vec]))
        body = m.body
        prose = _prose(body)
        stated = _stated(prose)
        qs = quantities(stated)[:MAX_QUANTITIES]
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
        out[m.id] = Features(
            memory=m, vector=unit,
            all_terms=unit,  # the indexed terms: title, tags, folders, body
            title_terms=title_terms, quantities=qs,
            contexts=_contexts(stated, qs, title_terms),
            versions=versions(stated),
            title_prohibitions=prohibitions(m.title),
            prohibitions=[p for s in prose_sentences for p in prohibitions(s)],
            anchors=anchors(m.title + "\n" + prose, qs),
            named_contexts=contexts, choices=chosen, asks=asks(m.title) if chosen else set(),
            names=title_names | proper_names(body), title_names=title_names,
            roles=holders(point_text),
            changes=_changes(point),
            heading=heading, point=point_text, point_versions=versions(point_text),
            sections=len(_SECTION.findall(prose)), corpus=corpus)
    if progress is not None:
        progress(len(memories), len(memories))
    return out


# A person's name: two or three capitalised words ("Marta Ruiz", "Priya Raman")
# (a line break inside it is a wrapped line, a blank line ends it)
_PERSON = r"(?P<person>[A-Z][a-z'’-]+(?:[ \t]*\n?[ \t]+[A-Z][a-z'’-]+|\n[A-Z][a-z'’-]+){1,2})"
# a role: an acronym (DPO, DRI, CISO) or a noun phrase ending in a role noun ("Data Protection
# Officer", "release manager"), at most four words
_ROLE_NOUN = (r"officer|owner|lead|manager|maintainer|contact|approver|administrator|steward|"
              r"champion|coordinator|director|head|chair|sponsor|dri")
_ROLE = rf"(?P<role>[A-Z]{{2,5}}|(?:[\w-]+\s+){{0,3}}(?i:{_ROLE_NOUN}))"
_DETERMINER = r"(?:our|the|its|their)\s+(?:(?:appointed|designated|named|current|acting|sole)\s+)?"
# "Marta Ruiz is our appointed Data Protection Officer", "Priya acts as the release manager",
# "The person named as DPO in our policy is Tomasz Nowak", "Our DRI is Sam Lee"
_HOLDS = [
    re.compile(rf"{_PERSON}\s+(?:is|remains|(?:acts|serves)\s+as)\s+{_DETERMINER}{_ROLE}\b"),
    re.compile(rf"\b(?:[Tt]he|[Oo]ur)\s+(?:person|one)\s+(?:named|designated|appointed)\s+as"
               rf"\s+(?:(?:the|our|a)\s+)?{_ROLE}\b[^.;:]{{0,80}}?\bis\s+{_PERSON}"),
    re.compile(rf"\b(?:[Tt]he|[Oo]ur)\s+{_ROLE}\s+is\s+{_PERSON}"),
]


_QUALIFIED = re.compile(r"\s+(?:of|for|on|in|at|to)\b")


def _role_keys(role: str) -> set[str]:
    """What names one role: its words, an acronym, the initials of a capitalised phrase
    ("Data Protection Officer" is the DPO)."""
    words = role.split()
    keys = {" ".join(w.lower() for w in words)}
    if len(words) >= 2 and all(w[0].isupper() for w in words):
        keys.add("".join(w[0] for w in words).lower())
    return keys


def holders(text: str) -> dict[str, tuple[str, str]]:
    """The roles ``text`` (a memory's point: who holds a role is what such a memory is
    about) says a named person holds: {key: (person, role as written)} for every key of the
    role (_role_keys)."""
    out: dict[str, tuple[str, str]] = {}
    if " is " not in text and " as " not in text:
        return out
    for pattern in _HOLDS:
        for m in pattern.finditer(text):
            role = " ".join(m.group("role").split())
            # a bare "owner" or "lead" says nothing of what; "the tech lead of payments" is a
            # role of payments, to be compared only where payments is bound
            if (" " not in role and not role.isupper()) or (
                    m.end("role") == m.end() and _QUALIFIED.match(text, m.end())):
                continue
            for key in _role_keys(role):
                out.setdefault(key, (" ".join(m.group("person").split()), role))
    return out


_NAME = re.compile(r"(?<![\w.-])([A-Z][A-Za-z0-9.+#-]{2,})\b")
# what may come right before the first word of a sentence: the start, a full stop, a blank
# line, a list item's bullet, a heading's hashes; not a line break inside a paragraph (memories
# are often wrapped at 80 columns: "the contractor team at\nNordwave" names Nordwave)
_SENTENCE_START = re.compile(r"(^|[.!?:]\s+|\n[ \t]*\n\s*|\n[ \t]*(?:[-*+>]|\d+[.)]|#+)[ \t]+)$")


def proper_names(text: str) -> set[str]:
    """Proper names (products, teams, people): capitalised words that are not just the first
    word of a sentence, unless they look like a name anyway (RabbitMQ, ADR-12, PostgreSQL)."""
    out = set()
    for m in _NAME.finditer(text):
        word = m.group(1).rstrip(".")
        shaped = any(c.isupper() or c.isdigit() for c in word[1:])
        if shaped or not _SENTENCE_START.search(text[max(0, m.start() - 8):m.start()]):
            if word.lower() not in STOPWORDS:
                out.add(word.lower())
    return out


# a title that describes a document by what it is for or when it applies: "Cursor rules for
# Angular development", "vite best practices", "Use this agent when building Vue 3 applications"
_DOCUMENT = ("rules|guidelines|guidance|instructions|conventions|best practices|standards|"
             "principles|guide|checklist|recommendations")
_DOCUMENT_FOR = re.compile(rf"\b(?:{_DOCUMENT}|setup)\s+(?:for|on|of|in|when)\b", re.I)
_DOCUMENT_END = re.compile(rf"\b(?:{_DOCUMENT})\W*$", re.I)
_USE_WHEN = re.compile(r"^use\s+(?:this\s+\w+\s+)?when\b", re.I)
# a title that speaks of its own document: "This file provides guidance on building Go
# applications" (not "This repository uses Conventional Commits", a rule)
_SELF_DESCRIBED = re.compile(r"^(?:this|these)\s+(?:files?|documents?|docs?|guides?|pages?|notes?|"
                             r"instructions|skills?)\s+(?:provides?|describes?|contains?|"
                             r"explains?|covers?|gives?|offers?|outlines?|lists?|collects?)\b",
                             re.I)
# the little words of a noun phrase; any other ("is", "must", "use", "should") makes a sentence
_PHRASE_WORDS = frozenset("a an the and or for on of in when with to using via into from by "
                          "at".split())


def _describes_document(title: str) -> bool:
    """A title that names a document rather than stating a rule. "Rules for commits: use squash
    merges" and "Docstrings follow the NumPy style guide" are sentences; "Python best
    practices" and "Checklist for changing the database schema" are not."""
    if _USE_WHEN.search(title) or _SELF_DESCRIBED.search(title):
        return True
    if DIRECTIVE.search(title):
        return False
    little = STOPWORDS.intersection(re.findall(r"\w+", title.lower()))
    if _DOCUMENT_END.search(title) and not little - {"and", "or"}:  # "vite best practices"
        return True
    return bool(_DOCUMENT_FOR.search(title)) and not little - _PHRASE_WORDS


def is_heading(title: str) -> bool:
    """A Title Case title ("Vue 3 Development Instructions", "Power BI Security Best
    Practices") or one describing a document ("Cursor rules for Vue 3 with Nuxt") names a
    topic; a sentence-case statement ("Passwords are hashed with bcrypt") makes a claim."""
    if _describes_document(title):
        return True
    long_words = [w for w in re.findall(r"[^\W\d_]{4,}", title) if w.lower() not in STOPWORDS]
    return len(long_words) >= 2 and all(w[0].isupper() for w in long_words)


def names_its_file(title: str, path: str) -> bool:
    """A title that only repeats the file's name ("react mobx cursorrules prompt file" in
    react-mobx-cursorrules-prompt-file.md, as imported documents get) names a topic, unless it
    reads as a sentence: a file named after its statement ("postgres_is_the_database.md",
    "use_uuid_keys.md") still states it."""
    words = re.sub(r"[\W_]+", " ", title).lower().split()
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return (words == re.sub(r"[\W_]+", " ", stem).lower().split()
            and not STOPWORDS.intersection(words) and not DIRECTIVE.search(title))


def title_proper_names(title: str) -> set[str]:
    """Proper names in a title. In a heading a capital says nothing, so only words shaped like
    names count (PostgreSQL, C#, ADR-12)."""
    if is_heading(title):
        return {n for n in proper_names(title) if _shaped(n, title)}
    return proper_names(title)


def _shaped(name: str, text: str) -> bool:
    """Whether ``name`` is written in ``text`` with a capital or digit after its first letter."""
    m = re.search(rf"(?<![\w.-]){re.escape(name)}\b", text, re.I)
    word = m.group(0) if m else name
    return any(c.isupper() or c.isdigit() for c in word[1:]) or not word.isalnum()


# where a sentence ends: its full stop, a blank line, a list item or a heading; not a line
# break inside a paragraph (memories are markdown, often wrapped at 80 columns)
_SENTENCE_BREAK = re.compile(r"[.!?](?:\s|$)|\n\s*(?:\n|[-*+]\s|\d+[.)]\s|#)")


# a "sentence" longer than this either side of a value is a run-on text (a pasted log, a list
# of figures without full stops): the words near the value are its context
CONTEXT_CHARS = 300


def _contexts(text: str, qs: list[Quantity], title_terms: set[str]) -> list[set[str]]:
    """The terms of the sentence each quantity of ``text`` is said in, with the title's. Each
    sentence is read once, however many values it holds."""
    breaks = [(m.start(), m.end()) for m in _SENTENCE_BREAK.finditer(text)]
    starts, ends = [b[0] for b in breaks], [b[1] for b in breaks]
    read: dict[tuple[int, int], set[str]] = {}
    out = []
    for q in qs:
        i = bisect.bisect_right(ends, q.start) - 1
        j = bisect.bisect_left(starts, q.start)
        span = (ends[i] if i >= 0 else 0, starts[j] if j < len(starts) else len(text))
        if span[1] - span[0] > 2 * CONTEXT_CHARS:
            span = (max(span[0], q.start - CONTEXT_CHARS), min(span[1], q.start + CONTEXT_CHARS))
        if span not in read:
            read[span] = set(terms(text[span[0]:span[1]])) | title_terms
        out.append(read[span])
    return out


def parallel(a: Features, b: Features) -> bool:
    """Two topic headings each naming a subject the other memory never mentions ("CentOS
    Administration Guidelines", "Fedora Administration Guidelines"): parallel documents for two
    subjects, however alike their advice is worded."""
    if not (a.heading and b.heading):
        return False
    only_a = a.corpus.specific(a.title_terms - b.all_terms)
    only_b = b.corpus.specific(b.title_terms - a.all_terms)
    return bool(only_a and only_b)


# a compound's words: letters only, so that "15 minutes" and "30 minutes" are values of one
# thing, not two kinds of minutes; a comma or a full stop ends a compound, a line break does not
# (prose is wrapped at 80 columns)
_COMPOUND_WORD = re.compile(r"[^\W\d_]{3,}|[^\w\s-]|\b\w+\b")


def compounds(text: str) -> set[tuple[str, str]]:
    """Adjacent pairs of content words of ``text``, stemmed: a modifier and its head noun
    ("access tokens" -> ("access", "token")) among others ("tokens last")."""
    out = set()
    previous = None
    for token in _COMPOUND_WORD.findall(text.lower()):
        word = token if len(token) >= 3 and token.isalpha() and token not in STOPWORDS else None
        if previous and word:
            out.add((stem(previous), stem(word)))
        previous = word
    return out


_ARTICLES = {"the", "a", "an", "our", "your", "its", "their"}


def _subject_compound(title: str) -> tuple[str, str] | None:
    """The two words a title opens with, past an article, when both are content words: the
    noun phrase a statement is about ("Access tokens are valid for 15 minutes", "The
    technician app is built with Expo"); a question opens otherwise ("How to track technical
    debt")."""
    tokens = _COMPOUND_WORD.findall(title.lower())
    if tokens and tokens[0] in _ARTICLES:
        tokens.pop(0)
    found = compounds(" ".join(tokens[:2]))
    return next(iter(found), None)


def kinds(a: Features, b: Features) -> tuple[str, str] | None:
    """Two kinds of one thing, each the subject of its title: "Access tokens are valid for 15
    minutes" and "Refresh tokens last 30 days" open with the same head ("tokens") under
    different modifiers, and one of the memories names both kinds ("a new access token and a
    new refresh token"), so its author holds them apart. Their values, rules and wording are
    about different things. Two modifiers that are one kind under two names ("JWT tokens",
    "access tokens") are not apart unless a memory names both."""
    x, y = a.subject, b.subject
    if not (x and y) or x[1] != y[1] or x[0] == y[0]:
        return None
    if y[0] in a.title_terms or x[0] in b.title_terms:
        return None
    if y in a.compounds or x in b.compounds:
        return " ".join(x), " ".join(y)
    return None


# a memory that knows the general rule and departs from it on purpose: "avatars should be small
# regardless of the general request ceiling", "this job overrides the default timeout", "an
# exception to the company-wide retention". Not "instead of" or "rather than": "use aiohttp
# instead of the default httpx" replaces an answer, it does not carve out a case
_EXCEPTION = re.compile(
    r"\b(?:regardless\s+of|unlike|(?:an\s+)?exception\s+to|overrid(?:es?|ing)|"
    r"deviat(?:es?|ing)\s+from|despite)\s+(?:the|our|its|their|any)?\s*"
    r"(?:general|default|global|usual|standard|normal|(?:company|team|platform|org)-wide)"
    r"\s+((?:[\w-]+\s+){0,2}[\w-]+)", re.I)


def exception_to(a: Features, b: Features) -> str | None:
    """What ``a`` says it departs from on purpose, when that is ``b``'s point: a general rule
    named in words specific in the store that ``b``'s point says ("regardless of the general
    request ceiling" against "Public API accepts request bodies up to 5 MB"). A specific rule
    that knows the general one and overrides it does not contradict it."""
    point = set(terms(b.point))
    for m in _EXCEPTION.finditer(_prose(a.memory.body)):
        if a.corpus.specific(set(terms(m.group(1))) & point):
            return m.group(0)
    return None


NEAR_COPY = 0.9  # two memories this similar are copies of one text, whatever their titles say
GUIDE_SECTIONS = 3  # a memory with this many headings in its body is a guide of many rules


def guides(a: Features, b: Features) -> bool:
    """Two guides of several sections each: two rule books for one library or two agents for one
    field share much of their words, names and values by nature (the analyzers ask more of
    them: a near copy to be duplicates, a prohibition in a title to contradict)."""
    return min(a.sections, b.sections) >= GUIDE_SECTIONS


def cosine(a: Features, b: Features, a_weights: dict[str, float] | None = None) -> float:
    """The cosine of two memories' vectors (unit length: their dot product). ``a_weights``:
    ``a.vector.lookup()``, for a caller that compares ``a`` with many others."""
    if len(a.vector) > len(b.vector):
        return b.vector.dot(a.vector if a_weights is None else a_weights)
    return a.vector.dot(b.vector)


def tag_jaccard(a: Features, b: Features) -> float:
    x, y = set(a.memory.tags), set(b.memory.tags)
    return len(x & y) / len(x | y) if x | y else 0.0
