"""The `dmm` command line: a thin click layer over the core packages.

Each command lives in its own module, is imported only when it runs, parses options, calls one
core function and renders the result (data to stdout, messages to stderr). Errors raised by the
core become one line on stderr and a documented exit code (docs/exit_codes.md), never a
traceback; set DMM_DEBUG=1 to see one for an unexpected error.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import click

from dmm import __version__
from dmm.errors import DmmError, ExitCode

COMMANDS = {
    "init": "dmm.cli.init_cmd",
    "query": "dmm.cli.query_cmd",
    "show": "dmm.cli.show_cmd",
    "validate": "dmm.cli.validate_cmd",
    "status": "dmm.cli.status_cmd",
    "reindex": "dmm.cli.reindex_cmd",
    "write": "dmm.cli.write_cmd",
    "review": "dmm.cli.review_cmd",
    "log": "dmm.cli.log_cmd",
    "history": "dmm.cli.history_cmd",
    "usage": "dmm.cli.usage_cmd",
    "conflicts": "dmm.cli.conflicts_cmd",
    "hooks": "dmm.cli.hooks_cmd",
}
INTERNAL_ERROR = 70


class LazyGroup(click.Group):
    """Imports a command's module only when that command is used (keeps `dmm query` fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        return importlib.import_module(COMMANDS[name]).command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"],
                                               "max_content_width": 100})
@click.option("-C", "--repo", type=click.Path(file_okay=False, path_type=Path),
              help="Run as if dmm was started in this directory (any folder of a repository).")
@click.version_option(__version__, prog_name="dmm")
@click.pass_context
def cli(ctx: click.Context, repo: Path | None) -> None:
    """dmm keeps an AI coding agent's memory as markdown files in .dmm/memory/ of a git
    repository, and hands the agent the memories that matter for its task.

    \b
    Start here:
      dmm init                                   create .dmm/ in this repository
      dmm query "add a REST endpoint" --budget 1200
                                                 the Memory Pack for a task
      dmm status                                 what the store holds, and its problems

    Every command works from any folder of the repository; --json gives machine-readable
    output wherever a command shows data.
    """
    if repo is not None and not repo.is_dir():
        raise click.BadParameter(f"{repo} is not a directory", param_hint="-C/--repo")
    ctx.obj = {"repo": repo}


def main(argv: list[str] | None = None) -> None:
    try:
        code = cli.main(args=argv, prog_name="dmm", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        code = 130
    except DmmError as exc:
        click.echo(f"error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        code = int(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        code = 130
    except BrokenPipeError:
        # Output piped into `head` and the like: not an error worth a message.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("DMM_DEBUG"):
            raise
        click.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
        click.echo("hint: this is a bug in dmm; run again with DMM_DEBUG=1 for a traceback "
                   "and report it", err=True)
        code = INTERNAL_ERROR
    sys.exit(code if isinstance(code, int) else ExitCode.OK)
