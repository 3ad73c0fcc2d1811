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

    The files name this dmm by its absolute path (an agent's shell may not have it on PATH),
    and the output says what a teammate whose dmm is elsewhere does, and, for Codex, how to
    trust the hooks. `generic` writes nothing and prints the command an MCP client runs
    (`--json`: "command").

    \b
    Example:
      dmm agent setup claude && git add .mcp.json .claude/settings.json CLAUDE.md
    """
    from dmm.agents.setup import advice, mcp_command, setup

    ws = workspace(ctx)
    written = setup(ws, agent)
    notes = advice(ws, agent)
    if as_json:
        emit_json({"agent": agent, "files": [w.to_dict() for w in written],
                   "command": mcp_command(ws), "notes": notes})
        return 0
    for w in written:
        click.echo(f"{w.action:9s} {w.path}" + (f"  ({w.detail})" if w.detail else ""))
    if any(w.action in ("created", "updated") for w in written):
        message("Review and commit these files so that every clone uses the same memory.")
    for note in notes:
        message(note)
    return 0


def _deadline() -> float:
    """The seconds left of the hook's deadline (DMM_HOOK_DEADLINE_MS; 0: none): what the
    short way (background/quick.py) spent before it handed the call on is gone."""
    from dmm.background import quick

    seconds = quick.deadline()
    return max(0.01, seconds - quick.elapsed()) if seconds > 0 else seconds


def _start_wait(ws, event: str, seconds: float) -> float:
    """How long a hook waits for a background process that is not answering yet (starting:
    the session's first hook started it, and at 50,000 memories it answers about 0.45 s
    later). For a prompt at a large store, where the answer without it is one line, half of
    what is left of the deadline (issue 39: a prompt met that line while the process was
    starting); otherwise none: a session's start answers the baseline from its files, and a
    small store's prompt is answered here for less than the wait."""
    from dmm.background import client

    if event == "user-prompt-submit" and ws.config["semantic"]["background"] \
            and client.large(ws):
        return seconds / 2
    return max(0.0, seconds - 2.0)


def _watchdog(fallback: list):
    """The hook's own deadline: whatever it waits on, after 0.9 s (DMM_HOOK_DEADLINE_MS
    changes it; 0 turns it off) it prints what it has at once and exits 0, so the prompt goes
    on: the baseline read from files when ``fallback`` holds a Fallback that has it ready,
    else one line saying so. Returns the lock to hold while printing the answer (whoever
    takes it first prints)."""
    import os
    import threading

    from dmm.background import quick

    printing = threading.Lock()
    seconds, whole = _deadline(), quick.deadline()
    if seconds <= 0:
        return printing

    def give_up() -> None:
        if printing.acquire(blocking=False):
            line = f"(dmm: no memory pack this time: not ready within {whole:.1f} s)\n"
            try:
                text = fallback[0].late(line) if fallback else line
            except Exception:  # noqa: BLE001 - the line, whatever went wrong
                text = line
            os.write(1, text.encode())
            os._exit(0)

    timer = threading.Timer(seconds, give_up)
    timer.daemon = True
    timer.start()
    return printing


@command.command("hook")
@click.argument("event", type=click.Choice(["session-start", "user-prompt-submit"]))
@click.pass_context
def hook_cmd(ctx, event) -> int:
    """Print the memory an agent's hook adds to its context: the baseline memories at
    session start, the Memory Pack for the prompt the user just typed (read as the hook's
    JSON on stdin: {"prompt": ..., "cwd": ..., "session_id": ...}). Never blocks the agent:
    without a pack in time it prints the baseline memories read from their files (a prompt
    of the session that has them already gets one line instead), and exit 0 whatever fails.
    A session whose start got no baseline gets it in its first prompt's pack.

    \b
    Example (what `dmm agent setup claude` configures):
      echo '{"prompt": "add pagination to orders"}' | dmm agent hook user-prompt-submit
    """
    import threading
    from pathlib import Path

    from dmm.agents.hook import Fallback, by_itself, read_payload

    fallback: list = []  # the baseline from files, once the repository is known
    printing = _watchdog(fallback)
    try:
        payload = read_payload(sys.stdin.read() if not sys.stdin.isatty() else "")
        cwd = payload.get("cwd")
        if cwd and Path(str(cwd)).is_dir() and (ctx.find_root().obj or {}).get("repo") is None:
            ctx.find_root().obj["repo"] = Path(str(cwd))
        ws = workspace(ctx)
        from dmm.background.client import via_background

        # an agent waits for this, and the watchdog gives it the deadline (0.9 s): a process
        # that is not running yet is started (and, for a prompt at a large store, waited for),
        # else this one is answered by words; one that is slow to answer is passed by with
        # time left to answer by words.
        # The baseline is read from its files meanwhile, to be answered should the pack not
        # come: at once for a session's start (it is most of that answer anyway, once a
        # session), past a third of the deadline for a prompt (most prompts never need it).
        seconds = _deadline() or 60.0
        fallback.append(Fallback(ws, event, payload,
                                 after=0.0 if event == "session-start" else seconds / 3))
        from dmm.background import quick

        answer = None if quick.timed_out() else via_background(
            ws, {"op": "hook", "event": event, "payload": payload, "wait": seconds / 4},
            start_wait=_start_wait(ws, event, seconds), answer_wait=seconds / 2)[0]
        text = answer["out"] if answer is not None else by_itself(ws, event, payload)
    except Exception as exc:  # noqa: BLE001 - a hook never blocks the agent
        detail = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        text = f"(dmm: no memory pack this time: {detail})\n"
    if fallback:  # before taking the lock: reading the baseline may not pass the deadline
        text = fallback[0].settle(text)
    if not printing.acquire(blocking=False):
        threading.Event().wait()  # the deadline has passed: its line is being printed
    if text:
        click.echo(text, nl=False)
    return 0
