"""Two memories side by side, each labelled and re-wrapped to its half of the terminal
(`dmm conflicts show`, the interactive resolver). Pure text layout."""

from __future__ import annotations

import re
import textwrap
from itertools import zip_longest


def _column(label: str, memory, width: int) -> list[str]:
    head = [f"{label}: {memory.id} ({memory.scope})", f"{memory.path}",
            f"created {memory.created or '?'}, confidence {memory.confidence}, "
            f"priority {memory.priority}",
            "", memory.title, ""]
    out = []
    for line in head:
        out += textwrap.wrap(line, width) or [""]
    for block in paragraphs(memory.content):
        out += _wrap(block, width)
    return out


_KEEP_LINES = re.compile(r"^\s*([-*+>|#]|\d+[.)]\s|```|\s{4})")


def paragraphs(text: str) -> list[str]:
    """The text's blocks with hard line breaks inside prose joined, so that a narrower column
    re-wraps whole sentences (a file wrapped at 100 characters, shown in 48, would otherwise
    leave a word or two on every other line). Lists, headings, quotes, tables and code keep
    their lines."""
    blocks: list[str] = []
    prose: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or line.lstrip().startswith("```") or not line.strip() or \
                _KEEP_LINES.match(line):
            if prose:
                blocks.append(" ".join(prose))
                prose = []
            blocks.append(line)
        else:
            prose.append(line.strip())
    if prose:
        blocks.append(" ".join(prose))
    return blocks


def _wrap(block: str, width: int) -> list[str]:
    indent = re.match(r"\s*(?:[-*+]|\d+[.)])?\s*", block).group(0)
    return textwrap.wrap(block, width, subsequent_indent=" " * len(indent)) or [""]


def side_by_side(a, b, width: int) -> str:
    """Memory A on the left, B on the right, each labelled, each re-wrapped to its column."""
    col = max(20, (width - 3) // 2)
    rows = zip_longest(_column("A", a, col), _column("B", b, col), fillvalue="")
    return "\n".join(f"{left.ljust(col)} | {right}".rstrip() for left, right in rows)
