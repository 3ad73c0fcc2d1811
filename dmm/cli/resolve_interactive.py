"""`dmm conflicts resolve --interactive`: walk through open conflicts on a terminal.

Shows both memories side by side with the evidence and a recommendation (the automatic
resolver's verdict), and takes one key per conflict. Every decision is its own commit as soon
as it is made, so quitting half-way (q, Ctrl-C, Ctrl-D) leaves everything consistent.
"""

from __future__ import annotations

import shutil
import sys

import click

from dmm.cli.common import message, open_index
from dmm.cli.prompt import Prompter
from dmm.cli.side_by_side import side_by_side
from dmm.cli.terminal import paint, paint_kind
from dmm.errors import DmmError, ExitCode, InvalidInputError

KEYS = {"a": "keep A (deprecate B)", "b": "keep B (deprecate A)", "m": "merge", "c": "clarify",
        "d": "dismiss", "f": "defer", "s": "skip", "q": "quit"}


def _show(step, a, b, index: int, total: int) -> None:
    c = step.conflict
    width = shutil.get_terminal_size((100, 24)).columns
    click.echo("")
    click.echo(paint(f"[{index}/{total}] {c.conflict_id}: ", bold=True) + paint_kind(c.type)
               + paint(f", score {c.confidence:.2f}", bold=True))
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


def _choose(ask) -> str:
    return ask("  ".join(f"[{k}] {v}" for k, v in KEYS.items()), choices=list(KEYS))


def _request(prompter, key: str, step, a, b, added: dict[str, int]):
    """The ResolutionRequest for ``key``, asking for what it needs; None to ask again.
    ``added``: when git added each memory (which is newer, for a merge draft)."""
    from dmm.conflicts.resolver import ResolutionRequest, merge_draft

    ask = prompter.ask
    cid = step.conflict.conflict_id
    if key in "ab":
        keep, drop = (a, b) if key == "a" else (b, a)
        reason = ask("Reason", default=f"{keep.id} is the current rule")
        return ResolutionRequest(cid, "deprecate", reason, target=drop.id)
    if key == "m":
        edited = click.edit(merge_draft(a, b, added), extension=".md",
                            require_save=True)
        prompter.forget()  # a Ctrl-C typed in the editor was the editor's
        if not edited or not edited.strip():
            message("merge cancelled: the draft was not saved")
            return None
        reason = ask("Reason", default="merged into one memory")
        return ResolutionRequest(cid, "merge", reason, content=edited)
    if key == "c":
        notes = {}
        for label, m in (("A", a), ("B", b)):
            text = ask(f"Scope or condition for {label} ({m.id}), empty to leave it",
                       default="")
            if text.strip():
                notes[m.id] = text
        if not notes:
            message("nothing to clarify")
            return None
        reason = ask("Reason", default="they apply in different situations")
        return ResolutionRequest(cid, "clarify", reason, clarifications=notes)
    if key == "d":
        return ResolutionRequest(cid, "dismiss", ask("Reason"))
    until = ask("Defer until (YYYY-MM-DD), empty: until someone decides", default="")
    return ResolutionRequest(cid, "defer", ask("Reason"), until=until.strip() or None)


def _need_terminal() -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise InvalidInputError("--interactive needs a terminal",
                                hint="use `dmm conflicts resolve CONFLICT_ID --action ...` "
                                     "or `--auto` in scripts")


def auto_then_ask(ctx, run_auto, scopes: list[str] | None = None) -> int:
    """Seed 002's whole workflow (`resolve --auto --interactive`): ``run_auto`` resolves what
    dates, confidence and structure settle (and reports it), then the person is asked about
    every conflict still open."""
    _need_terminal()  # before anything is committed: the second half needs the person
    code = run_auto()
    if code != ExitCode.OK:
        message("some automatic resolutions failed (above): asking about what is left")
    message("now the conflicts left for a person:")
    return walk(ctx, scopes)


def walk(ctx, scopes: list[str] | None = None) -> int:
    from dmm.conflicts.service import added_order, auto_plan, memories_of, resolve

    _need_terminal()
    ws, conn = open_index(ctx)
    done = skipped = 0
    prompter = Prompter()
    try:
        steps = auto_plan(ws, conn, min_confidence=0.0, scopes=scopes)
        mems = memories_of(conn, [s.conflict for s in steps])
        added = added_order(ws, mems)
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
                    with prompter:  # no Ctrl-C is lost, whenever it comes
                        key = _choose(prompter.ask)
                        request = _request(prompter, key, step, a, b, added) if key in \
                            "abmcdf" else None
                except EOFError:  # the input ended (Ctrl-D): as q
                    key = "q"
                except KeyboardInterrupt:  # Ctrl-C: stop, and say so in the exit status
                    key = "interrupted"
                if key in ("q", "interrupted"):
                    message(f"stopped: {done} resolved, {skipped} skipped; every decision "
                            "made so far is committed")
                    return ExitCode.OK if key == "q" else ExitCode.INTERRUPTED
                if key == "s":
                    skipped += 1
                    break
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
