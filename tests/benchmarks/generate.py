"""Generate a realistic synthetic memory store of any size (for benchmarks, not for tests).

Each memory is a rule, fact or decision of about 220 words about one topic of a made-up
software project, written from sentence templates over a technical vocabulary with a
Zipf-like word distribution, so term statistics resemble a real store: a few common words,
many rare ones, identifiers and numbers.

    python tests/benchmarks/generate.py DEST_MEMORY_DIR --count 10000 [--seed 7]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
from pathlib import Path

SCOPE_WEIGHTS = {"baseline": 0.002, "global": 0.15, "agent": 0.1, "project": 0.6,
                 "ephemeral": 0.05, "deprecated": 0.098}
AREAS = ("api", "auth", "billing", "ci", "database", "deploy", "frontend", "jobs", "logging",
         "mobile", "observability", "payments", "search", "security", "storage", "testing")
NOUNS = """service endpoint handler request response token session cookie cache queue worker
job migration schema table index column query transaction lock retry timeout backoff
deployment release rollback pipeline build artifact container image cluster node pod
secret credential key certificate permission role user account tenant customer invoice
payment refund subscription plan quota limit rate header payload field error exception log
metric trace span alert dashboard incident runbook review commit branch merge test fixture
mock snapshot coverage lint format style module package dependency version config flag
feature experiment rollout region zone replica backup restore archive upload download file
bucket object event message topic consumer producer stream batch report export import""".split()
VERBS = """store validate retry cache log deploy rollback migrate index encrypt rotate expire
refresh paginate throttle batch stream archive review approve merge test mock lint format
pin upgrade deprecate monitor alert trace sample redact hash sign verify compress""".split()
ADJS = """idempotent async blocking transactional immutable versioned encrypted cached
paginated rate-limited stateless durable eventual strict lenient internal public private
regional global legacy experimental stable critical optional mandatory nightly weekly""".split()
TOOLS = """postgres redis kafka celery dramatiq fastapi django react typescript pytest ruff
mypy docker kubernetes helm terraform sentry grafana prometheus opentelemetry alembic
sqlalchemy pydantic httpx uvicorn nginx vault github-actions dependabot renovate""".split()
TEMPLATES = (
    "Every {noun} in the {area} area must be {adj}, because a {noun2} that is not {adj} caused "
    "an incident when the {tool} {noun3} was under load.",
    "We {verb} each {noun} with {tool} before it reaches the {noun2}; the {noun3} is {adj} "
    "and must stay that way.",
    "Do not {verb} a {noun} directly from the {noun2}: go through the {area} {noun3} so that "
    "{tool} sees every change.",
    "The {noun} limit is {num} per {unit}, set in the {area} config; raising it needs a "
    "review from the {area} owners.",
    "When a {noun} fails, {verb} it at most {num} times with exponential backoff, then record "
    "the {noun2} in the {tool} {noun3}.",
    "Tests for the {noun} use a {adj} {noun2} fixture instead of a real {tool} {noun3}; run "
    "them with `make test-{area}`.",
    "Rationale: the {area} team decided this in ADR-{num} after comparing {tool} with "
    "{tool2}, mainly for {adj} {noun} handling.",
)
UNITS = ("second", "minute", "hour", "day", "request", "user", "tenant")


def _zipf_choice(rng: random.Random, words: list[str]) -> str:
    # Rank r is chosen with probability ~ 1/r: a few words dominate, as in real text.
    r = int(len(words) ** rng.random()) - 1
    return words[max(0, min(r, len(words) - 1))]


def memory_text(rng: random.Random, mem_id: str, scope: str, area: str, created: dt.date) -> str:
    status = "deprecated" if scope == "deprecated" else "active"
    real_scope = rng.choice(["project", "global"]) if scope == "deprecated" else scope
    fill = lambda: dict(  # noqa: E731
        noun=_zipf_choice(rng, NOUNS), noun2=_zipf_choice(rng, NOUNS),
        noun3=_zipf_choice(rng, NOUNS), verb=_zipf_choice(rng, VERBS),
        adj=_zipf_choice(rng, ADJS), tool=_zipf_choice(rng, TOOLS),
        tool2=_zipf_choice(rng, TOOLS), area=area, num=rng.randint(2, 900),
        unit=rng.choice(UNITS))
    words_wanted = 220
    sentences, count = [], 0
    while count < words_wanted:
        sentence = rng.choice(TEMPLATES).format(**fill())
        sentences.append(sentence)
        count += len(sentence.split())
    title_bits = fill()
    title = f"{title_bits['adj'].capitalize()} {title_bits['noun']} handling in {area} with {title_bits['tool']}"
    paragraphs = [" ".join(sentences[i:i + 3]) for i in range(0, len(sentences), 3)]
    tags = sorted({area, title_bits["noun"], title_bits["tool"]})
    return (f"---\nid: {mem_id}\ntags: [{', '.join(tags)}]\nscope: {real_scope}\n"
            f"priority: {rng.choice([0.3, 0.5, 0.6, 0.7, 0.8, 0.9])}\n"
            f"confidence: {rng.choice(['active', 'active', 'stable', 'experimental'])}\n"
            f"status: {status}\ncreated: {created.isoformat()}\n---\n\n# {title}\n\n"
            + "\n\n".join(paragraphs) + "\n")


def generate(dest: Path, count: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    scopes = list(SCOPE_WEIGHTS)
    weights = list(SCOPE_WEIGHTS.values())
    start = dt.date(2024, 1, 1)
    written = []
    for n in range(count):
        scope = rng.choices(scopes, weights)[0]
        area = rng.choice(AREAS)
        created = start + dt.timedelta(days=n * 900 // max(count, 1))
        mem_id = f"mem_{created:%Y_%m_%d}_{n % 1000:03d}"
        path = dest / scope / area / f"{area}_{n:06d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(memory_text(rng, mem_id, scope, area, created), encoding="utf-8")
        written.append(path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path, help="the .dmm/memory directory to fill")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    generate(args.dest, args.count, args.seed)


if __name__ == "__main__":
    main()
