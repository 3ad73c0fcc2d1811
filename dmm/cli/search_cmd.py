"""`dmm search`: the memories whose text contains words (`dmm list --grep`)."""

from __future__ import annotations

import click

from dmm.cli.common import json_option
from dmm.cli.terminal import no_headers_option
from dmm.memory.model import SCOPES


@click.command("search")
@click.argument("words", nargs=-1, required=True)
@click.option("--scope", "scopes", multiple=True, type=click.Choice(SCOPES),
              help="Only this scope (repeat for several).")
@click.option("--tag", "tags", multiple=True, metavar="TAG",
              help="Only memories with this tag (repeat, or TAG,TAG: all of them).")
@click.option("--status", type=click.Choice(["active", "deprecated", "all"]), default="active",
              show_default=True)
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000))
@no_headers_option
@json_option
@click.pass_context
def command(ctx, words, scopes, tags, status, limit, no_headers, as_json) -> int:
    """The memories whose title, text, tags or path contain every one of WORDS (any case; quote
    a phrase). Plain text search; `dmm query` ranks by relevance instead.

    \b
    Examples:
      dmm search retry backoff
      dmm search "status 413" --status all
    """
    from dmm.cli.list_cmd import command as list_command

    return ctx.invoke(list_command, scopes=scopes, tags=tags, words=words, status=status,
                      under="", older_than=None, newer_than=None, sort="path", reverse=False,
                      limit=limit, no_headers=no_headers, as_json=as_json)
