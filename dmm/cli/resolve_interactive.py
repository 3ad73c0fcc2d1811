"""`dmm conflicts resolve --interactive`: walk through open conflicts on a terminal.

Shows both memories side by side with the evidence and a recommendation (the automatic
resolver's verdict), and takes one key per conflict. Every decision is its own commit as soon
as it is made, so quitting half-way (q, Ctrl-C, Ctrl-D) leaves everything consistent.
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from itertools import zip_longest

import click

from dmm.cli.common import message
from dmm.cli.terminal import paint, paint_kind
from dmm.errors import DmmError, ExitCode, InvalidInputError

KEYS = {"a": "keep A (deprecate B)", "b": "keep B (deprecate A)", "m": "merge", "c": "clarify",
        "d": "dismiss", "f": "defer", "s": "skip", "q": "quit"}


def _column(label: str, memory, width: int) -> list[str]:
    head = [f"{label}: {memory.id} ({memory.scope})", f"{memory.path}",
            f"created {memory.created or '?'}, {memory.confidence}, priority {memory.priority}",
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


def _show(step, a, b, index: int, total: int) -> None:
    c = step.conflict
    width = shutil.get_terminal_size((100, 24)).columns
    click.echo("")
    click.echo(paint(f"[{index}/{total}] {c.conflict_id}: ", bold=True) + paint_kind(c.type)
               + paint(f", confidence {c.confidence:.2f}", bold=True))
    click.echo(c.description)
    click.echo(f"evidence: {c.evidence}")
    click.echo("")
    click.echo(side_by_side(a, b, width))
    click.echo("")
    if step.action:
        keep = "A" if step.keep == a.id else "B"
        click.echo(f"recommended: keep {keep} ({step.keep}): {step.why}")
    else:
        click.echo(f"recommended: {step.recommendation or 'your call'} ({step.why})")


def _choose() -> str:
    prompt = "  ".join(f"[{k}] {v}" for k, v in KEYS.items())
    return click.prompt(prompt, type=click.Choice(list(KEYS)), show_choices=False).strip()


def _request(key: str, step, a, b):
    """The ResolutionRequest for ``key``, asking for what it needs; None to ask again."""
    from dmm.conflicts.resolver import ResolutionRequest, merge_draft

    cid = step.conflict.conflict_id
    if key in "ab":
        keep, drop = (a, b) if key == "a" else (b, a)
        reason = click.prompt("Reason", default=f"{keep.id} is the current rule")
        return ResolutionRequest(cid, "deprecate", reason, target=drop.id)
    if key == "m":
        edited = click.edit(merge_draft(a, b), extension=".md", require_save=True)
        if not edited or not edited.strip():
            message("merge cancelled: the draft was not saved")
            return None
        reason = click.prompt("Reason", default="merged into one memory")
        return ResolutionRequest(cid, "merge", reason, content=edited)
    if key == "c":
        notes = {}
        for label, m in (("A", a), ("B", b)):
            text = click.prompt(f"Scope or condition for {label} ({m.id}), empty to leave it",
                                default="", show_default=False)
            if text.strip():
                notes[m.id] = text
        if not notes:
            message("nothing to clarify")
            return None
        reason = click.prompt("Reason", default="they apply in different situations")
        return ResolutionRequest(cid, "clarify", reason, clarifications=notes)
    reason = click.prompt("Reason")
    return ResolutionRequest(cid, "dismiss" if key == "d" else "defer", reason)


def walk(ctx) -> int:
    from dmm.cli.conflicts_cmd import _open
    from dmm.conflicts.service import auto_plan, memories_of, resolve

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InvalidInputError("--interactive needs a terminal",
                                hint="use `dmm conflicts resolve CONFLICT_ID --action ...` "
                                     "or `--auto` in scripts")
    ws, conn = _open(ctx)
    done = skipped = 0
    try:
        steps = auto_plan(ws, conn, min_confidence=0.0)
        mems = memories_of(conn, [s.conflict for s in steps])
        retired: set[str] = set()
        if not steps:
            message("No open conflicts.")
        for index, step in enumerate(steps, 1):
            a, b = (mems[m.memory_id] for m in step.conflict.memories)
            if retired & {a.id, b.id}:
                message(f"{step.conflict.conflict_id}: skipped, one of its memories was "
                        "retired above")
                continue
            _show(step, a, b, index, len(steps))
            while True:
                try:
                    key = _choose()
                except EOFError:  # the input ended (Ctrl-D): as q
                    key = "q"
                except click.Abort:  # Ctrl-C: stop, and say so in the exit status
                    key = "interrupted"
                if key in ("q", "interrupted"):
                    message(f"stopped: {done} resolved, {skipped} skipped; every decision "
                            "made so far is committed")
                    return ExitCode.OK if key == "q" else ExitCode.INTERRUPTED
                if key == "s":
                    skipped += 1
                    break
                request = _request(key, step, a, b)
                if request is None:
                    continue
                try:
                    result = resolve(ws, conn, request, conflict=step.conflict)
                except DmmError as exc:
                    message(f"error: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""))
                    continue
                retired |= set(result.memories_deprecated)
                done += 1
                message(f"{result.action_taken}: committed {result.commit[:12]}")
                break
    finally:
        conn.close()
    message(f"done: {done} resolved, {skipped} skipped")
    return ExitCode.OK
