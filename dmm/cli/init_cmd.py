"""`dmm init`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, message, workspace


@click.command("init")
@click.option("--no-hooks", is_flag=True, help="Do not install the git hooks that scan memory "
                                               "changes for conflicts.")
@click.option("--upgrade", is_flag=True, help="After upgrading dmm: rewrite BOOT.md and the "
              "comments of config.toml as this version writes them, keeping every setting.")
@json_option
@click.pass_context
def command(ctx: click.Context, no_hooks: bool, upgrade: bool, as_json: bool) -> int:
    """Create the .dmm/ memory store in this git repository.

    Creates the scope folders under .dmm/memory/, config.toml with documented defaults,
    BOOT.md (instructions for agents) and a starter baseline memory, and installs the git
    hooks (post-commit, post-merge, post-rewrite) that scan memory changes for conflicts.
    dmm's cache, usage log and locks live in the git folder (.git/dmm/), never in .dmm/.
    Safe to run again: existing files are never overwritten. In a teammate's clone of a repository that has a store, this is the one
    command to run: hooks are per clone.

    After upgrading dmm, --upgrade brings BOOT.md and config.toml's comments (and any new
    setting) up to date: every value the store sets is kept, sections of other tools are kept
    as written, and it refuses while either file has uncommitted changes. Review the result
    with git diff and commit it.

    \b
    Examples:
      dmm init
      dmm init --upgrade && git diff .dmm/
    """
    from dmm.scaffold import init

    ws = workspace(ctx, require_init=False)
    if upgrade:
        return _upgrade(ws, no_hooks, as_json)
    result = init(ws)
    hooks = result.hooks_installed = [] if no_hooks else _install_hooks(ws)
    # a teammate's clone has the store but not the hooks (the cache lives in the git folder,
    # made on demand)
    store_files = result.created
    if as_json:
        emit_json(result.to_dict())
    elif result.created:
        message(f"Initialised dmm in {ws.root / '.dmm'} ({len(result.created)} files created)")
        for path in result.created:
            message(f"  created {path}")
    elif hooks:
        message(f"dmm store found in {ws.root / '.dmm'}: this clone is set up")
    else:
        message(f"dmm is already initialised in {ws.root / '.dmm'}: nothing changed")
    if hooks and not as_json:
        message(f"installed git hooks: {', '.join(hooks)} (dmm hooks uninstall removes them)")
    if store_files and not as_json:
        message("Next: commit the store (git add .dmm && git commit -m 'Add dmm memory'), "
                "then try: dmm query \"<your task>\"")
    if not as_json:
        _say_remotes(ws)
    return 0


def _say_remotes(ws) -> None:
    """In a clone, where the team's proposals and records come from (no setting needed)."""
    from dmm.gitrepo import Git

    remotes = Git(ws.root).out("remote", check=False).split()
    if remotes:
        message(f"teammates' proposals and audit records are read from {', '.join(remotes)} "
                "after any fetch (remote-tracking refs); `dmm sync` fetches them and publishes "
                "yours (docs/team.md)")


def _install_hooks(ws) -> list[str]:
    """Install the hooks this clone lacks (hooks are per clone); their names. A repository
    whose hooks live in the work tree is told why none were installed."""
    from dmm.gitrepo import Git
    from dmm.hooks.install import HooksInWorkTreeError, install, status

    missing = [h.name for h in status(Git(ws.root)) if h.state != "installed"]
    if not missing:
        return []
    try:
        install(Git(ws.root))
    except HooksInWorkTreeError as exc:
        message(f"hooks not installed: {exc.message}")
        message(f"hint: {exc.hint}")
        return []
    return missing


def _upgrade(ws, no_hooks: bool, as_json: bool) -> int:
    from dmm.scaffold import upgrade

    result = upgrade(ws)
    result.hooks_installed = [] if no_hooks else _install_hooks(ws)
    if as_json:
        emit_json(result.to_dict())
        return 0
    for path in result.rewritten:
        message(f"rewrote {path}")
    if not result.rewritten:
        message("BOOT.md and config.toml are already as this dmm writes them: nothing changed")
    for key, value, default in result.customised:
        message(f"kept {key} = {value!r} (this dmm's default is {default!r})")
    if result.hooks_installed:
        message(f"installed git hooks: {', '.join(result.hooks_installed)}")
    if result.rewritten:
        message("Review with `git diff .dmm/`, then commit.")
    return 0
