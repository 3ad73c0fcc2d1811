"""Options and helpers shared by the commands: workspace lookup, --json, progress bars."""

from __future__ import annotations

import re
import sys
from typing import Any, Callable

import click

from dmm.render import to_json
from dmm.workspace import Workspace

json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print machine-readable JSON on stdout.")


def workspace(ctx: click.Context, require_init: bool = True, repair: bool = True) -> Workspace:
    """The repository the command works on. ``repair``: first finish a dmm landing that a
    killed process left half done (never from inside a git hook, which must not write
    git's index)."""
    repo = (ctx.find_root().obj or {}).get("repo")
    ws = Workspace.find(repo, require_init=require_init)
    _opened.append(ws)
    if require_init:
        ws.config  # noqa: B018 - a broken config.toml is reported by every command, up front
    if repair and ws.landing_pending():
        _finish_landing(ws)
    return ws


_opened: list[Workspace] = []  # what this process's command opened, for the error handler


def opened_workspace() -> Workspace | None:
    """The repository the running command opened (None before it found one)."""
    return _opened[-1] if _opened else None


def open_index(ctx: click.Context):
    """(workspace, a fresh cache connection), with a progress bar while many files are read."""
    from dmm.index.refresh import open_fresh

    ws = workspace(ctx)
    progress, finish = progress_bar("indexing memories")
    try:
        conn, _ = open_fresh(ws, progress)
    finally:
        finish()
    return ws, conn


def _finish_landing(ws: Workspace) -> None:
    from dmm.errors import DmmError
    from dmm.gitrepo import Git
    from dmm.landing import recover

    try:
        note = recover(Git(ws.root))
    except (DmmError, OSError) as exc:
        message(f"dmm: could not finish an interrupted landing: {getattr(exc, 'message', exc)}")
        return
    if note:
        message(note)


def emit_json(data: Any) -> None:
    click.echo(to_json(data), nl=False)


_LABEL = re.compile(r"^(\s*)(warning|error|note):")
_LABEL_COLOURS = {"warning": "yellow", "error": "red", "note": "cyan"}


def message(text: str) -> None:
    """A message for the person at the terminal: always stderr, never mixed with data; a
    leading "warning:", "error:" or "note:" in its colour."""
    label = _LABEL.match(text)
    from dmm.cli.terminal import quiet

    if quiet() and not (label and label.group(2) in ("warning", "error")):
        return
    if label:
        from dmm.cli.terminal import paint

        word = label.group(2)
        text = (label.group(1) + paint(word + ":", fg=_LABEL_COLOURS[word], err=True)
                + text[label.end():])
    click.echo(text, err=True)


def progress_bar(label: str, min_items: int = 200) -> tuple[Callable[[int, int], None] | None,
                                                            Callable[[], None]]:
    """A (progress, finish) pair drawing a bar on stderr when it is a terminal; else no-ops."""
    from dmm.cli.terminal import quiet

    if not sys.stderr.isatty() or quiet():
        return None, lambda: None
    state: dict = {}

    def progress(done: int, total: int) -> None:
        if total < min_items:
            return
        if "bar" not in state:
            # the real stderr: the bar's own carriage returns are not memory text to escape
            state["bar"] = click.progressbar(length=total, label=label, file=sys.__stderr__)
            state["bar"].__enter__()
        state["bar"].update(done - state.get("done", 0))
        state["done"] = done

    def finish() -> None:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)

    return progress, finish


class When(click.ParamType):
    """A time filter, the one way every command takes one: a number of days ago (30) or a
    date (2026-11-01). The value is the number of whole days before today."""

    name = "DAYS|DATE"

    def convert(self, value, param, ctx) -> int:
        import datetime as dt

        if isinstance(value, int):
            return value
        text = str(value).strip()
        if text.isdigit():
            return int(text)
        try:
            day = dt.date.fromisoformat(text[:10])
        except ValueError:
            self.fail(f"{value!r} is neither a number of days nor a date (YYYY-MM-DD)",
                      param, ctx)
        return max(0, (dt.date.today() - day).days)


WHEN = When()


MAX_INPUT_BYTES = 1_048_576


def read_text_input(path: str) -> str:
    """The UTF-8 text of the file at ``path`` (``-``: stdin), or a clear error: a binary,
    non-UTF-8, missing or huge file is bad input, not a crash."""
    from dmm.errors import InvalidInputError

    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(path, "rb") as fh:
                data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InvalidInputError(f"{path} is larger than {MAX_INPUT_BYTES} bytes: a memory is "
                                "a short text")
    if b"\0" in data:
        raise InvalidInputError(f"{path} is a binary file, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not UTF-8 text (byte {exc.start})") from None


def say_history_gap(git) -> None:
    """Say on stderr when this clone is shallow or partial: its queue and log are incomplete
    (what landed before its first commit cannot be seen), never silently empty."""
    from dmm.team.authority import history_gap

    gap = history_gap(git)
    if gap:
        message(f"warning: {gap}")


def emit_json_stream(before: dict, key: str, items, after: Callable[[], dict]) -> None:
    """emit_json({**before, key: list(items), **after()}) written as the items come: the
    same text, byte for byte, without holding every item (or all their text) at once. The
    list is the last thing asked of the store, so ``after`` (a count, say) is called once
    ``items`` is spent."""
    def out(text: str) -> None:
        click.echo(text, nl=False)

    head = to_json(before).rstrip("\n")
    out((head[:-1].rstrip() + ",\n" if before else "{\n") + f"  {to_json(key).strip()}: [")
    chunk, first = [], True
    for item in items:
        text = to_json(item).rstrip("\n").replace("\n", "\n    ")
        chunk.append(("\n    " if first else ",\n    ") + text)
        first = False
        if len(chunk) >= 200:  # a write per 200 items: fewer calls, memory stays small
            out("".join(chunk))
            chunk = []
    out("".join(chunk) + ("]" if first else "\n  ]"))
    tail = to_json(after()).rstrip("\n")
    out((",\n" + tail[2:] if tail != "{}" else "\n}") + "\n")
