"""Parse one memory file's text into a Memory, collecting every problem instead of stopping.

Frontmatter is the YAML between a first line ``---`` and the next ``---`` line; the title is the
first ``# `` heading of the body. Validation of each field lives in validate.py; this module
only splits the file and builds the record.
"""

from __future__ import annotations

import re

import yaml

from dmm.memory.model import Memory, Problem
from dmm.memory.tokens import count_tokens
from dmm.memory.validate import validate_fields

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.S | re.M)
_TITLE = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Return (frontmatter YAML text or None, body)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    m = _FRONTMATTER.match(text)
    if not m:
        return None, text
    return m.group(1), text[m.end():]


def extract_title(body: str) -> str | None:
    m = _TITLE.search(body)
    return m.group(1).strip() if m else None


def parse_memory(text: str, path: str) -> tuple[Memory | None, list[Problem]]:
    """Parse ``text`` (the file at ``path``, relative to .dmm/memory/).

    Returns the Memory (None when the file cannot be used at all) and every problem found.
    """
    raw, body = split_frontmatter(text)
    if raw is None:
        return None, [Problem(path, "no YAML frontmatter: the file must start with a '---' line "
                                    "and the frontmatter must end with another '---' line")]
    try:
        meta = yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, [Problem(path, f"malformed YAML{where}: {problem}")]
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return None, [Problem(path, "frontmatter must be a mapping of field: value")]

    values, problems = validate_fields(meta, path)
    title = extract_title(body)
    if title is None:
        problems.append(Problem(path, "no '# ' title heading in the body", "title", "warning"))
    if not body.strip():
        problems.append(Problem(path, "the body is empty", "body", "warning"))
    if any(p.severity == "error" for p in problems):
        return None, problems
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    body = body.strip("\n")
    memory = Memory(title=title or stem.replace("_", " "), path=path, body=body,
                    tokens=count_tokens(body), **values)
    return memory, problems
