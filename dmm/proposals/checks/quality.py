"""Quality check: a sensible size, one concept, a real title, a rationale for rules, a body
that holds what it refers to (dmm.proposals.wording).

Whitespace and tag spelling are fixed automatically (the proposal is then "modified").
"""

from __future__ import annotations

import re

from dmm.memory.edit import FrontmatterEditError, set_field
from dmm.memory.parse import split_frontmatter
from dmm.memory.tokens import count_tokens
from dmm.proposals.checks.base import Issue, ReviewContext
from dmm.proposals.wording import added_topics, undefined_references

NAME = "quality"
MAX_HEADINGS = 5
_CONSTRAINT = re.compile(r"\b(must|never|always|do not|don't|shall|required|forbidden|"
                         r"not allowed)\b", re.I)
_RATIONALE = re.compile(r"\b(because|why|rationale|reason|so that|since|otherwise|to avoid|"
                        r"in order to|caused|trade-?off)\b", re.I)
_PARTS = re.compile(r"\bpart\s+(1|2|one|two|i|ii)\b", re.I)


def run(ctx: ReviewContext) -> list[Issue]:
    if ctx.proposal.type == "deprecate" or ctx.memory is None:
        return []
    if ctx.proposal.type == "resolve" and ctx.old_text is not None:
        return []  # a resolution edits an existing memory's status or scope, not its substance
    issues = []
    m = ctx.memory
    size = size_warning(m.body, ctx.config["quality"])
    if size:  # BOOT.md tells agents these bounds are required: the reviewer holds them
        issues.append(Issue(NAME, "warning", size, required=True))
    headings = len(re.findall(r"^#{2,6} ", m.body, re.M))
    if headings > MAX_HEADINGS or _PARTS.search(m.body):
        issues.append(Issue(NAME, "warning", "looks like several concepts in one file "
                            f"({headings} sub-headings)", suggestion="one memory per concept"))
    added = added_topics(m.title, m.body)
    if added:
        issues.append(Issue(NAME, "warning", "looks like more than one concept: "
                            f"{_quoted(added[0])} adds a topic nothing before it names",
                            suggestion="one memory per concept: propose the other topic as "
                                       "a memory of its own"))
    references = undefined_references(m.title, m.body)
    if references:
        issues.append(Issue(NAME, "warning", "not self-contained: "
                            f"{', '.join(map(_quoted, references))} refers to text the memory "
                            "does not hold", suggestion="say what it refers to: a reader of "
                                                        "the store sees this memory alone"))
    if len(m.title.split()) < 3:
        issues.append(Issue(NAME, "warning", f"title {m.title!r} is too short to say what the "
                            "memory is about", suggestion="state the rule or fact as the title"))
    if _CONSTRAINT.search(m.body) and not _RATIONALE.search(m.body):
        issues.append(Issue(NAME, "warning", "a rule without a rationale: say why",
                            suggestion="add a sentence starting with 'Why:' or 'because'"))
    if fix(ctx.new_text) != ctx.new_text:
        issues.append(Issue(NAME, "info", "trailing whitespace or tag spelling normalised",
                            auto_fixable=True))
    return issues


def _quoted(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def size_warning(body: str, quality: dict) -> str | None:
    """Why a memory's size will hurt, or None. Only the extremes warn: a body too short to say
    what it applies to and why, or one so long it crowds every pack it enters."""
    tokens = count_tokens(body)
    if tokens < quality["min_tokens"]:
        return (f"{tokens} tokens: too short to carry its context (under "
                f"{quality['min_tokens']}); say what it applies to and why")
    if tokens > quality["max_tokens"]:
        return (f"{tokens} tokens: longer than {quality['max_tokens']}, it crowds a pack; split "
                "it into memories of one concept each")
    return None


def fix(text: str) -> str:
    """Strip trailing whitespace, end with one newline, lower-case and de-duplicate tags."""
    fixed = "\n".join(line.rstrip() for line in text.split("\n")).rstrip("\n") + "\n"
    raw, _ = split_frontmatter(fixed)
    m = re.search(r"^tags:[ \t]*\[(.*)\][ \t]*$", raw or "", re.M)
    if m:
        tags = [t.strip().strip("'\"") for t in m.group(1).split(",") if t.strip()]
        clean = list(dict.fromkeys(t.lower().replace(" ", "-") for t in tags))
        if clean != tags:
            try:
                fixed = set_field(fixed, "tags", clean)
            except FrontmatterEditError:
                pass  # tags that cannot be rewritten safely stay as written
    return fixed
