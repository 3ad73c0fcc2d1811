"""`dmm ci`: what a CI job checks, and how it reports to the forge.

On a pull request (or merge request) that touches ``.dmm/``: every changed memory is read as
the reviewer reads a proposal (schema, quality, duplicates, conflicts, baseline changes)
against the store of the pull request, and any other changed file under ``.dmm/`` (BOOT.md,
config.toml: what agents are told) is named for a person to read. On the main branch: a full
conflict scan that reports every conflict nobody has decided.

The gate is on the pull request, before the merge: an undecided conflict with a memory the
request adds or changes is an error there (``ci.fail_on_new_conflicts``), and on the main
branch every undecided conflict is an error, shown as one: a check fails exactly when it
reports an error. A pull request is checked with the base branch's settings, never its own
config.toml (which could turn the gate off or raise a threshold over what it brings).

The findings are reported as GitHub Actions workflow commands (``::error file=...::...``, the
documented format, with its escapes) plus a Markdown job summary, or as plain
``path:line: severity: message`` lines elsewhere (GitLab and any other CI). Pure functions:
the CLI prints what they return and writes the summary where the runner says.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from dmm.gitrepo import Git
from dmm.proposals.model import MEMORY_ROOT, Proposal
from dmm.state import tracked
from dmm.workspace import OLD_INDEX_DIR, Workspace


@dataclass
class Finding:
    severity: str  # error | warning | notice
    path: str  # from the repository root
    title: str  # what found it: "dmm schema", "dmm conflict" ...
    message: str
    line: int = 1

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class CiReport:
    mode: str  # pull_request | main
    base: str | None = None
    changed: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Exactly when an error is reported: what fails the check is always shown."""
        return any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> int:
        return sum(f.severity == "error" for f in self.findings)

    def to_dict(self) -> dict:
        return {"mode": self.mode, "base": self.base, "changed": self.changed,
                "findings": [f.to_dict() for f in self.findings],
                "conflicts": self.conflicts, "failed": self.failed}


def detect(env: dict) -> tuple[str, str | None]:
    """(mode, base ref) from the CI's own variables: GitHub Actions and GitLab CI name the
    target branch of a pull or merge request; anything else is a run on a branch."""
    if env.get("GITHUB_EVENT_NAME", "").startswith("pull_request") and env.get("GITHUB_BASE_REF"):
        return "pull_request", f"origin/{env['GITHUB_BASE_REF']}"
    target = env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME")
    if target:
        return "pull_request", f"origin/{target}"
    return "main", None


def head_branch(env: dict) -> str | None:
    """The branch of the pull or merge request under check, where the CI names it."""
    return env.get("GITHUB_HEAD_REF") or env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME") or None


def check_change(ws: Workspace, base: str, head: str | None = None) -> CiReport:
    """The reviewer's checks on every memory the work tree changes since ``base``; ``head``
    is the branch under check, when known (a developer's clone finds its conflicts there)."""
    from dmm.conflicts import service
    from dmm.errors import InvalidInputError
    from dmm.index.refresh import open_fresh
    from dmm.memory.parse import parse_memory
    from dmm.proposals.checks import ReviewContext, all_checks

    git = Git(ws.root)
    if git.rev_parse(base) is None:
        raise InvalidInputError(f"{base} is not a commit here",
                                hint="fetch it first (actions/checkout: fetch-depth: 0)")
    merge_base = git.out("merge-base", base, "HEAD")
    report = CiReport("pull_request", base)
    # the settings of the branch it goes into as they are now: at the fork point they are
    # whatever the author chose by choosing where to branch (a commit before the gate was on)
    ws = _judged_by(ws, _base_settings(git, git.rev_parse(base)))
    gate = "error" if ws.config["ci"]["fail_on_new_conflicts"] else "warning"
    status = git.out("diff", "--name-status", "--no-renames", "-z", merge_base, "HEAD",
                     "--", ".dmm/").split("\0")
    changes = [(status[i], status[i + 1]) for i in range(0, len(status) - 1, 2)]
    report.changed = [path for _, path in changes]
    conn, _ = open_fresh(ws)
    try:
        ids = []
        for kind, path in changes:
            if path == OLD_INDEX_DIR or path.startswith(f"{OLD_INDEX_DIR}/"):  # or a link
                if kind != "D":  # removing it is the cure
                    report.findings.append(Finding(
                        "error", path, "dmm state committed", _state_message(path)))
                continue
            if not path.startswith(MEMORY_ROOT):
                report.findings.append(Finding(
                    "warning", path, "dmm instructions",
                    "changes what dmm or agents are told, outside the memories: a person "
                    "should read this change"))
                continue
            if kind == "D":
                report.findings.append(Finding("warning", path, "dmm deleted memory",
                                               "deletes a memory file: dmm deprecates "
                                               "memories instead, keeping their history"))
                continue
            refused = _refused(ws, git, path)
            if refused:  # not read further, as the reviewer reads no further
                report.findings += refused
                continue
            rel = path[len(MEMORY_ROOT):]
            old = git.show_blob(merge_base, path)
            new_text = (git.show_blob("HEAD", path) or b"").decode("utf-8", "replace")
            memory, problems = parse_memory(new_text, rel)
            for problem in problems:
                report.findings.append(Finding(problem.severity, path, "dmm schema",
                                               f"{problem.field or 'content'}: "
                                               f"{problem.message}",
                                               _field_line(new_text, problem.field)))
            if memory is None:
                continue
            ids.append(memory.id)
            proposal = Proposal(proposal_id="ci", type="create" if old is None else "update",
                                path=rel, new_path=rel, memory_id=memory.id, reason="",
                                proposed_by="", proposed_at="", commit="HEAD", base=merge_base)
            others = [p for (p,) in conn.execute("SELECT path FROM memories WHERE id = ?",
                                                 (memory.id,)) if p != rel]
            ctx = ReviewContext(proposal, old.decode("utf-8", "replace") if old else None,
                                new_text, memory, conn, ws.config, touched={rel: new_text},
                                id_used_by=others[0] if others else None)
            for check in all_checks():
                if check.NAME in ("schema", "conflicts"):
                    continue  # read above; conflicts below, against the whole store
                for issue in check.run(ctx):
                    if issue.severity != "info":
                        report.findings.append(Finding(issue.severity, path,
                                                       f"dmm {issue.category}", issue.message))
        if ids:
            branch = head or (Git(ws.root).current_branch() or "").removeprefix("refs/heads/")
            for conflict in service.check(ws, conn, ids):
                _conflict_findings(report, conflict, gate, only=set(ids), branch=branch)
    finally:
        conn.close()
    return report


def _refused(ws: Workspace, git: Git, path: str) -> list[Finding]:
    """What the reviewer refuses before it reads a memory, found by the reviewer's own
    functions: a path that is not a memory path (a name that is not UTF-8, a hidden part ...),
    and a file that is not a plain file (a link, a submodule) or is over store.max_file_bytes.
    A pull request passes only what a proposal could land."""
    from dmm.errors import DmmError
    from dmm.memory.paths import clean_memory_path
    from dmm.proposals.declared import file_problems

    try:
        clean_memory_path(path)
    except DmmError as exc:
        return [Finding("error", path, "dmm path", exc.message)]
    return [Finding("error", path, "dmm file", problem) for problem in
            file_problems(git, "HEAD", [path], ws.config["store"]["max_file_bytes"])]


def check_main(ws: Workspace) -> CiReport:
    """A full conflict scan; every conflict nobody decided is reported."""
    from dmm.conflicts import service
    from dmm.index.refresh import open_fresh

    report = CiReport("main")
    conn, _ = open_fresh(ws)
    try:
        service.run_scan(ws, conn, full=True)
        found, _ = service.conflicts(ws, conn, None, status="unresolved")
    finally:
        conn.close()
    for conflict in found:
        _conflict_findings(report, conflict, "error")
    for path in tracked(ws):
        report.findings.append(Finding("error", path, "dmm state committed",
                                       _state_message(path)))
    return report


def _base_settings(git: Git, commit: str) -> dict:
    """The settings of the branch a pull request goes into (at ``commit``)."""
    from dmm import config

    path = ".dmm/config.toml"
    return config.parse(git.show_blob(commit, path), f"{path} of {commit[:12]}")


def _judged_by(ws: Workspace, settings: dict) -> Workspace:
    """The work tree with ``settings`` as its settings: a pull request is checked by the
    settings of the branch it goes into, because its own config.toml is one of its changes,
    not its judge (it could turn the gate off, or raise conflicts.min_confidence above the
    contradiction it brings). Its config change is named for a person to read."""
    judged = dataclasses.replace(ws)  # the same folders, its own settings
    judged.__dict__["config"] = settings  # Workspace.config is a cached_property: primed
    return judged


def failure(report: CiReport) -> str:
    """Why the check fails, in one sentence (the errors themselves are listed above it)."""
    conflicts = sum(f.severity == "error" and f.title == "dmm conflict" for f in report.findings)
    other = report.errors - conflicts
    parts = ([f"{other} error(s) in changed files"] if other else []) + (
        [f"{conflicts} report(s) of a conflict nobody decided: resolve it (dmm conflicts "
         "show ID), supersede or deprecate a memory, or dismiss it"] if conflicts else [])
    return "; ".join(parts)


def _state_message(path: str) -> str:
    where = "is" if path == OLD_INDEX_DIR else "is under"
    return (f"{path} {where} {OLD_INDEX_DIR}/, where older versions of dmm kept their cache: "
            "dmm never reads it, and a committed cache or link there is how a repository "
            f"could make older versions show memories that exist in no file; remove it "
            f"(`git rm -r {OLD_INDEX_DIR}`)")


def _conflict_findings(report: CiReport, conflict, severity: str,
                       only: set[str] | None = None, branch: str | None = None) -> None:
    """A finding on each memory of ``conflict`` (those in ``only``); ``branch``: the branch of
    the pull request that brings it, where a developer's clone can show it (its main branch
    does not hold the memory yet: `dmm conflicts show` there finds no conflict)."""
    from dmm.shellcmd import command

    report.conflicts.append(conflict.to_dict())
    names = ", ".join(f"{m.title} ({m.path})" for m in conflict.memories)
    show = f"`{command('dmm', 'conflicts', 'show', conflict.conflict_id)}`"
    if branch is not None:
        switch = f"`{command('git', 'switch', branch)}`" if branch else "the pull request's branch"
        show = f"on the branch that brings it ({switch}), {show}"
    for m in conflict.memories:
        if only is None or m.memory_id in only:
            report.findings.append(Finding(
                severity, MEMORY_ROOT + m.path, "dmm conflict",
                f"{conflict.type} ({conflict.confidence:.2f}): {conflict.description} "
                f"[{names}] - see {show}"))


def _field_line(text: str, name: str | None) -> int:
    """The line of the front matter where the field ``name`` is set (an annotation belongs
    there); 1 (the front matter's start) for a field that is missing or a problem of none."""
    import re

    if name:
        key = re.compile(rf"^{re.escape(name)}\s*:")
        for number, line in enumerate(text.splitlines()[1:], 2):
            if line.strip() == "---":
                break
            if key.match(line):
                return number
    return 1


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_commands(report: CiReport) -> list[str]:
    """One workflow command per finding, as GitHub documents them:
    ``::error file={name},line={line},title={title}::{message}`` (``warning``, ``notice``)."""
    out = []
    for f in report.findings:
        level = f.severity if f.severity in ("error", "warning", "notice") else "notice"
        out.append(f"::{level} file={_escape_property(f.path)},line={f.line},"
                   f"title={_escape_property(f.title)}::{_escape_data(f.message)}")
    return out


def plain_lines(report: CiReport) -> list[str]:
    """``path:line: severity: [title] message``, the shape compilers use (GitLab, others)."""
    return [f"{f.path}:{f.line}: {f.severity}: [{f.title}] {' '.join(f.message.split())}"
            for f in report.findings]


def summary(report: CiReport) -> str:
    """The Markdown job summary."""
    from dmm.render import render

    rows = [(f.severity, _code_cell(f.path), _cell(f.title), _cell(f.message))
            for f in report.findings]
    return render("ci_summary.md.j2", report=report, rows=rows, failure=failure(report))


# Markdown's punctuation that starts a link, an image, emphasis, code or a heading: each is
# written with its backslash escape, which renders as the character itself
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+!~])")


def _cell(text: str) -> str:
    """Text for a Markdown table cell: on one line, no column break, no HTML, no link, image
    or emphasis (memory text is an agent's and must not act on the page: ``![x](url)`` would
    load an image from anywhere, ``[Approve](url)`` would disguise a link). A bare URL stays
    text GitHub may underline, always showing the whole address."""
    return _MARKDOWN.sub(r"\\\1", _plain_cell(text)).replace("|", "\\|")


def _code_cell(text: str) -> str:
    """Text for a Markdown code span in a table cell (a file name): nothing renders in it,
    but a backtick would end it and a bar would end the cell."""
    return _plain_cell(text).replace("`", "'").replace("|", "\\|")


def _plain_cell(text: str) -> str:
    """``text`` on one line, with HTML's special characters as entities and each byte of a
    file name that was not UTF-8 as ``\\xNN``."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    text = " ".join(text.split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
