"""`dmm ci check|setup`."""

from __future__ import annotations

import os

import click

from dmm.cli.common import emit_json, json_option, message, workspace


@click.group("ci")
def command() -> None:
    """Check memories in CI, and write the CI configuration that does it.

    \b
    Examples:
      dmm ci setup                 (.github/workflows/dmm.yml and .gitlab/dmm.gitlab-ci.yml)
      dmm ci check                 (what the CI job runs)
    """


@command.command("check")
@click.option("--base", help="Check what changed since this commit (default: the pull or "
                             "merge request's target branch, from GITHUB_BASE_REF or "
                             "CI_MERGE_REQUEST_TARGET_BRANCH_NAME; without one: a full "
                             "conflict scan, as on the main branch).")
@click.option("--format", "fmt", type=click.Choice(["auto", "github", "plain"]), default="auto",
              show_default=True, help="github: workflow commands (annotations) and a job "
                                      "summary; plain: path:line: severity: message; auto: "
                                      "github inside GitHub Actions, else plain.")
@json_option
@click.pass_context
def check_cmd(ctx, base, fmt, as_json) -> int:
    """The CI job: on a pull request, the reviewer's checks on every memory it changes and the
    conflicts they bring; on the main branch, a full conflict scan.

    Findings become annotations on the changed files in GitHub Actions (and a Markdown job
    summary in $GITHUB_STEP_SUMMARY), plain `path:line: severity: message` lines elsewhere.
    Exits 1 exactly when it reports an error: an error in a changed memory, a conflict
    nobody decided that the pull request brings (unless the base branch's config.toml sets
    [ci] fail_on_new_conflicts = false: then a warning), or on the main branch any conflict
    nobody decided.

    \b
    Examples:
      dmm ci check
      dmm ci check --base origin/main --format plain
    """
    from dmm import ci
    from dmm.errors import ExitCode

    ws = workspace(ctx)
    mode, detected = ci.detect(dict(os.environ))
    base = base or detected
    report = ci.check_change(ws, base, ci.head_branch(dict(os.environ))) if base \
        else ci.check_main(ws)
    github = fmt == "github" or (fmt == "auto" and os.environ.get("GITHUB_ACTIONS") == "true")
    if as_json:
        emit_json(report.to_dict())
    else:
        for line in ci.github_commands(report) if github else ci.plain_lines(report):
            click.echo(line)
        if not report.findings:
            message("dmm ci: nothing to report")
    if report.failed:
        message(f"dmm ci: failed: {ci.failure(report)}")
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if github and summary_file:
        with open(summary_file, "a", encoding="utf-8") as fh:
            fh.write(ci.summary(report))
    return ExitCode.PROBLEMS_FOUND if report.failed else ExitCode.OK


@command.command("setup")
@click.option("--github/--no-github", default=True, help="Write .github/workflows/dmm.yml.")
@click.option("--gitlab/--no-gitlab", default=True, help="Write .gitlab/dmm.gitlab-ci.yml.")
@click.option("--branch", default=None, help="The main branch (default: the checked-out one).")
@click.option("--install", "install", default=None, metavar="REQUIREMENT",
              help="What CI installs with pip, e.g. \"dmm-memory @ git+https://HOST/OWNER/"
                   "dmm.git@COMMIT\" (default: what this dmm was installed from, when CI can "
                   "install that: a git URL and commit, a URL, or dmm-memory==VERSION from a "
                   "package index; refused for a local folder or editable install).")
@click.option("--force", is_flag=True, help="Replace files that exist.")
@click.option("--print", "to_stdout", is_flag=True, help="Print the files instead of writing.")
@click.pass_context
def setup_cmd(ctx, github, gitlab, branch, install, force, to_stdout) -> int:
    """Write the CI configuration that runs `dmm ci check`: a GitHub Actions workflow and a
    GitLab CI template (include it from .gitlab-ci.yml), both from one command.

    CI installs this dmm, never a guess by name ("dmm" on the package index is another
    project): the git URL and commit this dmm was installed from, or --install. Third-party
    actions are pinned by commit, and the checkout keeps no credentials. Nothing is written
    when the install line cannot be known.

    Existing files are kept unless --force. Review them and commit them; the pre-commit
    framework's hook entries are in dmm's .pre-commit-hooks.yaml (dmm-validate,
    dmm-conflicts).

    \b
    Examples:
      dmm ci setup
      dmm ci setup --no-gitlab --install "dmm-memory @ git+https://example.com/dmm.git@COMMIT"
      dmm ci setup --print --no-gitlab
    """
    from dmm.ci_setup import files
    from dmm.errors import InvalidInputError
    from dmm.fsutil import write_atomic, write_new
    from dmm.gitrepo import Git

    ws = workspace(ctx)
    if branch is None:
        current = Git(ws.root).current_branch()
        branch = current.removeprefix("refs/heads/") if current else "main"
    wanted = files(github=github, gitlab=gitlab, branch=branch, install=install)
    for rel, text in wanted.items():
        if to_stdout:
            click.echo(f"# {rel}\n{text}")
            continue
        path = ws.root / rel
        if not path.parent.resolve().is_relative_to(ws.root.resolve()) or path.is_symlink():
            raise InvalidInputError(f"{rel} leads outside the repository through a link: "
                                    "nothing written")
        if force and path.exists():
            write_atomic(path, text)
            message(f"replaced {rel}")
        elif write_new(path, text):
            message(f"wrote {rel}")
        else:
            message(f"kept {rel} (it exists: --force replaces it)")
    if gitlab and not to_stdout:
        message("GitLab: add to .gitlab-ci.yml:  include: [{local: .gitlab/dmm.gitlab-ci.yml}]")
    return 0
