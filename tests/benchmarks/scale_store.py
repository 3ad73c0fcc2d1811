"""Generate a store shaped like a real one at any size, for the scale benchmark (bench_scale.py).

`generate.py` writes memories of one shape (about 220 words of templated sentences each):
right for timing a query, wrong for counting conflicts, since a scan of such a store reports
what random text shares (43,244 "conflicts" at 50,000 memories, most of them duplicates and
scope overlaps). Real stores, by the seeds and the shared sets, have this shape instead:

- **families**: most memories are about one component of the project ("the ledger-sync
  worker", "the Tessaro gateway") and a component has several memories written over months,
  each about one facet (its timeout, where it keeps its state, a practice); they agree;
- **short rules** (one to three sentences) are the bulk, **notes** of a few paragraphs next,
  **long guides** (several headed sections, 800-1,600 words) a tenth;
- **near-duplicates**: an agent writes a rule again in other words, or a copy is kept in
  another folder (about 3 in 100);
- **real contradictions**: a few facets are stated twice with different answers (a timeout
  raised in one memory and not in the other, Postgres in one and Redis in the other, "always"
  against "never"): about 1 in 12 families holds one;
- deprecated memories (about 1 in 10), which scans leave alone.

So the conflicts a full scan finds should be about the planted near-duplicates plus the
planted contradictions (``expected_conflicts``) and not grow with what random words share.

    python tests/benchmarks/scale_store.py DEST_MEMORY_DIR --count 10000 [--seed 11]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from generate import ADJS, AREAS, NOUNS, TOOLS, VERBS, _zipf_choice

SYLLABLES = ("ka ro ve tes sa lin mor dak quin bel tor fen gar hul is mer nov pel rask sil "
             "tam ur vid wex yor zen bra cul dro fal").split()
ROLES = ("worker", "gateway", "service", "exporter", "scheduler", "importer", "proxy",
         "indexer", "webhook", "sync job")
# the facets a component's memories talk about, each with a template for the statement and
# the answers it can take (a contradiction states one facet twice with two answers)
FACETS = {
    "timeout": (["The {name} {role} waits at most {value} seconds for the {noun} before it "
                 "gives up and records the failure.",
                 "A {noun} call from the {name} {role} times out after {value} seconds.",
                 "Give the {name} {role} {value} seconds to answer; after that its caller "
                 "treats the {noun} as lost."], [5, 10, 15, 30, 45, 60, 90, 120]),
    "retries": (["The {name} {role} retries a failed {noun} {value} times with exponential "
                 "backoff before it alerts the {area} on-call.",
                 "A failed {noun} in the {name} {role} is tried {value} times, then parked "
                 "for a person."], [2, 3, 4, 5, 6, 8, 10]),
    "store": (["The {name} {role} keeps its {noun} state in {value}; nothing else may write "
               "to it.",
               "{value} holds everything the {name} {role} remembers between runs."],
              ["Postgres", "Redis", "DynamoDB", "SQLite", "Cassandra"]),
    "queue": (["Jobs for the {name} {role} go through {value}, never through direct calls.",
               "Work reaches the {name} {role} through {value}."],
              ["Kafka", "RabbitMQ", "SQS", "Celery", "NATS"]),
    "practice": (["{value} run the {name} {role} migrations by hand in production; the "
                  "deploy pipeline applies them."], ["Never", "Always"]),
    "owner": (["The {name} {role} is owned by the {value} team, who review every change to "
               "it.", "Changes to the {name} {role} need a review from the {value} team."],
              ["platform", "payments", "growth", "infrastructure", "data", "identity"]),
    "language": (["The {name} {role} is written in {value} and follows the {area} style "
                  "guide.", "We build the {name} {role} in {value}."],
                 ["Go", "Python", "Rust", "Kotlin", "TypeScript", "Java"]),
    "retention": (["The {name} {role} keeps its logs for {value} days before they are "
                   "archived.", "Logs of the {name} {role} are archived after {value} days."],
                  [7, 14, 30, 60, 90, 180, 365]),
    "pager": (["Alerts from the {name} {role} page {value}, not the whole {area} channel.",
               "When the {name} {role} is down, {value} gets the page."],
              ["PagerDuty", "Opsgenie", "the on-call phone", "Grafana OnCall"]),
    "deploy": (["The {name} {role} is deployed with {value} from the main branch only.",
                "{value} ships the {name} {role} to production."],
               ["Helm", "Terraform", "Argo CD", "Spinnaker", "Nomad"]),
}
MIX = {"rule": 0.50, "note": 0.30, "guide": 0.10, "duplicate": 0.03, "loose": 0.07}
CONTRADICTION_RATE = 1 / 12  # families holding one real contradiction
DEPRECATED_RATE = 0.10


@dataclass
class Family:
    name: str  # a made-up component name: a word specific to this family, as real ones are
    role: str
    area: str
    scope: str  # a component's memories live together (one team, one folder)
    answers: dict[str, object]  # facet -> the answer its memories agree on
    plan: list[tuple[str, bool]]  # the facets its memories state, in turn (True: wrongly)
    contradicted: str | None = None  # the facet one memory answers differently
    stated: dict[str, bool] = field(default_factory=dict)  # facet -> stated in an active one


@dataclass
class Stats:
    memories: int = 0
    families: int = 0
    contradictions: int = 0  # contradictions written into active memories
    duplicates: int = 0  # near-duplicates of an active memory, active themselves
    kinds: dict[str, int] = field(default_factory=dict)

    def expected_conflicts(self) -> int:
        return self.contradictions + self.duplicates


def _name(rng: random.Random, used: set[str]) -> str:
    """A component name no other family has (two components never share a name)."""
    while True:
        name = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if name not in used:
            used.add(name)
            return name


def _family(rng: random.Random, used: set[str]) -> Family:
    answers = {f: rng.choice(values) for f, (_, values) in FACETS.items()}
    # each memory of a family says something else about the component (a facet said twice
    # with the same answer would be a real duplicate, which the near-copies below plant)
    facets = rng.sample(list(FACETS), k=rng.randint(3, 7))
    plan = [(f, False) for f in facets]
    contradicted = None
    if rng.random() < CONTRADICTION_RATE:
        contradicted = facets[0]  # said first, said otherwise later
        plan.insert(rng.randint(1, len(plan)), (contradicted, True))
    scope = rng.choices(["project", "global", "agent"], [0.75, 0.15, 0.10])[0]
    return Family(_name(rng, used).capitalize(), rng.choice(ROLES), rng.choice(AREAS), scope,
                  answers, plan, contradicted)


def _statement(rng: random.Random, fam: Family, facet: str, wrong: bool = False) -> str:
    templates, values = FACETS[facet]
    template = rng.choice(templates)
    value = fam.answers[facet]
    if wrong:
        value = rng.choice([v for v in values if v != value])
    return template.format(name=fam.name, role=fam.role, value=value, area=fam.area,
                           noun=NOUNS[zlib.crc32((fam.name + facet).encode()) % 20])


# background prose: why a rule exists, where to look, who decided; neutral statements of
# the kind that surround rules in real memories (no values, no prohibitions of their own)
PROSE = (
    "This came up during the {noun} incident in {month}, when the {tool} {noun2} fell behind.",
    "The {area} runbook has the {noun} dashboards and the queries we use to check it.",
    "Ask in the #{area} channel before changing this; the {noun2} owners want to know.",
    "The decision record for this is in the {area} wiki, next to the {tool} notes.",
    "We looked at {tool} and {tool2} for the {noun} and kept the simpler one.",
    "New engineers trip over this in their first week, so the onboarding guide links here.",
    "The {noun} metrics in {tool} show whether it holds; the {noun2} panel is the one to watch.",
    "Most of the {noun} code lives in the {area} package, with the {noun2} helpers beside it.",
    "The history is in the {month} retrospective of the {area} team.",
    "Load tests of the {noun2} path run nightly against a copy of the {noun} data.",
    "When in doubt, read how the {noun} handler does it and do the same.",
    "The {tool} client wraps the {noun} calls; use it rather than raw requests.",
)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")


def _filler(rng: random.Random, area: str, words: int, numbers: bool = False) -> list[str]:
    """Sentences of background prose (why, where to look), as notes and guides carry;
    ``numbers``: the older generator's templated rules instead, limits and prohibitions
    included (a loose memory: a one-off rule about no component)."""
    from generate import TEMPLATES, UNITS

    templates = TEMPLATES if numbers else PROSE
    out, n = [], 0
    while n < words:
        s = rng.choice(templates).format(
            noun=_zipf_choice(rng, NOUNS), noun2=_zipf_choice(rng, NOUNS),
            noun3=_zipf_choice(rng, NOUNS), verb=_zipf_choice(rng, VERBS),
            adj=_zipf_choice(rng, ADJS), tool=_zipf_choice(rng, TOOLS),
            tool2=_zipf_choice(rng, TOOLS), area=area, num=rng.randint(2, 900),
            unit=rng.choice(UNITS), month=rng.choice(MONTHS))
        out.append(s)
        n += len(s.split())
    return out


def _paragraphs(sentences: list[str], per: int = 3) -> str:
    return "\n\n".join(" ".join(sentences[i:i + per]) for i in range(0, len(sentences), per))


def _rule(rng, fam: Family, facet: str, wrong: bool) -> tuple[str, str]:
    lead = _statement(rng, fam, facet, wrong)
    title = lead.split(";")[0].split(",")[0].rstrip(".")
    extra = _filler(rng, fam.area, rng.randint(15, 45))
    return title, " ".join([lead, *extra])


def _note(rng, fam: Family, facet: str, wrong: bool) -> tuple[str, str]:
    lead = _statement(rng, fam, facet, wrong)
    title = f"How the {fam.name} {fam.role} handles its {facet}"
    return title, lead + "\n\n" + _paragraphs(_filler(rng, fam.area, rng.randint(120, 260)))


def _guide(rng, fam: Family) -> tuple[str, str]:
    """A guide to a component: a section per facet (its agreed answers) and background."""
    sections = []
    agreed = [f for f in FACETS if f != fam.contradicted]
    for facet in rng.sample(agreed, k=rng.randint(3, 5)):
        body = _statement(rng, fam, facet) + " " + _paragraphs(
            _filler(rng, fam.area, rng.randint(150, 300)))
        sections.append(f"## {facet.capitalize()}\n\n{body}")
    title = f"{fam.name} {fam.role} operations guide"
    return title, "\n\n".join(sections)


def _loose(rng, area: str) -> tuple[str, str]:
    """A memory about no component (a team habit, a one-off fact)."""
    sentences = _filler(rng, area, rng.randint(30, 200), numbers=True)
    title = sentences[0].split(",")[0].split(";")[0].rstrip(".")
    return title, _paragraphs(sentences)


def _reword(rng, text: str) -> str:
    """A near-copy: the same statements with a few words changed, as an agent rewrites."""
    words = text.split(" ")
    for _ in range(max(1, len(words) // 25)):
        i = rng.randrange(len(words))
        if words[i].isalpha() and words[i].islower():
            words[i] = rng.choice(["really", "also", "just", "still", "always"]) + " " + words[i]
    return " ".join(words)


def _file(mem_id: str, title: str, body: str, tags: list[str], scope: str, status: str,
          created: dt.date, rng: random.Random) -> str:
    return (f"---\nid: {mem_id}\ntags: [{', '.join(sorted(set(tags)))}]\nscope: {scope}\n"
            f"priority: {rng.choice([0.3, 0.5, 0.6, 0.7, 0.8, 0.9])}\n"
            f"confidence: {rng.choice(['active', 'active', 'stable', 'experimental'])}\n"
            f"status: {status}\ncreated: {created.isoformat()}\n---\n\n# {title}\n\n{body}\n")


def generate(dest: Path, count: int, seed: int = 11) -> Stats:
    """Write ``count`` memories under ``dest`` (a .dmm/memory folder); what was planted."""
    rng = random.Random(seed)
    stats = Stats(kinds={k: 0 for k in MIX})
    open_families: list[Family] = []  # families with facets left to state
    families = 0
    names: set[str] = set()
    written: list[tuple[str, str, Family | None, str, bool]] = []  # title, body, family, scope, active
    start = dt.date(2024, 1, 1)
    for n in range(count):
        kind = rng.choices(list(MIX), list(MIX.values()))[0]
        if kind == "duplicate" and not written:
            kind = "rule"
        fam = None
        if kind in ("rule", "note", "guide"):
            # a component's memories are written over months, between others' (a window of
            # open families), until it has said what it has to say
            if len(open_families) < 40 or rng.random() < 0.02:
                open_families.append(_family(rng, names))
                families += 1
            fam = rng.choice(open_families)
        active = rng.random() >= DEPRECATED_RATE
        scope = fam.scope if fam else rng.choices(
            ["project", "global", "agent", "ephemeral", "baseline"],
            [0.6, 0.15, 0.1, 0.14, 0.01])[0]
        if kind == "duplicate":
            title, body, fam, scope, source_active = rng.choice(written[-2000:])
            title, body = _reword(rng, title), _reword(rng, body)
            stats.duplicates += active and source_active
        elif kind == "loose":
            title, body = _loose(rng, rng.choice(AREAS))
        elif kind == "guide":
            title, body = _guide(rng, fam)
        else:
            facet, wrong = fam.plan.pop(0)
            if not fam.plan:
                open_families.remove(fam)
            if wrong and active and fam.stated.get(facet):
                stats.contradictions += 1
            fam.stated[facet] = fam.stated.get(facet, False) or (active and not wrong)
            title, body = (_rule if kind == "rule" else _note)(rng, fam, facet, wrong)
        stats.kinds[kind] += 1
        area = fam.area if fam else rng.choice(AREAS)
        created = start + dt.timedelta(days=n * 900 // max(count, 1))
        folder = f"{scope}/{area}" + (f"/{fam.name.lower()}" if fam else "")
        mem_id = f"mem_{created:%Y_%m_%d}_{n:06d}"
        tags = [area] + ([fam.name.lower()] if fam else [])
        path = dest / folder / f"{mem_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_file(mem_id, title, body, tags, scope,
                              "active" if active else "deprecated", created, rng),
                        encoding="utf-8")
        written.append((title, body, fam, scope, active))
    stats.memories = count
    stats.families = families
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path, help="the .dmm/memory directory to fill")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    print(generate(args.dest, args.count, args.seed))


if __name__ == "__main__":
    main()
