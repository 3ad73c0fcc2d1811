"""Memory and Problem records, and the vocabulary of the memory format (PRD phase 2, 5.4)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

SCOPES = ("baseline", "global", "agent", "project", "ephemeral")
CONFIDENCES = ("experimental", "active", "stable", "deprecated")
STATUSES = ("active", "deprecated")
DEPRECATED_DIR = "deprecated"
REQUIRED_FIELDS = ("id", "tags", "scope", "priority", "confidence", "status")
OPTIONAL_FIELDS = ("created", "expires", "supersedes", "related")
KNOWN_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
# mem_YYYY_MM_DD_ then NNN (numbered by hand, or by a dmm older than team support) or six
# characters drawn at random by dmm (ID_ALPHABET: digits and lower-case letters without i, l,
# o, u), so that clones that have not met never give two memories one id (docs/team.md)
ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_SUFFIX_LEN = 6
ID_PATTERN = r"mem_[0-9]{4}_[0-9]{2}_[0-9]{2}_(?:[0-9]{3}|[0-9a-hjkmnp-tv-z]{6})"  # whole id, ASCII
MAX_TAGS = 10


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one memory file: where, which field, what, how bad."""

    path: str  # relative to .dmm/memory/
    message: str
    field: str | None = None
    severity: str = "error"  # "error" makes the file unusable or the store inconsistent

    def to_dict(self) -> dict:
        return {"path": self.path, "field": self.field, "severity": self.severity,
                "message": self.message}

    def __str__(self) -> str:
        where = f"{self.path}" + (f" [{self.field}]" if self.field else "")
        return f"{self.severity}: {where}: {self.message}"


@dataclass
class Memory:
    """A parsed memory file. ``path`` is relative to .dmm/memory/ and uses forward slashes."""

    id: str
    path: str
    title: str
    body: str  # markdown after the frontmatter, title heading included
    tags: list[str]
    scope: str
    priority: float
    confidence: str
    status: str
    created: dt.date | None = None
    expires: dt.date | None = None
    supersedes: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    tokens: int = 0

    @property
    def content(self) -> str:
        """The body without its leading '# ' title line (packs print the title separately)."""
        lines = self.body.lstrip("\n").split("\n", 1)
        if lines[0].startswith("# "):
            return lines[1].strip("\n") if len(lines) > 1 else ""
        return self.body.strip("\n")

    @property
    def is_active(self) -> bool:
        return self.status == "active" and self.confidence != "deprecated"

    def is_expired(self, today: dt.date) -> bool:
        return self.expires is not None and self.expires < today
