"""Value change: the same subject given different numbers, durations, sizes, versions or names.

Units are normalised first (quantities.py), so 3600 seconds equals one hour and 20,000,000
bytes differs from 5 MB. A dimension only counts when both memories state it and no value of
one matches a value of the other; counts are bound to their noun ("3 projects", "five
projects"). Names count when both titles say the same thing about different people or products
that the other memory never mentions, or when the two say that different people hold one role
("Marta Ruiz is our appointed Data Protection Officer", "the person named as DPO ... is Tomasz
Nowak": an acronym is the initials of the capitalised role). A memory that says it departs
from the other's rule on purpose ("regardless of the general request ceiling") makes an
exception, not a contradiction.
"""

from __future__ import annotations

import re

from dmm.conflicts.analyzers.base import ScanContext
from dmm.conflicts.pairs import exception_to, guides
from dmm.conflicts.model import Candidate
from dmm.conflicts.quantities import same_value
from dmm.conflicts.synonyms import canonical
from dmm.text.analyze import stem, terms

NAME = "value_change"


def _in_title(f, text: str) -> bool:
    return text.split()[0] in f.memory.title


_NEWEST = (10**9,)  # the top of an open range: "Node.js 18.0 or later" admits 22


def _said_version(name: str, lo: tuple[int, ...], hi: tuple[int, ...]) -> str:
    """A version range as the evidence quotes it: "node 22", "node 18.0 or later"."""
    if hi == _NEWEST:
        return f"{name} {'.'.join(map(str, lo))} or later"
    return f"{name} {'.'.join(map(str, hi))}"


def _version_range(f, name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The lowest and highest version of ``name`` the point states; a lower bound ("18.0 or
    later") leaves the range open."""
    said = [v for v in f.point_versions if v.name == name]
    found = sorted(tuple(int(x) for x in v.version.split(".")) for v in said)
    return found[0], _NEWEST if any(v.or_later for v in said) else found[-1]


_FOR = re.compile(r"\bfor\s+([^,;:()]+)", re.I)
_WORD = re.compile(r"[\w.+#-]+")  # a name as proper_names reads it (GOV.UK, C#, Next.js)


def _named(f) -> set[str]:
    """Names in the title, but for those it is *for* ("Rotate the Fastly token for the
    Prometheus exporter": the exporter is where the rule applies, not its answer); with a digit
    a name is a number (ADR-12, S3), compared as such."""
    context = {w.rstrip(".") for w in _WORD.findall(" ".join(_FOR.findall(f.memory.title)).lower())}
    return {n for n in f.title_names if not any(c.isdigit() for c in n) and n not in context}


def _other_names(fa, fb) -> tuple[str, str] | None:
    """Different names for the same subject: both titles name someone or something the other
    memory never mentions, and say the same about it otherwise ("Priya Raman is the DRI for
    the payments database schema", "Tomasz Kowalczyk approves schema changes in the payments
    database")."""
    only_a = {n for n in _named(fa) if n not in fb.names and stem(n) not in fb.all_terms}
    only_b = {n for n in _named(fb) if n not in fa.names and stem(n) not in fa.all_terms}
    if not (only_a and only_b):
        return None
    named = {stem(n) for n in fa.title_names | fb.title_names}
    rest_a, rest_b = fa.title_terms - named, fb.title_terms - named
    # what both titles say besides the names must be specific to them in this store: two
    # titles of a template ("X Development Best Practices") say the same about every stack
    shared = fa.corpus.specific(rest_a & rest_b)
    if len(shared) >= 2 and 2 * len(shared) >= min(len(rest_a), len(rest_b)):
        return " ".join(sorted(only_a)), " ".join(sorted(only_b))
    return None


def _other_holders(fa, fb) -> tuple[str, str] | None:
    """One role, two people: each memory's point says someone holds it ("Marta Ruiz is our
    appointed Data Protection Officer", "The person named as DPO ... is Tomasz Nowak") whom the
    other memory never mentions."""
    for key in sorted(fa.roles.keys() & fb.roles.keys()):
        (x, role_x), (y, role_y) = fa.roles[key], fb.roles[key]
        if x.lower() not in fb.memory.content.lower() and \
                y.lower() not in fa.memory.content.lower():
            return f"{x} ({role_x})", f"{y} ({role_y})"
    return None


def _title_quantities(f, titled: dict) -> list:
    """The quantities ``f``'s title states (kept in ``titled``, by memory id, for the scan)."""
    if f.id not in titled:
        titled[f.id] = [q for q in f.quantities if _in_title(f, q.text)]
    return titled[f.id]


def _said(q) -> set[str]:
    """The terms of a value that say how much, not of what: "25 MB" -> "25", "mb"; of "3
    projects" only "3" (what is counted is the subject)."""
    counted = q.dimension.removeprefix("count:") if q.dimension.startswith("count:") else None
    return {t for t in terms(q.text) if canonical(t) != counted}


def _titled(f, q, titled: dict) -> bool:
    """Whether ``q`` is a value ``f``'s title states (in any spelling: "10,485,760 bytes" in
    the title, "10485760 bytes" in the body)."""
    return any(t.dimension == q.dimension and same_value(t.value, q.value)
               for t in _title_quantities(f, titled))


def _subject_words(fa, fb, titled: dict) -> set[str]:
    """The title words two memories share that name their subject: specific to them in the
    store, and not the values themselves ("30 days" in both titles is no shared subject)."""
    said = _title_quantities(fa, titled) + _title_quantities(fb, titled)
    values = set(terms(" ".join(q.text for q in said)))
    return fa.corpus.specific(fa.title_terms & fb.title_terms) - values


def _title_values(fa, fb, titled: dict) -> tuple[str, str] | None:
    """Both titles state a value of one dimension and share two words besides, and no value of
    one title is a value of the other: the point of each memory is a different value, whatever
    details their bodies share ("两位审阅者批准" vs "一位维护者批准")."""
    if len(_subject_words(fa, fb, titled)) < 2:
        return None
    xa, xb = _title_quantities(fa, titled), _title_quantities(fb, titled)
    for x in xa:
        ys = [y for y in xb if y.dimension == x.dimension]
        xs = [v for v in xa if v.dimension == x.dimension]
        if ys and not any(same_value(v.value, y.value) for v in xs for y in ys):
            return x.text, ys[0].text
    return None


def _title_agreement(fa, fb, titled: dict) -> tuple[str, str] | None:
    """Both titles state the same value of one dimension and share two words specific to them
    in the store: one rule said twice ("every 30 seconds", "twice a minute"). Without the
    shared words a value is no subject ("backups kept for 30 days", "tokens valid for 30
    days")."""
    if len(_subject_words(fa, fb, titled)) < 2:
        return None
    for x in _title_quantities(fa, titled):
        for y in _title_quantities(fb, titled):
            if y.dimension == x.dimension and same_value(x.value, y.value):
                return x.text, y.text
    return None


def _said_in(f, text: str) -> bool:
    """Whether ``text`` (a value, a version or names) is said in ``f``'s point."""
    point = f.point.lower()
    return all(word in point for word in text.lower().split())


def analyze(ctx: ScanContext) -> list[Candidate]:
    floor = ctx.config["value_similarity"]
    titled: dict[str, list] = {}  # quantities each title states, by memory id
    out = []
    for a, b, sim in ctx.pairs:
        fa, fb = ctx.features[a], ctx.features[b]
        in_titles = _title_values(fa, fb, titled)
        # below the floor only values both titles state are compared: each memory's point
        titles_only = sim < floor and not in_titles
        if titles_only and not (_title_quantities(fa, titled) and _title_quantities(fb, titled)):
            continue
        differing, agreeing = [in_titles] if in_titles else [], []
        for dim in {q.dimension for q in fa.quantities} & {q.dimension for q in fb.quantities}:
            qa = [(q, c) for q, c in zip(fa.quantities, fa.contexts) if q.dimension == dim]
            qb = [(q, c) for q, c in zip(fb.quantities, fb.contexts) if q.dimension == dim]
            if any(same_value(x.value, y.value) for x, _ in qa for y, _ in qb):
                agreeing.append(dim)
                continue
            # bind the subject: the two values must be said about shared words, and one of
            # them must be the point of its memory (in the title) unless the pair is close
            if titles_only:  # the title's values, wherever the body says them again
                qa = [(q, c) for q, c in qa if _titled(fa, q, titled)]
                qb = [(q, c) for q, c in qb if _titled(fb, q, titled)]
            for x, cx in qa:
                # the values' own words ("MB", "days") say how much, not of what
                cx = cx - _said(x)
                y, cy = next(((y, cy) for y, cy in qb if len(fa.corpus.specific(
                    cx & cy - _said(y))) >= 2), (None, None))
                if y is not None and (sim >= 0.3 or _in_title(fa, x.text)
                                      or _in_title(fb, y.text)):
                    differing.append((x.text, y.text))
                    break
        # a version is each memory's answer when both say it up front ("We run Django 3.2",
        # "Django upgrade to 5.2 is complete"); a guide that cites versions further down (Java
        # 17 in an example, C# 13 features) states no policy about them
        # two topic headings of versions ("Guidance for upgrades to Rails 8.0", "... 8.1") are
        # documents for two versions, as headings for two stacks are
        names = (set() if (fa.heading and fb.heading) or titles_only else
                 {v.name for v in fa.point_versions} & {v.name for v in fb.point_versions})
        for name in sorted(names):
            lo_a, hi_a = _version_range(fa, name)
            lo_b, hi_b = _version_range(fb, name)
            if hi_a < lo_b or hi_b < lo_a:  # no version in common, ranges included
                differing.append((_said_version(name, lo_a, hi_a),
                                  _said_version(name, lo_b, hi_b)))
        if not differing and not titles_only and (
                named := _other_names(fa, fb) or _other_holders(fa, fb)):
            differing.append(named)
        if differing and (exception_to(fa, fb) or exception_to(fb, fa)):
            continue  # a specific rule that overrides the general one on purpose
        if differing:
            x, y = differing[0]
            score = min(0.9, 0.45 + sim + 0.1 * (len(differing) - 1))
            on_point = max((_said_in(fa, x) + _said_in(fb, y)) / 2 for x, y in differing)
            out.append(Candidate(a, b, NAME, "contradictory", score,
                                 f"different values: {x!r} vs {y!r}", (x, y), on_point))
        elif same := _title_agreement(fa, fb, titled):
            out.append(Candidate(a, b, NAME, "duplicate", min(0.9, 0.45 + sim),
                                 f"the same value in both titles: {same[0]!r} = {same[1]!r}",
                                 same, on_point=1.0))
        elif (agreeing and sim >= ctx.config["duplicate_similarity"] * 0.6
              and not guides(fa, fb)):
            texts = sorted({q.text for q in fa.quantities if q.dimension in agreeing})
            out.append(Candidate(a, b, NAME, "duplicate", 0.3,
                                 f"the same values ({', '.join(texts[:4])})"))
    return out
