"""`dmm validate`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, message, workspace
from dmm.errors import ExitCode
from dmm.render import count


@click.command("validate")
@click.argument("paths", nargs=-1)
@click.option("--strict", is_flag=True, help="Fail on warnings too, not only on errors.")
@json_option
@click.pass_context
def command(ctx: click.Context, paths: tuple[str, ...], strict: bool, as_json: bool) -> int:
    """Check every memory file (or only PATHS) and report each problem with file and field.

    Exits 0 when the store is valid, 1 when a problem must be fixed: malformed YAML, missing or
    wrong fields, a scope that does not match its folder, duplicate ids, unreadable files; 5
    when a PATH names no memory file or folder (a typo in a CI step fails it). Files git
    tracks under .dmm/index/ (where older versions kept their cache) are an error too. PATHS may be
    relative to .dmm/memory/, to the repository root or to the current folder.

    \b
    Examples:
      dmm validate
      dmm validate project/billing --strict
      dmm validate --json
    """
    from dmm import state
    from dmm.index import read
    from dmm.index.refresh import open_fresh
    from dmm.lookup import missing_path

    ws = workspace(ctx)
    wanted = {ws.memory_relpath(p) for p in paths}
    for given, rel in zip(paths, [ws.memory_relpath(p) for p in paths]):
        if not (ws.memory_dir / rel).exists():
            raise missing_path(ws, given, rel)
    conn, report = open_fresh(ws)
    try:
        problems = read.problems(conn,
                                 ephemeral_days=ws.config["store"]["ephemeral_max_days"])
    finally:
        conn.close()
    if wanted:
        problems = [p for p in problems if any(p.path == w or p.path.startswith(w.rstrip("/")
                                                                                + "/")
                                               for w in wanted)]
    leftover = None if wanted else state.tracked_problem(ws)
    if leftover:  # a committed .dmm/index/: dmm never reads it, and says so
        problems.insert(0, leftover)
    total = report.files if not wanted else sum(
        1 for rel in wanted for f in ([ws.memory_dir / rel] if (ws.memory_dir / rel).is_file()
                                      else (ws.memory_dir / rel).rglob("*.md")))
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    failed = errors > 0 or (strict and warnings > 0)
    if as_json:
        emit_json({"valid": not failed, "files": total, "errors": errors, "warnings": warnings,
                   "problems": [p.to_dict() for p in problems]})
    else:
        for p in problems:
            click.echo(str(p))
        message(f"{count(total, 'file')} checked: {count(errors, 'error')}, "
                f"{count(warnings, 'warning')}")
    return ExitCode.PROBLEMS_FOUND if failed else ExitCode.OK
