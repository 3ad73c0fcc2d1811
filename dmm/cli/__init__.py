"""The `dmm` command line: a thin click layer over the core packages.

Each command lives in its own module, is imported only when it runs, parses options, calls one
core function and renders the result (data to stdout, messages to stderr). Errors raised by the
core become one line on stderr and a documented exit code (docs/exit_codes.md), never a
traceback; set DMM_DEBUG=1 to see one for an unexpected error.
"""

from __future__ import annotations

import errno
import json
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
    "list": "dmm.cli.list_cmd",
    "show": "dmm.cli.show_cmd",
    "search": "dmm.cli.search_cmd",
    "validate": "dmm.cli.validate_cmd",
    "status": "dmm.cli.status_cmd",
    "reindex": "dmm.cli.reindex_cmd",
    "write": "dmm.cli.write_cmd",
    "edit": "dmm.cli.edit_cmd",
    "review": "dmm.cli.review_cmd",
    "log": "dmm.cli.log_cmd",
    "history": "dmm.cli.history_cmd",
    "usage": "dmm.cli.usage_cmd",
    "conflicts": "dmm.cli.conflicts_cmd",
    "hooks": "dmm.cli.hooks_cmd",
    "mcp": "dmm.cli.mcp_cmd",
    "serve": "dmm.cli.serve_cmd",
    "agent": "dmm.cli.agent_cmd",
    "sync": "dmm.cli.sync_cmd",
    "ci": "dmm.cli.ci_cmd",
}
ALIASES = {"ls": "list"}  # accepted, not listed in --help
INTERNAL_ERROR = 70


class LazyGroup(click.Group):
    """Imports a command's module only when that command is used (keeps `dmm query` fast)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        name = ALIASES.get(name, name)
        if name not in COMMANDS:
            return None
        return _with_output_options(importlib.import_module(COMMANDS[name]).command)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """A mistyped command gets the nearest names, as a mistyped subcommand does."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            near = difflib.get_close_matches(name, [*COMMANDS, *ALIASES], n=3, cutoff=0.6)
            hint = (" Did you mean " + " or ".join(f"'{n}'" for n in near) + "?") if near else ""
            ctx.fail(f"No such command '{name}'.{hint}")
        return super().resolve_command(ctx, args)


def _set_color(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        from dmm.cli.terminal import set_color_mode

        set_color_mode(value)


def _set_no_pager(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from dmm.cli.terminal import set_pager

        set_pager(False)


def _set_quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from dmm.cli.terminal import set_quiet

        set_quiet(True)


def _output_options(hidden: bool) -> list[click.Option]:
    return [click.Option(["--color"], type=click.Choice(["auto", "always", "never"]),
                         expose_value=False, is_eager=True, callback=_set_color, hidden=hidden,
                         help="Colour: auto (a terminal, unless NO_COLOR is set; FORCE_COLOR "
                              "or CLICOLOR_FORCE force it), always or never."),
            click.Option(["--no-pager"], is_flag=True, expose_value=False, is_eager=True,
                         callback=_set_no_pager, hidden=hidden,
                         help="Do not page long output ($DMM_PAGER, $PAGER or less -FRX).")] + [
            click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, is_eager=True,
                         callback=_set_quiet, hidden=hidden,
                         help="Only data, warnings and errors: no progress or notes on stderr.")]


def _with_output_options(command: click.Command) -> click.Command:
    """--color, --no-pager and --quiet are accepted after any command too (hidden in its
    help: the top-level help documents them)."""
    if not any(p.name == "no_pager" for p in command.params):
        command.params.extend(_output_options(hidden=True))
    for sub in getattr(command, "commands", {}).values():
        _with_output_options(sub)
    return command


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
    output wherever a command shows data, and turns an error into a JSON object on stdout
    ({"error", "hint", "exit_code"}).
    """
    if repo is not None and not repo.is_dir():
        raise click.BadParameter(f"{repo} is not a directory", param_hint="-C/--repo")
    ctx.obj = {"repo": repo}


cli.params.extend(_output_options(hidden=False))


def main(argv: list[str] | None = None) -> None:
    from dmm.cli.terminal import escape_output

    escape_output()
    code = _run(argv)
    if code == _CACHE_DAMAGED:
        code = _run(argv)  # once more, on the cache that was just rebuilt
        code = INTERNAL_ERROR if code == _CACHE_DAMAGED else code
    db = sys.modules.get("dmm.index.db")  # a command that never opened the cache has no note
    for note in (([db.FALLBACK_REASON] if db.FALLBACK_REASON else []) + db.NOTICES
                 if db is not None else []):
        click.echo(f"dmm: note: {note}", err=True)
    sys.exit(code if isinstance(code, int) else ExitCode.OK)


_CACHE_DAMAGED = -1


_FAILED: list[tuple[str, str | None]] = []  # what _error said, for --json


def _json_requested(argv: list[str] | None) -> bool:
    """Whether the command line asks for --json (options end at a bare "--")."""
    args = list(sys.argv[1:] if argv is None else argv)
    return "--json" in (args[:args.index("--")] if "--" in args else args)


def _run(argv: list[str] | None) -> int:
    """Run the command; on failure with --json, the error is also a JSON object on stdout
    ({"error", "hint", "exit_code"}), so that a program never has to parse prose."""
    _FAILED.clear()
    code = _run_command(argv)
    if code not in (0, _CACHE_DAMAGED) and _FAILED and _json_requested(argv):
        text, hint = _FAILED[0]
        click.echo(json.dumps({"error": text, "hint": hint, "exit_code": int(code)}))
    return code


def _run_command(argv: list[str] | None) -> int:
    try:
        code = cli.main(args=argv, prog_name="dmm", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()  # the help itself, as `dmm` alone shows it
        code = exc.exit_code
    except click.ClickException as exc:  # in dmm's one error style, with the command's help
        ctx = getattr(exc, "ctx", None)
        _error(exc.format_message(), f"`{ctx.command_path} --help` shows what it takes"
               if ctx is not None else "see the command's --help")
        code = exc.exit_code
    except click.exceptions.Abort:
        _error("aborted")
        code = ExitCode.INTERRUPTED
    except DmmError as exc:
        _error(exc.message, exc.hint)
        code = int(exc.exit_code)
    except KeyboardInterrupt:
        _error("interrupted")
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:
        # Output piped into `head` and the like: not an error worth a message.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        code = 0
    except OSError as exc:
        code = _os_error(exc)
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        sqlite3 = sys.modules.get("sqlite3")
        if sqlite3 is not None and isinstance(exc, sqlite3.DatabaseError):
            from dmm.cli.common import opened_workspace

            return _cache_error(exc, opened_workspace())
        if os.environ.get("DMM_DEBUG"):
            raise
        text = f"internal error: {type(exc).__name__}: {exc}"
        hint = ("this is a bug in dmm; run again with DMM_DEBUG=1 for a traceback and "
                "report it")
        click.echo(text, err=True)
        click.echo(f"hint: {hint}", err=True)
        _FAILED.append((text, hint))
        code = INTERNAL_ERROR
    return code if isinstance(code, int) else ExitCode.OK


def _error(text: str, hint: str | None = None) -> None:
    from dmm.cli.terminal import paint

    _FAILED.append((text, hint))
    click.echo(f"{paint('error:', fg='red', bold=True, err=True)} {text}", err=True)
    if hint:
        click.echo(f"{paint('hint:', fg='cyan', err=True)} {hint}", err=True)
    _say_if_recorded()


def _say_if_recorded() -> None:
    """A failure after dmm moved a ref (a landing, a new proposal branch) must not look like
    nothing happened."""
    gitrepo = sys.modules.get("dmm.gitrepo")  # never imported just to ask
    if gitrepo is not None and gitrepo.REFS_MOVED:
        click.echo("note: the change itself was recorded in git before this failed "
                   "(see `git log -1` and `dmm review list`)", err=True)


_IO_ERRNOS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exhausted",
              errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
              errno.EPERM: "permission denied", errno.EFBIG: "the file is too large"}


def _os_error(exc: OSError) -> int:
    what = _IO_ERRNOS.get(exc.errno or 0)
    where = f" ({exc.filename})" if exc.filename else ""
    if what is None:
        _error(f"{exc.strerror or exc}{where}")
        return ExitCode.IO_FAILED
    _error(f"{what}{where}: dmm could not write what it needed",
           "free some space or fix the permissions, then run the command again")
    return ExitCode.IO_FAILED


def _cache_error(exc: Exception, ws) -> int:
    """SQLite failed: a full disk or a busy cache is said as such; anything else means the
    cache is damaged. It is only a cache: remove it and (when nothing was recorded in git yet)
    run the command again."""
    text = str(exc)
    if "full" in text:
        _error(f"the disk is full: {text}", "free some space, then run the command again")
        return ExitCode.IO_FAILED
    if "locked" in text or "busy" in text:
        _error("the dmm cache is locked by another process",
               "wait for the other dmm command to finish")
        return ExitCode.BUSY
    if "readonly" in text:
        where = ws.state_dir if ws is not None else "the git folder's dmm/ folder"
        _error(f"cannot write the dmm cache: {text}", f"check the permissions of {where}")
        return ExitCode.IO_FAILED
    try:
        from dmm.index import db

        if ws is None:
            raise RuntimeError("no repository was opened")
        db.discard(ws.state_dir)
    except Exception as again:  # noqa: BLE001
        _error(f"the dmm cache is damaged ({text}) and could not be removed: {again}",
               f"delete {ws.state_dir if ws is not None else 'the cache'} by hand; it is "
               "rebuilt from the memory files")
        return ExitCode.IO_FAILED
    click.echo(f"dmm: the cache was damaged ({text}); it was rebuilt from the memory files",
               err=True)
    gitrepo = sys.modules.get("dmm.gitrepo")
    if gitrepo is not None and gitrepo.REFS_MOVED:  # never run a command twice that wrote
        _say_if_recorded()
        return INTERNAL_ERROR
    return _CACHE_DAMAGED


