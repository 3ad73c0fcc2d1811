"""What reaches a person's terminal: control characters escaped, colour where it helps
reading, tables that fit the width.

Memory text is written by agents and colleagues: an escape sequence in it could hide words
from the person reading (ESC[8m) while an agent still reads them, or rewrite the screen or a
window title (OSC, ESC]0;...) when piped into a pager or `cat`. So stdout and stderr show every
control character as \\uXXXX, on a terminal and piped alike (JSON is unchanged by this: inside
its strings \\uXXXX is the same character). dmm's own colours pass because ``paint`` escapes
the text it paints first and writes the colour codes' ESC as a marker that holds a random
number drawn when the process starts, which no memory text can contain; the stream turns
markers into ESC after escaping.

Colour is on only for a terminal, never when NO_COLOR is set (https://no-color.org) or
TERM is "dumb"; piped output is plain text and tab-separated rows with --no-headers.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import sys

import click

# every C0 control but tab and newline, DEL and the C1 controls -> a visible \uXXXX
_CONTROL = {c: f"\\u{c:04x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20),
                                          *range(0x7F, 0xA0))}
_ESC_MARK = f"\ue000{os.urandom(8).hex()}\ue001"  # dmm's own ESC, unguessable by memory text


_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape(text: str) -> str:
    """``text`` with control characters shown, and dmm's own colour codes made real (a search
    first: most text has none, and a 5 MB JSON answer costs 5 ms instead of 300)."""
    if _CONTROL_RE.search(text):
        text = _CONTROL_RE.sub(lambda m: _CONTROL[ord(m.group())], text)
    return text.replace(_ESC_MARK, "\x1b") if "\ue000" in text else text


class _Escaping(io.TextIOWrapper):
    """An output stream that writes everything through ``escape``; ``tty``: whether it is a
    terminal (where colour may be shown)."""

    tty = False

    def write(self, text: str) -> int:
        return super().write(escape(text))


def escape_output() -> None:
    """Make stdout and stderr escape control characters, whatever they are connected to."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            if isinstance(stream, _Escaping):
                continue
            tty = stream.isatty()
            stream.flush()
            wrapped = _Escaping(stream.buffer, encoding=stream.encoding, errors=stream.errors,
                                line_buffering=tty or stream.line_buffering)
        except (AttributeError, ValueError, OSError):
            continue  # not a real file stream (tests, embedding): leave it as it is
        wrapped.tty = tty
        setattr(sys, name, wrapped)


def colour(err: bool = False) -> bool:
    """Whether what goes to stdout (stderr with ``err``) may be coloured."""
    stream = sys.stderr if err else sys.stdout
    return (getattr(stream, "tty", False) and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb")


def paint(text: str, fg: str | None = None, bold: bool | None = None, dim: bool | None = None,
          err: bool = False) -> str:
    """``text`` in a colour when the stream shows colour (see ``colour``); else as it is. The
    text's own control characters are escaped first: only dmm's colour codes become real."""
    if not text or not colour(err):
        return text
    return click.style(text.translate(_CONTROL), fg=fg, bold=bold, dim=dim).replace(
        "\x1b", _ESC_MARK)


# colours of things that recur: conflict types, decisions, diff lines
KIND_COLOURS = {"contradictory": "red", "stale": "magenta", "supersession": "cyan",
                "duplicate": "yellow", "scope_overlap": "blue",
                "approved": "green", "modified": "green", "resolved": "green", "rejected": "red",
                "withdrawn": "yellow", "deferred": "yellow", "proposed": "cyan"}


def paint_kind(text: str) -> str:
    """A conflict type or a decision in its colour ("resolved:merge" as "resolved")."""
    return paint(text, fg=KIND_COLOURS.get(text.split(":", 1)[0]))


def paint_diff(diff: str) -> str:
    """A unified diff with added lines green, removed ones red and hunk headers cyan."""
    if not colour():
        return diff
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            out.append(paint(line, bold=True))
        elif line.startswith("+"):
            out.append(paint(line, fg="green"))
        elif line.startswith("-"):
            out.append(paint(line, fg="red"))
        elif line.startswith("@@"):
            out.append(paint(line, fg="cyan"))
        else:
            out.append(line)
    return "\n".join(out) + ("\n" if diff.endswith("\n") else "")


no_headers_option = click.option("--no-headers", is_flag=True,
                                 help="Rows only, tab-separated, no header (for scripts).")


def table(rows: list[tuple], headers: tuple[str, ...], no_headers: bool = False,
          fit: int | None = -1, colours: dict[int, object] | None = None) -> str:
    """Rows for people (tabulate: a header row and a rule, numbers right-aligned) or, with
    ``no_headers``, tab-separated rows for scripts with every cell whole.

    On a terminal the ``fit`` column (the last by default; None: none) is shortened with "…"
    so each row fits the width; piped output keeps every cell whole. ``colours`` maps a column
    to a function that paints a cell (applied after the widths are known)."""
    if no_headers:
        return "\n".join("\t".join(_plain(c) for c in row) for row in rows)
    from tabulate import tabulate

    rows = [tuple(_plain(c) if isinstance(c, str) else c for c in row) for row in rows]
    if fit is not None and rows and sys.stdout.isatty():
        rows = _fitted(rows, headers, fit % len(headers))
    words = [i for i in range(len(headers))  # ids like 0017 or 1e3 stay as written
             if not rows or not all(isinstance(r[i], (int, float)) for r in rows)]
    text = tabulate(rows, headers=headers, tablefmt="simple", numalign="right",
                    disable_numparse=words, floatfmt=".2f")
    if not colours or not colour():
        return text
    return _painted(text, rows, colours)


def _plain(cell: object) -> str:
    """One line per cell: a tab or newline in a title must not break the row."""
    return " ".join(str(cell).split()) if isinstance(cell, str) else str(cell)


def _fitted(rows: list[tuple], headers: tuple[str, ...], fit: int) -> list[tuple]:
    width = shutil.get_terminal_size().columns
    # tabulate's layout: a column is as wide as its widest cell, and at least its header plus
    # two; columns are two spaces apart
    others = sum(max(len(str(h)) + 2, *(len(_cell(r[i])) for r in rows)) + 2
                 for i, h in enumerate(headers) if i != fit)
    room = max(len(headers[fit]) + 2, width - others)
    return [tuple(_cut(c, room) if i == fit else c for i, c in enumerate(r)) for r in rows]


def _cell(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _cut(cell: object, room: int) -> str:
    text = str(cell)
    return text if len(text) <= room else text[:room - 1] + "…"


def _painted(text: str, rows: list[tuple], colours: dict[int, object]) -> str:
    """Paint cells in the already laid-out table: the cell's text is replaced in its row at
    the column's position, so widths stay those of the plain text."""
    lines = text.split("\n")
    header, rule, body = lines[0], lines[1], lines[2:]
    starts, pos = [], 0
    for dashes in rule.split("  "):
        starts.append(pos)
        pos += len(dashes) + 2
    out = [header, rule]
    for line, row in zip(body, rows):
        for column in sorted(colours, reverse=True):
            start = starts[column]
            cell = _cell(row[column])
            at = line.find(cell, start)
            if at == start or (at > start and not line[start:at].strip()):
                line = line[:at] + colours[column](cell) + line[at + len(cell):]
        out.append(line)
    return "\n".join(out)
