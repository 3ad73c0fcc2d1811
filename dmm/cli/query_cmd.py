"""`dmm query`."""

from __future__ import annotations

import sys

import click

from dmm.cli.common import emit_json, json_option, workspace
from dmm.memory.model import SCOPES
from dmm.query.run import MAX_BUDGET


@click.command("query")
@click.argument("task")
@click.option("--budget", type=click.IntRange(min=1, max=MAX_BUDGET), metavar="TOKENS",
              help="Token budget of the pack, baseline included [default: query.default_budget "
                   "in .dmm/config.toml, 1200].")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES[1:]),
              help="Only retrieve memories of this scope (repeatable). Baseline is always in.")
@click.option("--tag", "all_tags", multiple=True, metavar="TAG",
              help="Only retrieve memories with this tag (repeat, or TAG,TAG: all of them, as "
                   "`dmm list --tag`).")
@click.option("--tags", default="", hidden=True)  # the old spelling: any of these tags
@click.option("--exclude-ephemeral", is_flag=True, help="Leave out ephemeral memories.")
@click.option("--include-deprecated", is_flag=True,
              help="Also consider deprecated memories (left out by default).")
@json_option
@click.pass_context
def command(ctx: click.Context, task: str, budget: int | None, scopes: tuple[str, ...],
            all_tags: tuple[str, ...], tags: str, exclude_ephemeral: bool,
            include_deprecated: bool, as_json: bool) -> int:
    """Print the Memory Pack for TASK: the memories an agent needs for it.

    The pack holds every baseline memory in full, then the active memories most relevant to
    TASK (ranked by relevance, priority and confidence) until the token budget is used;
    memories that did not fit are listed as excluded. Describe the task in a sentence; use
    "-" to read it from stdin.

    \b
    Examples:
      dmm query "add pagination to the orders endpoint" --budget 1200
      dmm query "how do we release?" --scope project --json
    """
    from dmm.query.run import memory_pack

    if task == "-":
        task = sys.stdin.read()
    ws = workspace(ctx)
    pack = memory_pack(ws, task, budget=budget, scopes=scopes, tags=tuple(tags.split(",")),
                       all_tags=tuple(t for tag in all_tags for t in tag.split(",")),
                       exclude_ephemeral=exclude_ephemeral,
                       include_deprecated=include_deprecated)
    if as_json:
        emit_json(pack.to_dict())
    else:
        from dmm.render import render

        click.echo(render("pack.md.j2", pack=pack, stats=pack.stats()), nl=False)
    return 0
