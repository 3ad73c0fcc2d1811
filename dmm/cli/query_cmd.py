"""`dmm query`."""

from __future__ import annotations

import sys

import click

from dmm.cli.common import emit_json, json_option, message, workspace
from dmm.memory.model import SCOPES
from dmm.query import MAX_BUDGET


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
    from dmm.background.client import query_request, via_background

    if task == "-":
        task = sys.stdin.read()
    ws = workspace(ctx)
    answer, note = via_background(ws, query_request(
        task, budget=budget, scopes=scopes, tags=tags, all_tags=all_tags,
        exclude_ephemeral=exclude_ephemeral, include_deprecated=include_deprecated,
        as_json=as_json))
    # the pack says why it is ranked by words (a note an agent reading it sees too); the
    # note goes to stderr as well where the output is JSON, for the person running it
    if answer is not None:  # the repository's background process, with the model loaded
        for text in (answer.get("notes") or ()) if as_json else ():
            message(f"note: {text}")
        click.echo(answer["out"], nl=False)
        return 0
    from dmm.query.run import memory_pack

    pack = memory_pack(ws, task, budget=budget, scopes=scopes, tags=tuple(tags.split(",")),
                       all_tags=tuple(t for tag in all_tags for t in tag.split(",")),
                       exclude_ephemeral=exclude_ephemeral,
                       include_deprecated=include_deprecated)
    if note and not pack.notes:  # the background process could not answer: why
        pack.notes.append(note)
    for text in pack.notes if as_json else ():
        message(f"note: {text}")
    if as_json:
        emit_json(pack.to_dict())
    else:
        from dmm.render import render

        click.echo(render("pack.md.j2", pack=pack, stats=pack.stats()), nl=False)
    return 0
