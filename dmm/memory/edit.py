"""Pure text edits of memory files: set a frontmatter field, allocate an id, apply a patch,
deprecate, add a `supersedes` link or a clarification.

Edits keep the rest of the file byte for byte (comments, field order, body), so a proposal's
diff shows only what the proposal changes.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Iterable

from dmm.memory.model import DEPRECATED_DIR
from dmm.memory.parse import split_frontmatter


class PatchError(ValueError):
    """A unified diff that does not apply to the current content."""


def set_field(text: str, key: str, value: str) -> str:
    """``text`` with top-level frontmatter ``key`` set to the YAML scalar/flow ``value``."""
    raw, body = split_frontmatter(text)
    if raw is None:
        raise ValueError("the file has no frontmatter")
    line = re.compile(rf"^{re.escape(key)}:[^\n]*(\n[ \t]+[^\n]*)*", re.M)
    if line.search(raw):
        raw = line.sub(lambda _: f"{key}: {value}", raw, count=1)
    else:
        raw = raw.rstrip("\n") + f"\n{key}: {value}\n"
    if not raw.endswith("\n"):
        raw += "\n"
    return f"---\n{raw}---\n{body}"


def deprecation(rel: str, text: str) -> tuple[str, str]:
    """Where a deprecated memory goes (under deprecated/, keeping its folders) and its text."""
    return f"{DEPRECATED_DIR}/{rel}", set_field(text, "status", "deprecated")


def with_supersedes(text: str, current: list[str], add: Iterable[str]) -> str:
    """``text`` whose `supersedes` list is ``current`` plus ``add`` (no repeats)."""
    ids = list(dict.fromkeys([*current, *add]))
    return set_field(text, "supersedes", "[" + ", ".join(ids) + "]")


def with_clarification(text: str, clarification: str) -> str:
    """``text`` with a "**Scope:** ..." paragraph right under its title (or first in the body),
    saying when the memory applies."""
    raw, body = split_frontmatter(text)
    if raw is None:
        raise ValueError("the file has no frontmatter")
    note = f"**Scope:** {' '.join(clarification.split())}\n"
    lines = body.lstrip("\n").split("\n", 1)
    if lines[0].startswith("# "):
        rest = lines[1].lstrip("\n") if len(lines) > 1 else ""
        body = f"\n{lines[0]}\n\n{note}" + (f"\n{rest}" if rest else "")
    else:
        body = f"\n{note}\n{body.lstrip(chr(10))}"
    return f"---\n{raw}---\n{body}"


def next_id(existing: Iterable[str], today: dt.date) -> str:
    """The next free id ``mem_YYYY_MM_DD_NNN`` for ``today``."""
    prefix = f"mem_{today:%Y_%m_%d}_"
    used = [int(i[len(prefix):]) for i in existing
            if i.startswith(prefix) and i[len(prefix):].isdigit()]
    return f"{prefix}{max(used, default=0) + 1:03d}"


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(text: str, patch: str) -> str:
    """Apply a unified diff (as made by ``diff -u`` or ``git diff``) to ``text``.

    File headers are ignored; every hunk's context and removed lines must match exactly, and
    hunk line counts decide where a hunk ends.
    """
    lines = text.splitlines(keepends=True)
    patch_lines = patch.splitlines()
    out: list[str] = []
    pos = hunks = i = 0
    while i < len(patch_lines):
        m = _HUNK.match(patch_lines[i])
        i += 1
        if not m:
            continue
        hunks += 1
        old_count = int(m.group(2) if m.group(2) is not None else 1)
        new_count = int(m.group(4) if m.group(4) is not None else 1)
        start = int(m.group(1)) - (0 if old_count == 0 else 1)
        if start < pos:
            raise PatchError(f"hunk {hunks} overlaps the previous one")
        out.extend(lines[pos:start])
        pos = start
        while (old_count > 0 or new_count > 0) and i < len(patch_lines):
            entry = patch_lines[i]
            i += 1
            if entry.startswith("\\"):  # "\ No newline at end of file"
                continue
            tag, content = (entry[:1], entry[1:]) if entry else (" ", "")
            if tag == "+":
                out.append(content + "\n")
                new_count -= 1
                continue
            if tag not in (" ", "-"):
                raise PatchError(f"hunk {hunks}: unexpected line {entry!r}")
            current = lines[pos].rstrip("\r\n") if pos < len(lines) else None
            if current != content:
                raise PatchError(f"hunk {hunks} does not apply: expected {content!r} at "
                                 f"line {pos + 1}, found {current!r}")
            if tag == " ":
                out.append(lines[pos])
                new_count -= 1
            old_count -= 1
            pos += 1
    if hunks == 0:
        raise PatchError("no hunk found: --patch takes a unified diff (diff -u, git diff)")
    out.extend(lines[pos:])
    return "".join(out)
