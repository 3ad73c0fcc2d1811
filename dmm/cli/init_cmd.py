"""`dmm init`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, message, workspace


@click.command("init")
@json_option
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> int:
    """Create the .dmm/ memory store in this git repository.

    Creates the scope folders under .dmm/memory/, config.toml with documented defaults,
    BOOT.md (instructions for agents), a gitignored .dmm/index/ for the cache and a starter
    baseline memory. Safe to run again: existing files are never overwritten.
    """
    from dmm.scaffold import init

    ws = workspace(ctx, require_init=False)
    result = init(ws)
    if as_json:
        emit_json(result.to_dict())
    elif result.created:
        message(f"Initialised dmm in {ws.root / '.dmm'} ({len(result.created)} files created)")
        for path in result.created:
            message(f"  created {path}")
        message("Next: commit the store (git add .dmm && git commit -m 'Add dmm memory'), "
                "then try: dmm query \"<your task>\"")
    else:
        message(f"dmm is already initialised in {ws.root / '.dmm'}: nothing changed")
    return 0
