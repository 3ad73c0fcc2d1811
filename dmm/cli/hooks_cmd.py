"""`dmm hooks install|uninstall|status|run`."""

from __future__ import annotations

import sys

import click

from dmm.cli.common import emit_json, json_option, message, workspace
from dmm.cli.terminal import no_headers_option, table


@click.group("hooks")
def command() -> None:
    """Git hooks that scan memory changes for conflicts after commit, merge and rebase.

    A commit that does not touch .dmm/memory/ costs only one `git diff` in shell; a hook never
    blocks or breaks a git command. Existing hooks are kept and run first (renamed
    <hook>.legacy); core.hooksPath is respected. pre-commit framework users: see
    .pre-commit-hooks.yaml in dmm's repository.

    \b
    Examples:
      dmm hooks install
      dmm hooks status
    """


def _show(states, as_json: bool, no_headers: bool = False) -> None:
    if as_json:
        emit_json({"hooks": [s.to_dict() for s in states]})
    else:
        click.echo(table([(s.name, s.state, "yes" if s.legacy else "no", s.path)
                          for s in states], ("hook", "state", "chained", "path"), no_headers))


@command.command("install")
@json_option
@click.pass_context
def install_cmd(ctx, as_json) -> int:
    """Install the post-commit, post-merge and post-rewrite shims.

    \b
    Examples:
      dmm hooks install
    """
    from dmm.gitrepo import Git
    from dmm.hooks.install import install

    ws = workspace(ctx)
    states = install(Git(ws.root))
    if (ws.root / ".pre-commit-config.yaml").exists():
        message("note: this repository uses the pre-commit framework; you can instead add the "
                "dmm-conflicts hook from dmm's .pre-commit-hooks.yaml and run "
                "`pre-commit install --hook-type post-commit`")
    _show(states, as_json)
    return 0


@command.command("uninstall")
@json_option
@click.pass_context
def uninstall_cmd(ctx, as_json) -> int:
    """Remove dmm's shims and restore the hooks they chained.

    \b
    Examples:
      dmm hooks uninstall
    """
    from dmm.gitrepo import Git
    from dmm.hooks.install import uninstall

    ws = workspace(ctx)
    _show(uninstall(Git(ws.root)), as_json)
    return 0


@command.command("status")
@no_headers_option
@json_option
@click.pass_context
def status_cmd(ctx, no_headers, as_json) -> int:
    """Which hooks are installed, foreign or absent.

    \b
    Examples:
      dmm hooks status
      dmm hooks status --json
    """
    from dmm.gitrepo import Git
    from dmm.hooks.install import status

    ws = workspace(ctx)
    _show(status(Git(ws.root)), as_json, no_headers)
    return 0


@command.command("run", hidden=True)
@click.argument("hook")
@click.argument("args", nargs=-1)
@click.option("--detached", is_flag=True, help="Be the background scan a hook started.")
@click.option("--publish-only", is_flag=True, help="With --detached: only keep the hook's "
              "scan for the other work trees.")
@click.pass_context
def run_cmd(ctx, hook, args, detached, publish_only) -> int:
    """Entry point of the shims (and of the pre-commit framework hook)."""
    import os

    try:
        if not sys.stdin.isatty() and hook == "post-rewrite":
            sys.stdin.read()  # git writes the rewritten commits here; nothing to do with them
        from dmm.hooks import run as hook_run

        os.environ.pop("GIT_INDEX_FILE", None)
        ws = workspace(ctx, repair=False)
        if detached:  # its output goes to the log the hook named
            hook_run.detached(ws, publish_only)
            return 0
        notice = hook_run.run(ws, hook=hook)  # a hook never writes git's index
        if notice:
            click.echo(notice, err=True)
        from dmm.background.client import warm

        warm(ws)  # started now (not waited for), the next prompt finds it ready (issue 39)
    except Exception as exc:  # noqa: BLE001 - a hook never fails the git command
        click.echo(f"dmm: conflict scan skipped: {exc}", err=True)
    return 0
