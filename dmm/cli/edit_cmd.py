"""`dmm edit`: open a memory in $EDITOR, then propose the edited text as an update."""

from __future__ import annotations

import click

from dmm.cli import complete
from dmm.cli.common import json_option, message, workspace
from dmm.errors import InvalidInputError


@click.command("edit")
@click.argument("memory", shell_complete=complete.memories)
@click.option("--reason", help="Why this change is needed (kept in git; asked on a terminal).")
@click.option("--proposed-by", metavar="NAME",
              help="Who proposes [default: your git user name; from an agent's shell, "
                   "the agent, as agent:NAME].")
@json_option
@click.pass_context
def command(ctx, memory, reason, proposed_by, as_json) -> int:
    """Open MEMORY (an id or a path) in $EDITOR and propose what you save as an update: a
    proposal branch for review, as `dmm write update` makes. Nothing is proposed when the
    text is left unchanged.

    Without a terminal, --reason is required and checked before the editor opens. When no
    proposal is made from what you saved (the precheck refused it, say), the text is kept in
    <git-dir>/dmm/edits/<id>.md and the command to propose it from there is printed.

    \b
    Examples:
      dmm edit mem_2026_03_14_007
      dmm edit project/api/errors.md --reason "now RFC 9457"
    """
    from dmm.cli.person import at_terminal
    from dmm.cli.write_cmd import _submit
    from dmm.index.refresh import open_fresh
    from dmm.lookup import find_memory
    from dmm.shellcmd import command as shell_command
    from dmm.store import text_of

    if not reason and not at_terminal():  # asked now: an edit is never made to be lost
        raise InvalidInputError("--reason is required when dmm cannot ask for it (no terminal): "
                                "nothing was opened", hint=shell_command(
                                    "dmm", "edit", memory, "--reason", "why it changes"))
    ws = workspace(ctx)
    conn, _ = open_fresh(ws)
    try:
        found, _ = find_memory(ws, conn, memory)
    finally:
        conn.close()
    before = text_of(ws.memory_dir, found.path, ws.config["store"]["max_file_bytes"])
    after = click.edit(before, extension=".md", require_save=True)
    if after is None or after == before:
        message(f"{found.path} is unchanged: nothing was proposed")
        return 0
    if not after.strip():
        raise InvalidInputError("the editor left the memory empty: nothing was proposed",
                                hint="to retire it, use `dmm write deprecate --memory ...`")
    code = 1
    try:
        if not reason:
            reason = click.prompt("Reason for the change", err=True)
        code = _submit(ctx, as_json, type="update", path=found.path, reason=reason,
                       content=after, proposed_by=proposed_by)
        return code
    finally:
        if code != 0:
            _keep(ws, found, after)


def _keep(ws, found, text: str) -> None:
    """Keep the edited text of a proposal that was not made (<git-dir>/dmm/edits/), and say
    where and how to propose it from there."""
    from dmm.fsutil import state_folder, write_atomic
    from dmm.shellcmd import command as shell_command

    folder = state_folder(state_folder(ws.state_dir) / "edits")
    kept = folder / f"{found.id}.md"
    write_atomic(kept, text)
    again = shell_command("dmm", "write", "update", "--memory", found.id, "--file", str(kept),
                          "--reason", "...")
    message(f"your edited text is kept in {kept}; propose it with `{again}`")
