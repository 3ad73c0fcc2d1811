"""A team built from local git: a bare repository as `origin`, clones as the machines of people
and agents, real `git push`/`fetch` and the real `dmm` command line in each."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, run_dmm

BODY = ("{title}. The team agreed on this after the incident review, because the old way "
        "broke twice in production and nobody could say why from the logs alone.")


def memory(title: str, *, tags: str = "[team]", mem_id: str = "") -> str:
    head = f"id: {mem_id}\n" if mem_id else ""
    return (f"---\n{head}tags: {tags}\npriority: 0.5\nconfidence: active\n---\n\n# {title}\n\n"
            f"{BODY.format(title=title)}\n")


class Clone:
    def __init__(self, root: Path, name: str):
        self.root, self.name = root, name

    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def dmm(self, *args: str, input: str | None = None, ok: bool = True,
            env: dict | None = None) -> subprocess.CompletedProcess:
        proc = run_dmm(*args, cwd=self.root, input=input, env=env)
        if ok:
            assert proc.returncode == 0, (self.name, args, proc.stdout, proc.stderr)
        return proc

    def json(self, *args: str, input: str | None = None) -> dict:
        return json.loads(self.dmm(*args, "--json", input=input).stdout)

    def propose(self, path: str, title: str, **kw) -> str:
        out = self.json("write", "propose", "--path", path, "--reason",
                        f"{self.name} learned it", input=memory(title, **kw))
        return out["proposal_id"]

    def sync(self) -> dict:
        return self.json("sync")

    def open_ids(self) -> set[str]:
        return {p["proposal_id"] for p in self.json("review", "list")["proposals"]}

    def log(self) -> list[tuple]:
        entries = self.json("log", "--limit", "1000000")["entries"]
        return sorted((e["commit"], e["event"], e["proposal_id"]) for e in entries)

    def records(self) -> list[str]:
        """The audit records on this clone's dmm/audit, as proposal:decision, sorted."""
        out = self.git("log", "--format=%(trailers:key=Dmm-Proposal,valueonly,separator=)"
                       ":%(trailers:key=Dmm-Decision,valueonly,separator=)", "dmm/audit",
                       "--not", "main") if self.git("branch", "--list", "dmm/audit") else ""
        return sorted(line for line in out.splitlines() if line.strip(":").count(":") == 1
                      and not line.endswith(":"))


class Team:
    def __init__(self, base: Path):
        self.base = base
        self.origin = base / "origin.git"
        git(base, "init", "-q", "--bare", "-b", "main", str(self.origin))
        first = self.clone("lead")
        first.git("commit", "-q", "--allow-empty", "-m", "start")
        assert run_dmm("init", "--no-hooks", cwd=first.root).returncode == 0
        (first.root / ".dmm" / "memory" / "baseline" / "dmm_usage.md").unlink()
        first.git("add", "-A")
        first.git("commit", "-qm", "dmm store")
        first.git("push", "-q", "origin", "main")
        self.lead = first

    def clone(self, name: str) -> Clone:
        root = self.base / name
        git(self.base, "clone", "-q", str(self.origin), str(root))
        git(root, "config", "user.name", name.capitalize())
        git(root, "config", "user.email", f"{name}@example.com")
        return Clone(root, name)

    def copy(self, to: Path) -> "Team":
        """The whole team (origin and clones) copied elsewhere, remotes pointing at the copy."""
        shutil.copytree(self.base, to, symlinks=True)
        team = Team.__new__(Team)
        team.base, team.origin = to, to / "origin.git"
        for clone in to.iterdir():
            if clone.is_dir() and (clone / ".git").is_dir():
                git(clone, "remote", "set-url", "origin", str(team.origin))
        team.lead = Clone(to / "lead", "lead")
        return team

    def fsck(self) -> None:
        for repo in [self.origin, *[p for p in self.base.iterdir() if (p / ".git").is_dir()]]:
            proc = subprocess.run(["git", "fsck", "--strict", "--no-progress"], cwd=repo,
                                  capture_output=True, text=True)
            assert proc.returncode == 0 and "error" not in proc.stderr, (repo, proc.stderr)


@pytest.fixture
def team(tmp_path) -> Team:
    base = tmp_path / "team"
    base.mkdir()
    return Team(base)
