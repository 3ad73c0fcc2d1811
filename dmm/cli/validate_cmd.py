"""`dmm validate`."""

from __future__ import annotations

import click

from dmm.cli.common import emit_json, json_option, message, workspace
from dmm.errors import ExitCode


@click.command("validate")
@click.argument("paths", nargs=-1)
@click.option("--strict", is_flag=True, help="Fail on warnings too, not only on errors.")
@json_option
@click.pass_context
def command(ctx: click.Context, paths: tuple[str, ...], strict: bool, as_json: bool) -> int:
    """Check every memory file (or only PATHS) and report each problem with file and field.

    Exits 0 when the store is valid, 1 when a problem must be fixed: malformed YAML, missing or
    wrong fields, a scope that does not match its folder, duplicate ids, unreadable files.

    \b
    Examples:
      dmm validate
      dmm validate project/billing --strict
      dmm validate --json
    """
    from dmm.index import read
    from dmm.index.refresh import open_fresh

    ws = workspace(ctx)
    wanted = {ws.memory_relpath(p) for p in paths}
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
    total = report.files
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    failed = errors > 0 or (strict and warnings > 0)
    if as_json:
        emit_json({"valid": not failed, "files": total, "errors": errors, "warnings": warnings,
                   "problems": [p.to_dict() for p in problems]})
    else:
        for p in problems:
            click.echo(str(p))
        message(f"{total} files checked: {errors} error(s), {warnings} warning(s)")
    return ExitCode.PROBLEMS_FOUND if failed else ExitCode.OK
