"""Alternatives: choices that exclude each other, so that two memories choosing differently
give an agent two answers to one question.

"User passwords are hashed with Argon2id" and "Login secrets are stored as bcrypt digests"
share almost no words, yet only one of them can be the rule: Argon2id and bcrypt are two
answers to "how are passwords stored". Each family below lists such answers (a member, then
the words that name it). A memory chooses a member when its title names exactly one member of
the family. Some families name their subject by themselves (nobody uses bcrypt for anything
but passwords); the others ("async" or "sync", "UTC" or "local time") only answer the same
question when the two memories are about the same thing, which the analyzer checks.

A family may also name its question: the words that say what it answers ("pagination",
"money", "prices"). A title that names the question asks it, and two titles that ask it are
about the same thing however else they are worded ("Store monetary amounts as integer minor
units", "Prices are persisted as whole numbers of the smallest currency unit"). Some names are
answers only there: "cursors" and "page_size" choose a way to paginate in a title about
pagination ("Collection endpoints paginate with opaque cursors only"), and nothing in "Cursor
rules for Vue".

Pure data and functions. Names match as whole words, lower-cased.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from dmm.text.analyze import terms


class Family(NamedTuple):
    names_subject: bool  # a member alone says what the memory is about
    members: dict[str, str]  # member: its names, separated by "|"
    question: str = ""  # words naming what the family answers, separated by "|"
    # member: names that choose it only in a title that names the question
    when_asked: dict[str, str] = {}


FAMILIES = {
    # families whose members say what they are about
    "password hashing": Family(True, {
        "argon2": "argon2|argon2id|argon2i", "bcrypt": "bcrypt", "scrypt": "scrypt",
        "pbkdf2": "pbkdf2"}),
    "error tracking": Family(True, {
        "sentry": "sentry", "rollbar": "rollbar", "bugsnag": "bugsnag",
        "honeybadger": "honeybadger", "airbrake": "airbrake"}),
    "on-call paging": Family(True, {
        "pagerduty": "pagerduty", "opsgenie": "opsgenie", "victorops": "victorops|splunk on-call",
        "incident.io": "incident.io"}),
    "feature flag service": Family(True, {
        "launchdarkly": "launchdarkly", "unleash": "unleash", "flagsmith": "flagsmith",
        "growthbook": "growthbook", "configcat": "configcat"}),
    "dependency update bot": Family(True, {"dependabot": "dependabot", "renovate": "renovate"}),
    "python type checker": Family(True, {
        "mypy": "mypy", "pyright": "pyright", "pyre": "pyre", "pytype": "pytype"}),
    "javascript test runner": Family(True, {
        "jest": "jest", "vitest": "vitest", "mocha": "mocha", "jasmine": "jasmine"}),
    # families that answer a question only about the same subject
    "concurrency style": Family(False, {
        "async": "async|asynchronous|asynchronously|async def|asyncio|coroutine|coroutines",
        "sync": "sync|synchronous|synchronously|plain def"}),
    "data access": Family(False, {
        "orm": "orm|object-relational|mapped classes|mapped class|model classes|"
               "sqlalchemy orm|django orm|active record|activerecord|hibernate|prisma|"
               "typeorm|sequelize|gorm|entity framework",
        "raw sql": "raw sql|.sql files|sql files|plain sql|hand-written sql|handwritten sql|"
                   "raw queries|sql strings|sqlc"}),
    "naming case": Family(False, {
        "snake_case": "snake_case|snake case", "camelcase": "camelcase|camel case",
        "pascalcase": "pascalcase|pascal case", "kebab-case": "kebab-case|kebab case",
        "screaming_snake_case": "screaming_snake_case|upper_snake_case"}),
    "indentation": Family(False, {
        "tabs": "tabs|tab characters|hard tabs", "spaces": "spaces|soft tabs"}),
    "quote style": Family(False, {
        "single quotes": "single quotes|single-quoted", "double quotes":
        "double quotes|double-quoted"}),
    "time zone": Family(False, {
        "utc": "utc|gmt|coordinated universal time|zulu time",
        "local time": "local time|local timezone|local time zone|server time|ortszeit|"
                      "lokalzeit|lokaler zeit|hora local|本地时间"}),
    "timestamp format": Family(False, {
        "iso 8601": "iso 8601|iso-8601|rfc 3339|rfc3339",
        "unix time": "unix timestamp|unix timestamps|unix time|epoch seconds|"
                     "epoch milliseconds|unix epoch"}),
    "identifier format": Family(False, {
        "uuid": "uuid|uuids|uuid4|uuidv4|uuid v4|uuidv7|uuid v7", "ulid": "ulid|ulids",
        "sequential integer": "auto-increment|autoincrement|auto-incrementing|serial ids|"
                              "sequential ids|sequential integers|bigserial",
        "nanoid": "nanoid"}),
    "api style": Family(False, {
        "rest": "rest api|rest apis|restful|rest endpoints", "graphql": "graphql",
        "grpc": "grpc", "json-rpc": "json-rpc", "soap": "soap"}),
    "merge strategy": Family(False, {
        "squash": "squash|squash merge|squash-merge|squashed|squash and merge",
        "merge commit": "merge commit|merge commits|--no-ff",
        "rebase merge": "rebase and merge|rebase-merge|rebase merge"}),
    "branching model": Family(False, {
        "trunk-based": "trunk-based|trunk based", "gitflow": "gitflow|git flow|git-flow",
        "github flow": "github flow"}),
    "repository layout": Family(False, {
        "monorepo": "monorepo|mono-repo|single repository",
        "polyrepo": "polyrepo|poly-repo|multi-repo|separate repositories"}),
    "docstring style": Family(False, {
        "google": "google style|google-style|google convention",
        "numpy": "numpy style|numpy-style|numpydoc",
        "sphinx": "sphinx style|sphinx-style|restructuredtext"}),
    "python package manager": Family(False, {
        "poetry": "poetry", "pipenv": "pipenv", "uv": "uv", "pdm": "pdm", "conda": "conda",
        "pip-tools": "pip-tools|pip-compile"}),
    "javascript package manager": Family(False, {
        "npm": "npm", "yarn": "yarn", "pnpm": "pnpm", "bun": "bun"}),
    "python formatter": Family(False, {
        "black": "black", "yapf": "yapf", "autopep8": "autopep8", "ruff format": "ruff format"}),
    "python linter": Family(False, {
        "flake8": "flake8", "pylint": "pylint", "ruff": "ruff", "pyflakes": "pyflakes"}),
    "javascript formatter": Family(False, {
        "prettier": "prettier", "biome": "biome", "dprint": "dprint"}),
    "job queue": Family(False, {
        "celery": "celery", "dramatiq": "dramatiq", "rq": "rq", "huey": "huey",
        "sidekiq": "sidekiq", "bullmq": "bullmq", "arq": "arq"}),
    "message broker": Family(False, {
        "kafka": "kafka", "rabbitmq": "rabbitmq", "sqs": "sqs|amazon sqs", "nats": "nats",
        "pub/sub": "pub/sub|pubsub", "activemq": "activemq"}),
    "relational database": Family(False, {
        "postgresql": "postgresql|postgres", "mysql": "mysql", "mariadb": "mariadb",
        "sqlite": "sqlite", "sql server": "sql server|mssql", "oracle database": "oracle database",
        "cockroachdb": "cockroachdb"}),
    "ci service": Family(False, {
        "github actions": "github actions", "gitlab ci": "gitlab ci|gitlab-ci",
        "jenkins": "jenkins", "circleci": "circleci", "travis ci": "travis ci|travis",
        "buildkite": "buildkite", "azure pipelines": "azure pipelines"}),
    "infrastructure as code": Family(False, {
        "terraform": "terraform|opentofu", "pulumi": "pulumi",
        "cloudformation": "cloudformation", "aws cdk": "aws cdk|cdk"}),
    "secret store": Family(False, {
        "vault": "vault|hashicorp vault", "aws secrets manager": "aws secrets manager|"
        "secrets manager", "1password": "1password", "doppler": "doppler", "sops": "sops"}),
    "container orchestration": Family(False, {
        "kubernetes": "kubernetes|k8s", "nomad": "nomad", "ecs": "ecs", "docker swarm":
        "docker swarm", "cloud run": "cloud run"}),
    "money representation": Family(False, {
        "integer minor units": "minor units|integer minor units|integer cents|cents|"
                               "whole-number cents|smallest currency unit|"
                               "smallest unit of the currency|smallest currency units",
        "decimal": "decimal|decimals|numeric|fixed-point|bigdecimal|decimal places",
        "float": "float|floating point|floating-point"},
        "money|monetary|price|prices|amount|amounts|currency|currencies|fee|fees|"
        "geld|betrag|beträge|preis|preise|dinero|importe|importes|precio|precios|金额|价格"),
    "pagination": Family(False, {
        "cursor": "cursor pagination|cursor-based|keyset pagination",
        "offset": "offset pagination|offset-based|limit/offset|page numbers"},
        "pagination|paginate|paginates|paginated|paging|paginación|paginierung|分页",
        {"cursor": "cursor|cursors|next_cursor|keyset",
         "offset": "offset|offsets|page_size|page number|page-number|page|pages|per_page"}),
    "javascript module system": Family(False, {
        "esm": "esm|es modules|ecmascript modules", "commonjs": "commonjs|cjs"}),
    "javascript build tool": Family(False, {
        "webpack": "webpack", "vite": "vite", "create react app": "create react app",
        "esbuild": "esbuild", "turbopack": "turbopack"}),
    "frontend framework": Family(False, {
        "react": "react", "vue": "vue|vue.js|vuejs", "angular": "angular",
        "svelte": "svelte|sveltekit"}),
    "mobile framework": Family(False, {
        "react native": "react native", "flutter": "flutter", "ionic": "ionic",
        "xamarin": "xamarin", "kotlin multiplatform": "kotlin multiplatform"}),
    "css approach": Family(False, {
        "tailwind": "tailwind|tailwind css|tailwindcss", "css modules": "css modules",
        "styled-components": "styled-components|styled components"}),
    "state management": Family(False, {
        "redux": "redux|redux toolkit", "zustand": "zustand", "mobx": "mobx",
        "recoil": "recoil", "jotai": "jotai"}),
    "date library": Family(False, {
        "moment": "moment.js|momentjs", "date-fns": "date-fns", "dayjs": "dayjs|day.js",
        "luxon": "luxon"}),
    "python validation": Family(False, {
        "pydantic": "pydantic", "marshmallow": "marshmallow", "attrs": "attrs|cattrs"}),
    "python http client": Family(False, {
        "httpx": "httpx", "aiohttp": "aiohttp", "requests": "requests library|python-requests"}),
    "cache server": Family(False, {"redis": "redis|valkey", "memcached": "memcached"}),
    "search engine": Family(False, {
        "elasticsearch": "elasticsearch", "opensearch": "opensearch",
        "meilisearch": "meilisearch", "typesense": "typesense", "algolia": "algolia",
        "solr": "solr"}),
    "metrics backend": Family(False, {
        "prometheus": "prometheus", "datadog": "datadog", "new relic": "new relic|newrelic",
        "honeycomb": "honeycomb"}),
    "commit message style": Family(False, {
        "conventional commits": "conventional commits", "gitmoji": "gitmoji"}),
    "version scheme": Family(False, {
        "semver": "semver|semantic versioning", "calver": "calver|calendar versioning"}),
    "line endings": Family(False, {"lf": "lf", "crlf": "crlf"}),
}

_NAMES = {name: (family, member) for family, fam in FAMILIES.items()
          for member, names in fam.members.items() for name in names.split("|")}
_ASKED_NAMES = {name: (family, member) for family, fam in FAMILIES.items()
                for member, names in fam.when_asked.items() for name in names.split("|")}


def _whole_words(names: list[str]) -> re.Pattern:
    return re.compile(r"(?<![\w.-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])")


def _by_length(names) -> list[str]:
    return sorted(names, key=len, reverse=True)  # "squash merge" before "squash"


_PATTERN = _whole_words(_by_length(_NAMES))
_ASKED_PATTERN = _whole_words(_by_length(_ASKED_NAMES))
# the words of each family's names: what two memories choosing from it share by construction
NAME_TERMS = {family: frozenset(t for names in (_NAMES, _ASKED_NAMES) for name in names
                                if names[name][0] == family for t in terms(name))
              for family in FAMILIES}
# the words naming each family's question; Chinese has no word boundaries: a substring
def _cjk(word: str) -> bool:
    return all("\u4e00" <= c <= "\u9fff" for c in word)


_QUESTIONS = {family: _whole_words(_by_length(w for w in fam.question.split("|")
                                              if not _cjk(w)))
              for family, fam in FAMILIES.items() if fam.question}
_CJK_QUESTIONS = {family: [w for w in fam.question.split("|") if _cjk(w)]
                  for family, fam in FAMILIES.items() if fam.question}


def asks(text: str) -> set[str]:
    """The families whose question ``text`` names ("Prices are BigDecimal": money)."""
    low = text.lower()
    return {family for family, pattern in _QUESTIONS.items()
            if pattern.search(low) or any(w in text for w in _CJK_QUESTIONS[family])}


def named(text: str) -> dict[str, set[str]]:
    """The members of each family that ``text`` names (names that answer only a question the
    text asks included)."""
    low = text.lower()
    out: dict[str, set[str]] = {}
    for m in _PATTERN.finditer(low):
        family, member = _NAMES[m.group(0)]
        out.setdefault(family, set()).add(member)
    asked = asks(text) if _ASKED_PATTERN.search(low) else set()
    for m in _ASKED_PATTERN.finditer(low) if asked else ():
        family, member = _ASKED_NAMES[m.group(0)]
        if family in asked:
            out.setdefault(family, set()).add(member)
    return out


def choices(title: str) -> dict[str, str]:
    """What a title chooses: the member of each family of which it names exactly one."""
    return {family: next(iter(members)) for family, members in named(title).items()
            if len(members) == 1}


def names_of(family: str, member: str) -> list[str]:
    """Every name of ``member``, those that answer only a question asked included."""
    fam = FAMILIES[family]
    return fam.members[member].split("|") + (
        fam.when_asked[member].split("|") if member in fam.when_asked else [])


@lru_cache(maxsize=None)
def mention(family: str, member: str) -> re.Pattern:
    """A pattern that finds ``member`` of ``family`` in lower-cased text."""
    return _whole_words(names_of(family, member))
