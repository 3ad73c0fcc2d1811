"""`dmm write propose|update|deprecate|promote`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dmm.cli import complete
from dmm.cli.common import emit_json, json_option, message, read_text_input, workspace
from dmm.errors import ExitCode, InvalidInputError
from dmm.memory.edit import compose
from dmm.memory.model import CONFIDENCES, SCOPES

_path = click.option("--path", shell_complete=complete.memories,
                     help="The new memory's file, relative to .dmm/memory/ (e.g. "
                          "project/api/errors.md), to the repository root or to this folder "
                          "[default: named after its title, in the current folder of "
                          ".dmm/memory/ or in project/].")


def _memory(f):
    """--memory: the existing memory a change is about (--path: its old spelling)."""
    f = click.option("--path", "old_path", hidden=True, shell_complete=complete.memories)(f)
    return click.option("--memory", "memory", metavar="MEMORY", shell_complete=complete.memories,
                        help="The memory to change: its id or its path (relative to "
                             ".dmm/memory/, to the repository root or to this folder).")(f)


def _one(memory: str | None, old_path: str | None) -> str:
    if memory and old_path and memory != old_path:
        raise click.UsageError("name the memory once (--path is the old name of --memory)")
    if not (memory or old_path):
        raise click.UsageError("Missing option '--memory': the memory to change (id or path)")
    return memory or old_path
_reason = click.option("--reason", required=True, help="Why this change is needed (kept in git).")
_relation = click.option(
    "--relation", "relations", multiple=True, metavar="MEMORY=RELATION[:NOTE]",
    help="How the new content relates to another memory (its id or path): supersedes (it "
         "replaces it; that memory is retired when a person approves), contradicts, refines, "
         "duplicates or unrelated, with an optional note. Repeat for each; the answer lists "
         "the nearest memories to declare.")
_by = click.option("--proposed-by", metavar="NAME",
                   help="Who proposes [default: your git user name; from an agent's shell, "
                        "the agent, as agent:NAME].")


def _read_content(content: str | None, file: Path | None) -> str | None:
    if content is not None and file is not None:
        raise InvalidInputError("give the content with --content or --file, not both")
    if file is not None:
        return read_text_input(str(file))
    if content is None and not sys.stdin.isatty():
        data = sys.stdin.read()
        return data or None
    return content


def _submit(ctx: click.Context, as_json: bool, **kw) -> int:
    from dmm.index.refresh import open_fresh
    from dmm.proposals.propose import propose

    from dmm.cli.person import proposer

    kw["proposed_by"] = proposer(kw.get("proposed_by"))  # an agent's is its own
    ws = workspace(ctx)
    if not kw.get("proposed_by"):
        kw["proposed_by"] = _proposer(ws)
    if "relations" in kw:
        from dmm.proposals.relations import parse_option

        kw["relations"] = [parse_option(r) for r in kw["relations"]] or None
    conn, _ = open_fresh(ws)
    try:
        result = propose(ws, conn, **kw)
    finally:
        conn.close()
    if as_json:
        emit_json(result.to_dict())
        return _exit(result)
    if result.success:
        click.echo(result.proposal_id)
        message(f"Proposal created: {result.proposal_id} ({kw['type']} {kw['path']})")
        for w in result.precheck_warnings:
            message(f"  warning: {w}")
        message(_next_steps(result.proposal_id))
    else:
        message("Precheck failed, nothing was proposed:")
        for e in result.precheck_errors:
            message(f"  error: {e}")
        for w in result.precheck_warnings:
            message(f"  warning: {w}")
    _say_neighbours(result)
    return _exit(result)


def _exit(result) -> int:
    if result.success:
        return ExitCode.OK
    return ExitCode.NOT_FOUND if result.not_found else ExitCode.INVALID_INPUT


def _say_neighbours(result) -> None:
    """The nearest memories, each with what was declared about it, and how to declare."""
    if not result.neighbours:
        return
    message("Nearest memories:")
    for n in result.neighbours:
        said = f"  [declared: {n['declared']}]" if n["declared"] else ""
        message(f"  {n['memory_id']}  {n['path']}  {n['title']}{said}")
        message(f"      {n['passage']}")
    if result.declare:
        message("Say how the new memory relates to the undeclared ones: propose again with "
                "--relation MEMORY=RELATION[:NOTE] for each (supersedes, contradicts, refines, "
                "duplicates or unrelated)" + (f", after `dmm review withdraw "
                                              f"{result.proposal_id} --reason ...`"
                                              if result.success else "")
                + ". A declaration is a claim the reviewer shows; it approves nothing.")


def _next_steps(pid: str) -> str:
    """What happens to a proposal now: for a person, how to review and decide it; for an
    agent, that a person decides it (a decision command is refused from an agent's shell, so
    it is never suggested there) and how that person does it."""
    from dmm.agents.identity import agent_shell
    from dmm.shellcmd import command as shell_command

    show = shell_command('dmm', 'review', 'show', pid)
    if agent_shell() is not None:
        return (f"A person decides it, not an agent: they read it with `{show}` and approve, "
                "reject or defer it at their own terminal (or their CI runs the automated "
                "reviewer). Tell them it is waiting; you may withdraw it with "
                f"`{shell_command('dmm', 'review', 'withdraw', pid, '--reason', '...')}`.")
    return (f"Review it with `{show}`, then "
            f"`{shell_command('dmm', 'review', 'process', pid)}` (the automated checks) or "
            f"`{shell_command('dmm', 'review', 'approve', pid)}`")


def _proposer(ws) -> str:
    """Who proposes when no agent runs this dmm (dmm.cli.person.proposer names an agent):
    the git user, at a terminal or not. A person piping a file in is still that person; an
    agent that hides its markers is identity.py's stated limit, not a reason to call every
    program an agent."""
    from dmm.gitrepo import Git

    return Git(ws.root).user_name() or "human"


@click.group("write")
def command() -> None:
    """Propose a memory change. Every proposal becomes a git branch dmm/proposals/<id> that a
    reviewer approves (merged into your branch) or closes; nothing is written straight into
    the store, and your working tree and index are not touched.

    \b
    Examples:
      dmm write propose --path project/api/errors.md --reason "agreed in review" --file new.md
      dmm write deprecate --memory project/old_rule.md --reason "replaced by the new rule"
    """


@command.command("propose")
@_path
@_reason
@click.option("--type", "type_", type=click.Choice(["create", "update", "deprecate", "promote"]),
              default="create", show_default=True, help="What kind of change.")
@click.option("--content", help="The memory file's full text (else --file, else stdin).")
@click.option("--file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read the content from this file.")
@click.option("--patch", help="For updates: a unified diff to apply to the current file.")
@click.option("--patch-file", metavar="PATH",
              help="For updates: read the unified diff from this file (- for stdin).")
@click.option("--new-scope", type=click.Choice(SCOPES), help="For promotions: the new scope.")
@click.option("--title", help="Write the frontmatter for me: the new memory's title (the "
                              "content, if any, is its body).")
@click.option("--tags", metavar="TAG,TAG", default="", help="With --title: its tags.")
@click.option("--priority", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="With --title: its priority.")
@click.option("--confidence", type=click.Choice(CONFIDENCES[:-1]), default="active",
              show_default=True, help="With --title: its confidence.")
@click.option("--edit", is_flag=True,
              help="Open $EDITOR on the memory before proposing it (on a template when "
                   "nothing else is given; also the default on a terminal with no content).")
@_relation
@_by
@json_option
@click.pass_context
def propose_cmd(ctx, path, reason, type_, content, file, patch, patch_file, new_scope, title,
                tags, priority, confidence, edit, relations, proposed_by, as_json) -> int:
    """Propose a new memory (or any change with --type).

    Give the whole file (frontmatter and body) with --content, --file or stdin, or let dmm
    write the frontmatter: --title, --tags, --priority, --confidence and the body from
    --content, --file, stdin or $EDITOR. Missing id, scope, status and created fields are
    filled in either way.

    The answer lists up to five memories nearest to the new one, each with its most relevant
    passage: say how the new memory relates to each with --relation (a proposal without
    declarations is accepted too, and the reviewer shows what dmm finds either way).

    \b
    Examples:
      dmm write propose --path project/api/errors.md --reason "agreed in review" \\
          --title "API errors use problem details" --tags api,errors --file body.md \\
          --relation mem_2026_03_14_007=supersedes:"the old rule allowed bare strings"
      dmm write propose --path project/api/paging.md --reason "new rule" --edit
      dmm write propose --title "Deploys happen on weekdays" --tags deploy --reason "agreed"
    """
    patch = _patch(patch, patch_file)
    text = _read_content(content, file) if type_ in ("create", "update") and not patch else None
    if title is not None:
        if type_ != "create":
            raise InvalidInputError("--title writes a new memory: use it with --type create")
        if text is not None and text.lstrip().startswith("---"):
            raise InvalidInputError("the content has its own frontmatter: give it whole, "
                                    "without --title")
        text = compose(title, text or "", _tag_list(tags), priority, confidence)
    interactive = type_ == "create" and text is None and sys.stdin.isatty()
    if edit or interactive:
        text = _edited(text or compose("Title of the memory", _TEMPLATE_BODY,
                                       _tag_list(tags) or ["tag"], priority, confidence))
    if not path:
        if type_ != "create":
            raise click.UsageError("--path names the memory to change (or use `dmm write "
                                   f"{type_} --memory`)")
        path = _path_for(ctx, title or _heading(text or ""))
    return _submit(ctx, as_json, type=type_, path=path, reason=reason, content=text,
                   patch=patch, new_scope=new_scope, proposed_by=proposed_by,
                   relations=relations)


def _heading(text: str) -> str | None:
    import re

    found = re.search(r"^#\s+(.+?)\s*$", text, re.M)
    return found.group(1) if found else None


def _path_for(ctx: click.Context, title: str | None) -> str:
    """A free path for a new memory named after its title (as merges name theirs): in the
    folder of .dmm/memory/ the user stands in, else in project/."""
    from dmm.conflicts.resolver import slug

    if not title:
        raise InvalidInputError("give --path, or a title (--title, or a '# Title' line in the "
                                "content) to name the file after")
    ws = workspace(ctx)
    here = Path.cwd().resolve()
    memory_dir = ws.memory_dir.resolve()
    folder = here.relative_to(memory_dir).as_posix() if here.is_relative_to(memory_dir) else ""
    if not folder or folder == ".":
        folder = "project"
    stem, n = f"{folder}/{slug(title)}", 2
    candidate = f"{stem}.md"
    while (ws.memory_dir / candidate).exists():
        candidate, n = f"{stem}_{n}.md", n + 1
    return candidate


_TEMPLATE_BODY = ("One rule, fact, decision or procedure, in a few sentences.\n\n"
                  "Why: the reason, so that a reader can judge when it no longer holds.")


def _patch(patch: str | None, patch_file: str | None) -> str | None:
    if patch and patch_file:
        raise InvalidInputError("give the diff with --patch or --patch-file, not both")
    return read_text_input(patch_file) if patch_file else patch


def _tag_list(tags: str) -> list[str]:
    return [t.strip() for t in tags.split(",") if t.strip()]


def _edited(text: str) -> str:
    """``text`` as the user leaves it in $EDITOR; unchanged or emptied means no proposal."""
    edited = click.edit(text, extension=".md", require_save=True)
    if edited is None or not edited.strip():
        raise InvalidInputError("nothing was written in the editor: nothing was proposed")
    return edited


@command.command("update")
@_memory
@_reason
@click.option("--content", help="The new full text of the file (else --file, else stdin).")
@click.option("--file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read the new content from this file.")
@click.option("--patch", help="A unified diff (diff -u, git diff) to apply instead.")
@click.option("--patch-file", metavar="PATH", help="Read that diff from this file (- for stdin).")
@_relation
@_by
@json_option
@click.pass_context
def update_cmd(ctx, memory, old_path, reason, content, file, patch, patch_file, relations,
               proposed_by, as_json) -> int:
    """Propose new content for an existing memory (whole, or as a diff).

    \b
    Examples:
      dmm write update --memory project/api/errors.md --reason "now RFC 9457" --file errors.md
      dmm write update --memory mem_2026_03_14_007 --reason "typo" --patch-file fix.diff
    """
    path = _one(memory, old_path)
    patch = _patch(patch, patch_file)
    text = None if patch else _read_content(content, file)
    return _submit(ctx, as_json, type="update", path=path, reason=reason, content=text,
                   patch=patch, proposed_by=proposed_by, relations=relations)


@command.command("deprecate")
@_memory
@_reason
@_by
@json_option
@click.pass_context
def deprecate_cmd(ctx, memory, old_path, reason, proposed_by, as_json) -> int:
    """Propose retiring a memory: status deprecated, moved to deprecated/, history kept.

    \b
    Examples:
      dmm write deprecate --memory project/old_rule.md --reason "replaced by project/new_rule.md"
    """
    return _submit(ctx, as_json, type="deprecate", path=_one(memory, old_path), reason=reason,
                   proposed_by=proposed_by)


@command.command("promote")
@_memory
@click.option("--new-scope", required=True, type=click.Choice(SCOPES), help="The new scope.")
@click.option("--expires", metavar="keep|drop|YYYY-MM-DD",
              help="What happens to the memory's expiry date: keep it, drop it or set another. "
                   "Required when it has one (asked on a terminal).")
@_reason
@_by
@json_option
@click.pass_context
def promote_cmd(ctx, memory, old_path, new_scope, expires, reason, proposed_by, as_json) -> int:
    """Propose moving a memory to another scope (e.g. ephemeral -> project).

    An ephemeral note usually has an `expires` date; a memory promoted to a lasting scope
    should say whether that date still applies, so --expires is required then (on a terminal
    dmm asks).

    \b
    Examples:
      dmm write promote --memory ephemeral/flaky.md --new-scope project --expires drop \\
          --reason "held"
      dmm write promote --memory mem_2026_03_14_007 --new-scope global --reason "everywhere"
    """
    path = _one(memory, old_path)
    if expires is None and new_scope != "ephemeral" and sys.stdin.isatty() and not as_json:
        expires = _ask_expiry(ctx, path)
    return _submit(ctx, as_json, type="promote", path=path, reason=reason,
                   new_scope=new_scope, expires=expires, proposed_by=proposed_by)


def _ask_expiry(ctx: click.Context, path: str) -> str | None:
    """On a terminal: the memory's expiry date, kept, dropped or changed, as the person says."""
    from dmm.errors import DmmError
    from dmm.index.refresh import open_fresh
    from dmm.lookup import find_memory

    ws = workspace(ctx)
    conn, _ = open_fresh(ws)
    try:
        memory, _ = find_memory(ws, conn, path)
    except DmmError:
        return None  # the proposal's precheck says what is wrong with the name
    finally:
        conn.close()
    if memory.expires is None:
        return None
    return click.prompt(f"{memory.path} expires on {memory.expires}; in its new scope, keep "
                        "that date, drop it, or give another (YYYY-MM-DD)", default="drop",
                        err=True)
