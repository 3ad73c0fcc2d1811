"""`dmm agent setup|hook`."""

from __future__ import annotations

import sys

import click

from dmm.cli.common import emit_json, json_option, message, workspace


@click.group("agent")
def command() -> None:
    """Wire dmm into a coding agent (Claude Code, Codex, Cursor) and run its hooks.

    \b
    Examples:
      dmm agent setup claude     .mcp.json, .claude/settings.json hooks, a note in CLAUDE.md
      dmm agent setup codex      .codex/config.toml and a note in AGENTS.md
      dmm agent setup cursor     .cursor/mcp.json and .cursor/rules/dmm.mdc
      dmm agent setup generic    print what to configure in any other agent
    """


@command.command("setup")
@click.argument("agent", type=click.Choice(["claude", "codex", "cursor", "generic"]))
@json_option
@click.pass_context
def setup_cmd(ctx, agent, as_json) -> int:
    """Write the files that connect AGENT to this repository's memory, merging with what is
    there (existing settings are kept), and print what was written. Review and commit them:
    the whole team's agents then use the same memory.

    \b
    Example:
      dmm agent setup claude && git add .mcp.json .claude/settings.json CLAUDE.md
    """
    from dmm.agents.setup import setup

    ws = workspace(ctx)
    written = setup(ws, agent)
    if as_json:
        emit_json({"agent": agent, "files": [w.to_dict() for w in written]})
        return 0
    for w in written:
        click.echo(f"{w.action:9s} {w.path}" + (f"  ({w.detail})" if w.detail else ""))
    if agent == "generic":
        message("Configure your agent's MCP client to start: dmm mcp   (in this repository, or "
                "dmm -C <repository> mcp)")
        message("and point its instructions at .dmm/BOOT.md.")
    elif any(w.action in ("created", "updated") for w in written):
        message("Review and commit these files so that every clone uses the same memory.")
    return 0


@command.command("hook")
@click.argument("event", type=click.Choice(["session-start", "user-prompt-submit"]))
@click.pass_context
def hook_cmd(ctx, event) -> int:
    """Print the memory an agent's hook adds to its context: the baseline memories at
    session start, the Memory Pack for the prompt the user just typed (read as the hook's
    JSON on stdin: {"prompt": ..., "cwd": ...}). Never blocks the agent: a failure is one
    line of output and exit 0.

    \b
    Example (what `dmm agent setup claude` configures):
      echo '{"prompt": "add pagination to orders"}' | dmm agent hook user-prompt-submit
    """
    from pathlib import Path

    from dmm.agents.hook import context_for, read_payload

    try:
        payload = read_payload(sys.stdin.read() if not sys.stdin.isatty() else "")
        cwd = payload.get("cwd")
        if cwd and Path(str(cwd)).is_dir() and (ctx.find_root().obj or {}).get("repo") is None:
            ctx.find_root().obj["repo"] = Path(str(cwd))
        ws = workspace(ctx)
        from dmm.semantic.client import via_background

        # an agent waits for this: a process that is slow to start or to answer is passed by
        answer, _note = via_background(ws, {"op": "hook", "event": event, "payload": payload,
                                            "wait": 2.0}, start_wait=3.0, answer_wait=8.0)
        text = answer["out"] if answer is not None else context_for(ws, event, payload)
    except Exception as exc:  # noqa: BLE001 - a hook never blocks the agent
        detail = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        click.echo(f"(dmm: no memory pack this time: {detail})")
        return 0
    if text:
        click.echo(text, nl=False)
    return 0
