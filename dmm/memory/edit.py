"""Pure text edits of memory files: set a frontmatter field, allocate an id, apply a patch,
deprecate, add a `supersedes` link or a clarification.

Edits keep the rest of the file byte for byte (comments, field order, body), so a proposal's
diff shows only what the proposal changes.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Iterable

from dmm.memory.model import DEPRECATED_DIR
from dmm.memory.parse import FrontmatterError, load_frontmatter, split_frontmatter


class PatchError(ValueError):
    """A unified diff that does not apply to the current content."""


class FrontmatterEditError(ValueError):
    """An edit whose result would not read back as intended: nothing may be written."""


_PLAIN = re.compile(r"[A-Za-z0-9_][\w./+-]*", re.ASCII)


def yaml_value(value: str | list[str]) -> str:
    """``value`` as YAML: a plain scalar when that reads back as the same string, else quoted;
    a list in flow style ([a, "b: c"])."""
    if isinstance(value, list):
        return "[" + ", ".join(yaml_value(str(v)) for v in value) + "]"
    if _PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one


_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}


def set_field(text: str, key: str, value: str | list[str] | None) -> str:
    """``text`` with top-level frontmatter ``key`` set to ``value`` (a string or a list), or
    removed when ``value`` is None.

    Replaces the key's whole entry, block-style continuation lines included (``supersedes:``
    followed by ``- id`` lines), and checks that the result parses with ``key`` holding
    exactly ``value`` and every other field unchanged; FrontmatterEditError otherwise.
    """
    raw, body = split_frontmatter(text)
    if raw is None:
        raise FrontmatterEditError("the file has no frontmatter")
    entry = re.compile(rf"^{re.escape(key)}[ \t]*:[^\n]*(\n(?:[ \t]+[^\n]*|-(?:[ \t][^\n]*)?))*",
                       re.M)
    if value is None:
        new_raw = re.sub(entry.pattern + r"\n?", "", raw, count=1, flags=re.M)
        _check_edit(raw, new_raw, key, value)
        return f"---\n{new_raw}---\n{body}"
    line = f"{key}: {yaml_value(value)}"
    if entry.search(raw):
        new_raw = entry.sub(lambda _: line, raw, count=1)
    else:
        new_raw = raw.rstrip("\n") + f"\n{line}\n"
    if not new_raw.endswith("\n"):
        new_raw += "\n"
    _check_edit(raw, new_raw, key, value)
    return f"---\n{new_raw}---\n{body}"


def _check_edit(before: str, after: str, key: str, value: str | list[str] | None) -> None:
    old, new = _mapping(before), _mapping(after)
    if new is None:
        raise FrontmatterEditError(f"setting {key} would leave frontmatter that does not parse")
    expected = [str(v) for v in value] if isinstance(value, list) else value
    got = new.get(key)
    got = [str(v) for v in got] if isinstance(got, list) else None if got is None else str(got)
    if got != expected and value is None:
        raise FrontmatterEditError(f"{key} appears more than once: it cannot be removed safely")
    if got != expected:
        raise FrontmatterEditError(f"setting {key} would not read back as {expected!r} "
                                   f"(the frontmatter may repeat the field)")
    if old is not None and {k: v for k, v in old.items() if k != key} != \
            {k: v for k, v in new.items() if k != key}:
        raise FrontmatterEditError(f"setting {key} would change other fields")


def _mapping(raw: str) -> dict | None:
    try:
        data = load_frontmatter(raw)
    except FrontmatterError:
        return None
    return data if isinstance(data, dict) else None if data is not None else {}


def deprecation(rel: str, text: str) -> tuple[str, str]:
    """Where a deprecated memory goes (under deprecated/, keeping its folders) and its text."""
    return f"{DEPRECATED_DIR}/{rel}", set_field(text, "status", "deprecated")


def with_supersedes(text: str, current: list[str], add: Iterable[str]) -> str:
    """``text`` whose `supersedes` list is ``current`` plus ``add`` (no repeats)."""
    return set_field(text, "supersedes", list(dict.fromkeys([*current, *add])))


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
    """A new memory id ``mem_YYYY_MM_DD_xxxxxx`` for ``today``, none of ``existing``.

    The suffix is drawn at random (30 bits) rather than numbered: clones that have not met
    cannot agree on the next number, and a number handed out at landing would change the id
    of a memory merged on a forge. Two clones drawing the same id on the same day is about
    a one in two thousand chance for a team making 1,000 new memories that day without ever
    syncing; approval refuses the second one (its proposal is made again with a new id)."""
    import secrets

    from dmm.memory.model import ID_ALPHABET, ID_SUFFIX_LEN

    taken = set(existing)
    prefix = f"mem_{today:%Y_%m_%d}_"
    while True:
        candidate = prefix + "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_SUFFIX_LEN))
        if candidate not in taken:
            return candidate


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_patch(text: str, patch: str) -> str:
    """Apply a unified diff (as made by ``diff -u`` or ``git diff``) to ``text``.

    Hunks are placed by their context, as ``patch`` and ``git apply`` do: each hunk's context
    and removed lines must appear in the file exactly, at the line its header names or the
    nearest place after the previous hunk where they do; the header's line numbers and counts
    may be off (a model's diffs often are). File headers are ignored.
    """
    hunks = _hunks(patch)
    if not hunks:
        raise PatchError("no hunk found: --patch takes a unified diff (diff -u, git diff)")
    lines = text.splitlines(keepends=True)
    bare = [line.rstrip("\r\n") for line in lines]
    out: list[str] = []
    pos = 0
    for number, (start, old, new) in enumerate(hunks, 1):
        at = _place(bare, old, max(pos, start), pos)
        if at is None:
            shown = next((line for line in old if line.strip()), "")
            raise PatchError(f"hunk {number} does not apply: its lines "
                             f"{'(' + repr(shown) + ' ...) ' if shown else ''}are not in the "
                             f"file after line {pos}; make the diff against the memory as it "
                             "is now (memory_show)")
        out.extend(lines[pos:at])
        ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
        out.extend(line + ending for line in new)
        pos = at + len(old)
    out.extend(lines[pos:])
    return "".join(out)


def _hunks(patch: str) -> list[tuple[int, list[str], list[str]]]:
    """(the line its header names, 0-based; old lines; new lines) of each hunk."""
    found: list[tuple[int, list[str], list[str]]] = []
    current = None
    for entry in patch.splitlines():
        m = _HUNK.match(entry)
        if m:
            empty = m.group(2) == "0"  # "@@ -5,0 ...": insert after line 5
            current = (int(m.group(1)) if empty else max(0, int(m.group(1)) - 1), [], [])
            found.append(current)
            continue
        if current is None or entry.startswith(("--- ", "+++ ", "diff ", "index ")):
            continue
        if entry.startswith("\\"):  # "\ No newline at end of file"
            continue
        tag, content = (entry[:1], entry[1:]) if entry else (" ", "")
        if tag == "+":
            current[2].append(content)
        elif tag == "-":
            current[1].append(content)
        elif tag == " ":
            current[1].append(content)
            current[2].append(content)
        else:
            raise PatchError(f"hunk {len(found)}: unexpected line {entry!r}")
    for _, old, new in found:  # a blank line closing the patch is not context
        while old and new and old[-1] == "" and new[-1] == "":
            old.pop()
            new.pop()
    return found


def _place(lines: list[str], old: list[str], near: int, floor: int) -> int | None:
    """Where ``old`` appears in ``lines`` at or after ``floor``, nearest to ``near``."""
    if not old:
        return min(max(near, floor), len(lines))
    last = len(lines) - len(old)
    for distance in range(0, len(lines) + 1):
        for at in (near - distance, near + distance) if distance else (near,):
            if floor <= at <= last and lines[at:at + len(old)] == old:
                return at
    return None


def compose(title: str, body: str, tags: list[str], priority: float | None = None,
            confidence: str | None = None) -> str:
    """A new memory's text from its parts, for people who do not write frontmatter by hand:
    the fields given, a `# title` heading and the body (id, scope, status and created are
    filled in when it is proposed)."""
    fields = [f"tags: {yaml_value(list(tags))}"]
    if priority is not None:
        fields.append(f"priority: {priority:g}")
    if confidence is not None:
        fields.append(f"confidence: {confidence}")
    body = body.strip("\n")
    if body.startswith("# "):  # the body brought its own title
        body = body.split("\n", 1)[1].strip("\n") if "\n" in body else ""
    return "---\n" + "\n".join(fields) + f"\n---\n\n# {title.strip()}\n\n" + \
        (body + "\n" if body else "")
