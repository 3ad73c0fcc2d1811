"""The CLI's side of "only people decide" (dmm.agents.identity): a decision command run for an
agent is refused; a person at a terminal confirms it; a proposal made from an agent's shell is
recorded as that agent's."""

from __future__ import annotations

import sys

import click

from dmm.errors import InvalidInputError


class NotAPersonError(InvalidInputError):
    """A person's decision asked for by an agent."""


def require_person(what: str, *, yes: bool = False) -> None:
    """Refuse ``what`` (a decision) when an agent runs this dmm; on a terminal, ask the person
    to confirm it (``yes``: they already did, with --yes)."""
    from dmm.agents.identity import agent_shell

    found = agent_shell()
    if found is not None:
        agent, variable = found
        raise NotAPersonError(
            f"{what} is a person's decision, and this dmm runs for {agent} ({variable} is "
            "set): agents propose, check and flag; people decide",
            hint="propose the change (dmm write propose, memory_propose) or flag the conflict "
                 "(dmm conflicts flag); a person runs this in their own terminal")
    if yes or not at_terminal():
        return  # a script or CI job: decided by whoever runs it, recorded as the git user
    confirm(what)


def at_terminal() -> bool:
    """A person at a terminal, who can be asked (not a script or a CI job)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def confirm(what: str) -> None:
    """Ask the person to confirm ``what``; refuse (nothing changed) unless they do."""
    if not click.confirm(f"{what}: decide it as yourself?", default=False, err=True):
        raise InvalidInputError(f"{what}: not confirmed, nothing was changed")


def proposer(given: str | None) -> str | None:
    """Who a proposal is recorded as: the agent when an agent runs this dmm, whatever
    --proposed-by says; otherwise what --proposed-by says (None: the command decides)."""
    from dmm.agents.identity import agent_name

    return agent_name() or given


yes_option = click.option("--yes", "-y", "yes", is_flag=True,
                          help="Do not ask to confirm on a terminal (a person deciding).")


def decision(describe, has_yes: bool = False):
    """Mark a command as a person's decision. ``describe(**params)`` says what is decided
    ("approving prop_x"), or None when this use of the command decides nothing (a proposal,
    a dry run), or (what, False) to refuse agents without asking the person (a command that
    asks them itself). Adds --yes, unless the command has its own (``has_yes``)."""
    import functools

    def wrap(command):
        @functools.wraps(command)
        def run(*args, **params):
            yes = params.get("yes", False) if has_yes else params.pop("yes", False)
            what = describe(**params)
            if isinstance(what, tuple):
                require_person(what[0], yes=not what[1])
            elif what:
                require_person(what, yes=yes)
            return command(*args, **params)
        return run if has_yes else yes_option(run)
    return wrap
