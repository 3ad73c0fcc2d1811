"""What reaches a person's terminal: control characters escaped, colour where it helps
reading, tables that fit the width.

Memory text is written by agents and colleagues: an escape sequence in it could hide words
from the person reading (ESC[8m) while an agent still reads them, or rewrite the screen or a
window title (OSC, ESC]0;...) when piped into a pager or `cat`, and a bidi override (U+202E)
shows a line's words in another order than the one an agent reads. So stdout and stderr show
every control character, every character that reorders text and every byte that was not
UTF-8 as \\uXXXX, on a terminal and piped alike (JSON is unchanged by this: inside
its strings \\uXXXX is the same character). dmm's own colours pass because ``paint`` escapes
the text it paints first and writes the colour codes' ESC as a marker that holds a random
number drawn when the process starts, which no memory text can contain; the stream turns
markers into ESC after escaping.

Colour (``--color=auto``, the default) is on only for a terminal whose TERM is not "dumb",
never when NO_COLOR is set (https://no-color.org); FORCE_COLOR or CLICOLOR_FORCE turn it on
for a pipe too, and ``--color=always|never`` decide over everything. Piped output is plain
text, and tab-separated rows with --no-headers.

Long output is paged as git pages it (``paged``): through $DMM_PAGER, else $PAGER, else
``less`` with LESS=FRX (quit when it fits one screen, keep colours, leave the screen as it
is), only when stdin and stdout are a terminal; ``--no-pager`` turns it off.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import sys
from typing import Iterator

import click

from dmm.controls import CONTROL, shown

_ESC_MARK = f"\ue000{os.urandom(8).hex()}\ue001"  # dmm's own ESC, unguessable by memory text


def escape(text: str) -> str:
    """``text`` with control characters shown, and dmm's own colour codes made real (a search
    first: most text has none, and a 5 MB JSON answer costs 5 ms instead of 300)."""
    text = shown(text)  # dmm/controls.py
    return text.replace(_ESC_MARK, "\x1b") if "\ue000" in text else text


class _Escaping(io.TextIOWrapper):
    """An output stream that writes everything through ``escape``; ``tty``: whether it is a
    terminal (where colour may be shown)."""

    tty = False

    def write(self, text: str) -> int:
        return super().write(escape(text))


COLOR_MODES = ("auto", "always", "never")
_settings = {"color": "auto", "pager": True, "quiet": False}


def set_color_mode(mode: str) -> None:
    """``--color``: auto, always or never (a pipe gets colour with always)."""
    _settings["color"] = mode


def set_pager(enabled: bool) -> None:
    _settings["pager"] = enabled


def set_quiet(quiet: bool) -> None:
    _settings["quiet"] = quiet


def quiet() -> bool:
    """--quiet: stderr carries only warnings and errors."""
    return _settings["quiet"]


def _forced() -> bool | None:
    """Colour decided whatever the stream is: True, False, or None to ask the stream."""
    mode = _settings["color"]
    if mode != "auto":
        return mode == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if any(os.environ.get(k, "0") not in ("", "0") for k in ("FORCE_COLOR", "CLICOLOR_FORCE")):
        return True
    return None


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
    if not isinstance(stream, (_Escaping, _Capture)):
        return False  # not a real stream (tests, embedding): nothing turns markers into ESC
    forced = _forced()
    if forced is not None:
        return forced
    return getattr(stream, "tty", False) and os.environ.get("TERM") != "dumb"


def paint(text: str, fg: str | None = None, bold: bool | None = None, dim: bool | None = None,
          err: bool = False) -> str:
    """``text`` in a colour when the stream shows colour (see ``colour``); else as it is. The
    text's own control characters are escaped first: only dmm's colour codes become real."""
    if not text or not colour(err):
        return text
    return click.style(text.translate(CONTROL), fg=fg, bold=bold, dim=dim).replace(
        "\x1b", _ESC_MARK)


# colours of things that recur: conflict types, decisions, diff lines
KIND_COLOURS = {"contradictory": "red", "stale": "magenta", "supersession": "cyan",
                "duplicate": "yellow", "scope_overlap": "blue",
                "approved": "green", "modified": "green", "resolved": "green", "rejected": "red",
                "withdrawn": "yellow", "deferred": "yellow", "proposed": "cyan", "flagged": "magenta"}


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


def table(rows: list[tuple], headers: tuple, no_headers: bool = False,
          colours: dict[int, object] | None = None) -> str:
    """Rows for people (tabulate's layout: a header row and a rule, numbers right-aligned) or, with
    ``no_headers``, tab-separated rows for scripts with every cell whole.

    ``headers`` are column names or ``tables.Col`` specs (plain names: the last is the
    title). On a terminal the table fits the width as gh lays it out (see tables.py); piped
    output keeps every column and every cell whole. ``colours`` maps a column to a function
    that paints a cell (applied after the widths are known)."""
    from dmm.cli.tables import as_cols, fit

    if no_headers:
        return "\n".join("\t".join(_plain(c) for c in row) for row in rows)
    from tabulate import tabulate

    cols = as_cols(tuple(headers))
    rows = [tuple(_plain(c) if isinstance(c, str) else c for c in row) for row in rows]
    shown = list(range(len(cols)))
    if rows and sys.stdout.isatty():
        shown, rows = fit(rows, cols, shutil.get_terminal_size().columns)
    names = [cols[i].name for i in shown]
    words = [k for k in range(len(shown))  # ids like 0017 or 1e3 stay as written
             if not rows or not all(isinstance(r[k], (int, float)) for r in rows)]
    text = _simple(rows, names, words)
    if text is None:
        # tabulate 0.9 fails on a list of columns with no rows (a store of no memory)
        text = tabulate(rows, headers=names, tablefmt="simple", numalign="right",
                        disable_numparse=words if rows else True, floatfmt=".2f")
    colours = {shown.index(i): f for i, f in (colours or {}).items() if i in shown}
    if not colours or not colour():
        return text
    return _painted(text, rows, colours)


def _simple(rows: list[tuple], names: list[str], words: list[int]) -> str | None:
    """tabulate's "simple" table, byte for byte, for a table of plain printable ASCII (None
    for any other: tabulate lays it out). tabulate inspects every cell for its type and width,
    1.3 s for the 10,000 rows of `dmm list` at 10,000 memories; this is ~50 ms.
    tests/cli/test_tables.py compares the two."""
    if not rows or any(len(r) != len(names) for r in rows):
        return None
    columns = []
    for k, name in enumerate(names):
        cells = [r[k] for r in rows]
        if k in words:
            texts = cells
            if not all(isinstance(c, str) and c.isascii() and c.isprintable() for c in texts):
                return None
            right = False
        else:
            if any(isinstance(c, bool) for c in cells):
                return None
            as_float = any(isinstance(c, float) for c in cells)
            if as_float and not all(math.isfinite(c) for c in cells):
                return None
            texts = [f"{c:.2f}" if as_float else str(c) for c in cells]
            right = True
        if not (name.isascii() and name.isprintable()):
            return None
        width = max([len(name) + 2, *map(len, texts)])
        pad = str.rjust if right else str.ljust
        columns.append((pad(name, width), "-" * width, [pad(t, width) for t in texts]))
    lines = ["  ".join(c[0] for c in columns), "  ".join(c[1] for c in columns)]
    lines += ["  ".join(cells) for cells in zip(*(c[2] for c in columns))]
    return "\n".join(line.rstrip() for line in lines)


def _plain(cell: object) -> str:
    """One line per cell: a tab or newline in a title must not break the row."""
    return " ".join(str(cell).split()) if isinstance(cell, str) else str(cell)


def _cell(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


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


class _Capture(io.StringIO):
    """What a paged command prints, held until it is known whether it fits one screen."""

    encoding = "utf-8"
    tty = True

    def isatty(self) -> bool:  # the text is for the terminal the pager runs on
        return True


def pager_command() -> str | None:
    """The pager to use, as git chooses one: $DMM_PAGER, $PAGER, else less; "" or "cat"
    mean none."""
    for key in ("DMM_PAGER", "PAGER"):
        if key in os.environ:
            chosen = os.environ[key].strip()
            return None if chosen in ("", "cat") else chosen
    return "less"


@contextlib.contextmanager
def paged() -> Iterator[None]:
    """Page what the block prints to stdout when it does not fit the screen (stdin and stdout
    a terminal, no --no-pager, a pager configured). Messages on stderr are not paged."""
    out = sys.stdout
    command = pager_command()
    if not (_settings["pager"] and command and getattr(out, "tty", False)
            and sys.stdin.isatty()):
        yield
        return
    held = _Capture()
    sys.stdout = held
    try:
        yield
    finally:
        sys.stdout = out
        text = held.getvalue()
        if text:
            _show(out, text, command)


def _show(out, text: str, command: str) -> None:
    size = shutil.get_terminal_size()
    lines = text.splitlines()
    if len(lines) < size.lines and all(len(line) <= size.columns for line in lines):
        out.write(text)  # fits one screen: no pager to start and quit
        out.flush()
        return
    os.environ["PAGER"] = command
    os.environ.setdefault("LESS", "FRX")
    os.environ.setdefault("LV", "-c")
    out.flush()
    # click adds a newline of its own after the text: the text's own would be a blank line
    click.echo_via_pager(escape(text.removesuffix("\n")), color=colour())
