"""Tables that fit the terminal, the way gh lays them out: the columns that identify a row and
its title get room first; the others are abbreviated, shrunk, then dropped by priority.

Pure layout (no terminal access): ``fit`` takes the rows, the column specs and a width and
returns the columns to show with every cell cut to its width. ``terminal.table`` renders the
result with tabulate; piped output never goes through here (cells stay whole).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

GAP = 2  # tabulate's "simple" format: columns two spaces apart
PAD = 2  # ... and each at least as wide as its header plus two
TITLE_ROOM = 30  # what the title keeps before any other column is dropped


@dataclass(frozen=True)
class Col:
    """One column. ``role``: "id" (never cut, never dropped), "title" (room first, cut at
    its end last), "text" (cut at its end), "path" (cut in its middle: its start and its file
    name stay; a file name too long for that is cut at its start),
    "fixed" (never cut). ``drop``: dropped when even shrunk columns do not fit, lowest
    first (0: never). ``short``: an abbreviation of every cell of the column (a date without
    its time, a shorter commit), tried before anything is cut. ``min``: narrowest cut."""

    name: str
    role: str = "fixed"
    drop: int = 0
    short: Callable[[str], str] | None = None
    min: int = 12


def cell_text(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def as_cols(headers: tuple) -> list[Col]:
    """Plain header names become columns: the last one the title, the rest fixed."""
    cols = [h if isinstance(h, Col) else Col(h) for h in headers]
    if not any(c.role == "title" for c in cols) and all(not isinstance(h, Col) for h in headers):
        last = cols[-1]
        cols[-1] = Col(last.name, "title")
    return cols


def fit(rows: list[tuple], cols: list[Col], width: int) -> tuple[list[int], list[tuple]]:
    """(indexes of the columns shown, rows of those columns with cells cut to fit)."""
    n = len(cols)
    rows = [tuple(r) for r in rows]
    texts = [[cell_text(r[i]) for i in range(n)] for r in rows]
    header = [len(c.name) + PAD for c in cols]

    def natural(i: int) -> int:
        return max([header[i], *(len(t[i]) for t in texts)])

    widths = [natural(i) for i in range(n)]
    shown = list(range(n))

    def over() -> int:
        return sum(widths[i] for i in shown) + GAP * (len(shown) - 1) - width

    # 1. abbreviations (dates without the time, short commits)
    for i, c in enumerate(cols):
        if over() > 0 and c.short is not None:
            for t in texts:
                t[i] = c.short(t[i])
            widths[i] = natural(i)
    title = next((i for i, c in enumerate(cols) if c.role == "title"), None)
    floor = [max(header[i], min(c.min, widths[i])) for i, c in enumerate(cols)]
    if title is not None:
        floor[title] = max(header[title], min(TITLE_ROOM, widths[title]))
    shrinkable = [i for i, c in enumerate(cols) if c.role in ("text", "path")]
    # 2. text and paths shrink, the widest first, down to their floor
    _shrink(widths, floor, shrinkable, over)
    # 3. the title shrinks to the room it keeps
    if title is not None:
        _shrink(widths, floor, [title], over)
    # 4. columns go, by priority
    for i in sorted((i for i, c in enumerate(cols) if c.drop), key=lambda i: cols[i].drop):
        if over() <= 0:
            break
        shown.remove(i)
    # 5. the title, then the rest, shrink to their headers
    least = [max(header[i], min(6, widths[i])) for i in range(n)]
    for group in ([title] if title is not None else [], shrinkable):
        _shrink(widths, least, [i for i in group if i in shown], over)
    # 6. room left over goes back to what was cut: the title first
    for i in ([title] if title is not None else []) + shrinkable:
        if i in shown and over() < 0:
            widths[i] = min(natural(i), widths[i] - over())
    out = []
    for t in texts:
        out.append(tuple(_cut(t[i], widths[i], cols[i].role) if cols[i].role in
                         ("title", "text", "path") else t[i] for i in shown))
    # numbers stay numbers (tabulate aligns them right) where nothing changed them
    out = [tuple(r[i] if isinstance(r[i], (int, float)) and cell == cell_text(r[i]) else cell
                 for i, cell in zip(shown, row)) for r, row in zip(rows, out)]
    return shown, out


def _shrink(widths: list[int], floor: list[int], columns: list[int],
            over: Callable[[], int]) -> None:
    """Narrow ``columns``, the widest first, never below ``floor``, until nothing is over."""
    while over() > 0:
        room = [i for i in columns if widths[i] > floor[i]]
        if not room:
            return
        widest = max(room, key=lambda i: widths[i])
        others = [widths[i] for i in room if i != widest]
        target = max(floor[widest], max(others, default=floor[widest]),
                     widths[widest] - over())
        widths[widest] = target if target < widths[widest] else widths[widest] - 1


def _cut(text: str, room: int, role: str) -> str:
    if len(text) <= room:
        return text
    if role == "path":
        # the file name whole and as much of the start as fits ("project/ap…/errors.md"):
        # the first folder is the scope, the name says which file
        tail = text[text.rfind("/"):] if "/" in text else ""
        if tail and len(tail) + 3 <= room:
            return text[:room - len(tail) - 1] + "…" + tail
        return "…" + text[len(text) - room + 1:]
    return text[:room - 1] + "…"


def clip(text: str, room: int) -> str:
    """``text`` cut at its end to at most ``room`` characters, the cut marked with "…"."""
    return _cut(text, room, "text")


def short_date(text: str) -> str:
    """"2026-03-14 10:22" as "2026-03-14"."""
    return text[:10]


def short_commit(text: str) -> str:
    return text[:7]
