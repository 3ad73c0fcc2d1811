"""Minimal edits of the files a team already has: JSON settings, Codex's TOML, markdown
instructions. Each is parsed by a real parser, never searched as text, and changed only where
dmm adds something: the user's indentation, escapes, number spellings and comments stay byte
for byte.

- JSON: read strictly (duplicate keys, NaN/Infinity, numbers no reader can hold back are
  refused with a clear message: rewriting them would change what the file says), and edited
  by splicing new members into the text at the positions json-source-map reports.
- TOML: tomllib reads (and judges validity), tomlkit edits and keeps comments and layout.
- Markdown: markdown-it finds dmm's section, a marker in an HTML block of its own; a marker
  inside a code block or quoted in text is not a section.

Pure: text in, text out.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from dmm.errors import InvalidInputError

# --- JSON ------------------------------------------------------------------------------------


class _Refused(ValueError):
    pass


def _no_duplicates(pairs: list) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _Refused(f"the key {key!r} appears twice in one object (a JSON reader keeps "
                           "one of them silently)")
        seen[key] = value
    return seen


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is too large for a JSON reader to keep")
    return value


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > 300:
        raise _Refused(f"an integer of {len(text)} digits is too long for a JSON reader to "
                       "keep")
    return int(text)


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number (standard JSON has no NaN or Infinity)")


def load_json(text: str, rel: str) -> dict:
    """The JSON object in ``text``, read strictly; anything dmm could not edit without changing
    what the file says is refused."""
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_float=_number,
                          parse_int=_integer, parse_constant=_constant) if text.strip() else {}
    except _Refused as exc:
        raise InvalidInputError(f"{rel}: {exc}: dmm will not rewrite it",
                                hint="fix it by hand, then run again") from None
    except RecursionError:
        raise InvalidInputError(f"{rel} is nested too deeply to be a settings file") from None
    except ValueError as exc:
        raise InvalidInputError(f"{rel} cannot be read as JSON ({exc}): dmm will not "
                                "overwrite it", hint="fix it by hand, then run again") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{rel} is not a JSON object: dmm will not overwrite it")
    return data


def _pointer(keys: tuple[str, ...]) -> str:
    return "".join("/" + k.replace("~", "~0").replace("/", "~1") for k in keys)


def _layout(text: str) -> tuple[str, str]:
    """(newline, indentation unit) of a JSON text: what its author used, else two spaces."""
    newline = "\r\n" if "\r\n" in text else "\n"
    found = re.search(r"\n([ \t]+)\S", text)
    return newline, (found.group(1) if found else "  ")


def _line_indent(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    return re.match(r"[ \t]*", text[start:]).group(0)


def _insert(text: str, keys: tuple[str, ...], member: str | None, value: Any) -> str:
    """``text`` with ``value`` added at the end of the object (as ``member``) or the array
    (``member`` None) found at ``keys``; nothing else changes."""
    from json_source_map import calculate

    if not text.strip():
        text = "{\n}\n"  # a new file: laid out for people to read
    spans = calculate(text)
    where = _pointer(keys)
    whole = spans[where]
    start, end = whole.value_start.position, whole.value_end.position
    prefix = where + "/"
    children = [entry for name, entry in spans.items()
                if name.startswith(prefix) and "/" not in name[len(prefix):]]
    newline, unit = _layout(text)
    multiline = "\n" in text.strip()
    if children:
        first = min(children, key=lambda e: (e.key_start or e.value_start).position)
        last = max(children, key=lambda e: e.value_end.position)
        first_pos = (first.key_start or first.value_start).position
        multiline = "\n" in text[start:first_pos]
        indent = _line_indent(text, first_pos) if multiline else ""
        at = last.value_end.position
    else:
        indent = _line_indent(text, start) + unit
        at = start + 1
    rendered = json.dumps(value, ensure_ascii=False, indent=unit if multiline else None)
    if multiline:
        rendered = rendered.replace("\n", newline + indent)
    item = (json.dumps(member, ensure_ascii=False) + ": " if member is not None else "") \
        + rendered
    if children:
        addition = ("," + newline + indent if multiline else ", ") + item
        return text[:at] + addition + text[at:]
    closing = newline + _line_indent(text, start) if multiline else ""
    inner = (newline + indent if multiline else "") + item + closing
    return text[:start + 1] + inner + text[end - 1:]


def add_member(text: str, keys: tuple[str, ...], member: str, value: Any) -> str:
    """Add ``member: value`` to the object at ``keys`` (which lacks it)."""
    return _insert(text, keys, member, value)


def append_item(text: str, keys: tuple[str, ...], value: Any) -> str:
    """Append ``value`` to the array at ``keys``."""
    return _insert(text, keys, None, value)


# --- TOML ------------------------------------------------------------------------------------

def load_toml(text: str, rel: str) -> dict:
    """What a TOML text says (tomllib, the reader Python ships), or a clear refusal."""
    import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as exc:
        raise InvalidInputError(f"{rel} is not valid TOML ({exc}): dmm will not change it",
                                hint="fix it by hand, then run again") from None


# --- markdown sections -----------------------------------------------------------------------

def find_section(text: str, marker: str, end_marker: str) -> tuple[int, int] | None:
    """The lines [first, last) of dmm's section in a markdown text: from a line holding only
    ``marker`` (an HTML block, not code or quoted text) to the line holding ``end_marker``, or,
    for sections written before there was one, to the next heading of level 1 or 2 after the
    section's own heading (or the end)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    start = None
    headings = 0
    for token in tokens:
        if token.map is None:
            continue
        if start is None:
            if token.type == "html_block" and token.content.strip() == marker:
                start = token.map[0]
            continue
        if token.type == "html_block" and token.content.strip() == end_marker:
            return start, token.map[1]
        if token.type == "heading_open" and token.tag in ("h1", "h2"):
            headings += 1
            if headings == 2:
                return start, token.map[0]
    if start is None:
        return None
    return start, len(text.splitlines())


def put_section(text: str, section: str, marker: str, end_marker: str) -> str:
    """``text`` with dmm's section replaced by ``section``, or appended when there is none."""
    lines = text.splitlines(keepends=True)
    found = find_section(text, marker, end_marker)
    if found is None:
        if not text:
            return section
        joined = text if text.endswith("\n") else text + "\n"
        return joined + "\n" + section
    first, last = found
    rest = "".join(lines[last:])
    tail = ("\n" if rest and not rest.startswith("\n") else "") + rest
    return "".join(lines[:first]) + section + tail
