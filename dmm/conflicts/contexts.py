"""Contexts a rule can be about: two memories set in different ones do not contradict.

"Python files use four spaces" and "YAML manifests use two spaces" give different values, but
for different file types; "tests use SQLite" and "production uses PostgreSQL" are about
different environments. Each family lists the members that exclude each other; a memory's
contexts are the members its title and tags name. Pure data and one function.
"""

from __future__ import annotations

import re

from dmm.text.analyze import words

FAMILIES = {
    "environment": """production prod staging development dev test tests testing ci local
        sandbox qa preview""",
    "language": """python py yaml yml json toml xml go golang javascript js typescript ts java
        kotlin swift rust ruby php sql shell bash powershell markdown html css scss makefile
        dockerfile terraform helm csharp scala elixir haskell lua dart""",
    "platform": "ios android web mobile desktop windows macos linux",
    "plan": "free pro enterprise premium",
    "test level": "unit integration e2e smoke",
}
# members that are one context under two names ("py" is Python, "prod" is production)
SAME = {"py": "python", "yml": "yaml", "prod": "production", "dev": "development",
        "golang": "go", "js": "javascript", "ts": "typescript", "tests": "test",
        "testing": "test"}

# matched as whole words, not stems: "production" must not meet "product"
_MEMBERS = {word: (family, SAME.get(word, word))
            for family, members in FAMILIES.items() for word in members.split()}
# a prefixed compound names another context: "pre-production" is not production, nor is
# "non-production"
_PREFIXED = re.compile(r"\b(?:pre|non)-\w+", re.IGNORECASE)


def named_contexts(title: str, tags: list[str]) -> dict[str, set[str]]:
    """The contexts a memory's title and tags name, by family."""
    out: dict[str, set[str]] = {}
    for word in words(_PREFIXED.sub(" ", " ".join([title, *tags]))):
        if word in _MEMBERS:
            family, member = _MEMBERS[word]
            out.setdefault(family, set()).add(member)
    return out


def apart(a: dict[str, set[str]], b: dict[str, set[str]]) -> str | None:
    """A family in which the two memories name only different contexts, if any."""
    for family in sorted(a.keys() & b.keys()):
        if not a[family] & b[family]:
            return family
    return None
