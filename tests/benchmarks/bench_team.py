"""Benchmark a team on several machines, built from local git (run on demand).

    python tests/benchmarks/bench_team.py [--clones 10] [--proposals 500] [--decisions 400]
                                          [--seed 1] [--behind 100] [--runs 3]

A bare repository is `origin`; each clone is a person's or an agent's machine. In a random
order the clones propose, decide (approve on their own branch, reject, defer, withdraw; some
approvals are forge merges of the pushed branch: a merge commit, a squash or a rebase) and now
and then sync: `dmm sync` and, as a person does, `git pull` and `git push` of main. Clones do
not sync between most steps, so their queues, records and branches diverge and meet in every
order. Proposals and decisions run in-process (the core functions the commands call), syncs
too; the final `dmm log --json` of every clone and the timed sync run as whole processes.

Checks and reports: no proposal id or memory id used twice, every audit record made present
exactly once on origin, every approval on origin's main, `git fsck --strict` clean in every
repository, every clone's `dmm log` the same after a final sync (the differences if not), the
time of each kind of step; then the time of `dmm sync` in a clone `--behind` proposals behind.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DMM  # noqa: E402

TEXT = """---
tags: [team, {tag}]
priority: 0.5
confidence: active
---

# {title}

{title}. Clone {clone} wrote this down after step {step}, because the team kept asking and the
answer lived only in a chat thread that nobody could find again a month later.
"""
WORDS = ("cache", "queue", "deploy", "billing", "search", "auth", "upload", "email", "report",
         "export", "import", "tenant", "metrics", "backup", "ledger", "webhook")


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check)


class Machine:
    def __init__(self, root: Path, name: str):
        from dmm.workspace import Workspace

        self.root, self.name = root, name
        self.ws = Workspace(root)


class TeamBench:
    def __init__(self, base: Path, clones: int, rng: random.Random):
        self.base, self.rng = base, rng
        self.origin = base / "origin.git"
        base.mkdir(parents=True, exist_ok=True)
        git(base, "init", "-q", "--bare", "-b", "main", str(self.origin))
        self.machines = [self._clone(f"m{n}") for n in range(clones)]
        first = self.machines[0]
        git(first.root, "commit", "-q", "--allow-empty", "-m", "start")
        subprocess.run([*DMM, "init", "--no-hooks"], cwd=first.root, check=True,
                       capture_output=True)
        git(first.root, "add", "-A")
        git(first.root, "commit", "-qm", "dmm store")
        git(first.root, "push", "-q", "origin", "main")
        for m in self.machines[1:]:
            git(m.root, "pull", "-q", "origin", "main")
            git(m.root, "branch", "-q", "--set-upstream-to=origin/main")
        self.forge = self.base / "forge"
        git(base, "clone", "-q", str(self.origin), str(self.forge))
        self.times: dict[str, list[float]] = defaultdict(list)
        self.made: list[tuple[str, str]] = []  # (proposal id, memory id)
        self.records: list[str] = []  # audit record commits made by a close
        self.decisions = Counter()
        self.decided: list[tuple[str, str]] = []  # (proposal id, decision) as made
        self.by_forge: set[str] = set()
        self.step = 0

    def _clone(self, name: str) -> Machine:
        root = self.base / name
        git(self.base, "clone", "-q", str(self.origin), str(root))
        git(root, "config", "user.name", name.upper())
        git(root, "config", "user.email", f"{name}@example.com")
        return Machine(root, name)

    def timed(self, kind: str, fn, *args):
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.times[kind].append(time.perf_counter() - start)

    # --- steps ---------------------------------------------------------------------------

    def propose(self, m: Machine) -> None:
        from dmm.index.refresh import open_fresh
        from dmm.proposals.propose import propose

        self.step += 1
        title = (f"{self.rng.choice(WORDS).capitalize()} rule {self.step} of {m.name} about "
                 f"{self.rng.choice(WORDS)} and {self.rng.choice(WORDS)}")
        conn, _ = open_fresh(m.ws)
        try:
            result = propose(m.ws, conn, type="create", path=f"project/{m.name}/r{self.step}.md",
                             reason=f"{m.name} learned it",
                             content=TEXT.format(tag=self.rng.choice(WORDS), title=title,
                                                 clone=m.name, step=self.step))
        finally:
            conn.close()
        if not result.success:
            raise SystemExit(f"proposal refused: {result.precheck_errors}")
        self.made.append((result.proposal_id, result.proposal.memory_id))

    def decide(self, m: Machine) -> bool:
        from dmm.errors import DmmError
        from dmm.gitrepo import Git
        from dmm.proposals import decide
        from dmm.proposals.queue import open_proposals

        props = open_proposals(Git(m.root))
        if not props:
            return False
        p = self.rng.choice(props)
        roll = self.rng.random()
        try:
            if roll < 0.15 and p.remote:
                self.timed("forge merge", self.forge_merge, p.proposal_id)
                self.decisions["approved (forge)"] += 1
                self.decided.append((p.proposal_id, "approved"))
                self.by_forge.add(p.proposal_id)
            elif roll < 0.5:
                self.timed("approve", lambda: decide.approve(
                    m.ws, p.proposal_id, reviewer=m.name.upper()))
                self.decisions["approved"] += 1
                self.decided.append((p.proposal_id, "approved"))
            else:
                decision = self.rng.choice(["rejected", "rejected", "deferred", "withdrawn"])
                done = self.timed("close", lambda: decide.close(
                    m.ws, p.proposal_id, decision=decision, reviewer=m.name.upper(),
                    reason=f"{decision} by {m.name}"))
                self.records.append(done.commit)
                self.decisions[decision] += 1
                self.decided.append((p.proposal_id, decision))
        except DmmError as exc:  # e.g. a forge merge lost a race: that decision is not made
            self.decisions["refused: " + re.sub(r"prop_\w+", "<id>", exc.message)[:60]] += 1
            return False
        return True

    def forge_merge(self, pid: str) -> None:
        """A maintainer merges the pull request on the forge: a merge commit, a squash or a
        rebase of the pushed branch onto origin's main, then the branch is removed. Refused
        (DmmError) when the forge could not merge it: already on main, a conflict, a race."""
        from dmm.errors import DmmError

        how = self.rng.choice(["merge", "squash", "rebase"])
        f = self.forge
        git(f, "fetch", "-q", "--prune", "origin")
        branch = f"origin/dmm/proposals/{pid}"
        if git(f, "rev-parse", "-q", "--verify", branch, check=False).returncode:
            raise DmmError("gone from origin")
        git(f, "checkout", "-q", "-B", "main", "origin/main")
        who = ["-c", "user.name=Forge", "-c", "user.email=forge@example.com"]
        if how == "merge":
            steps = [[*who, "merge", "-q", "--no-ff", branch, "-m",
                      f"Merge pull request from dmm/proposals/{pid}"]]
        elif how == "squash":
            steps = [["merge", "-q", "--squash", branch],
                     [*who, "commit", "-q", "-m", "Add a memory (squashed)"]]
        else:
            steps = [[*who, "cherry-pick", branch]]
        for step in steps:
            if git(f, *step, check=False).returncode:
                git(f, "reset", "-q", "--hard", "origin/main")
                git(f, "cherry-pick", "--abort", check=False)
                raise DmmError(f"the forge could not {how} it")
        if git(f, "push", "-q", "origin", "main", check=False).returncode:
            raise DmmError("origin/main moved")
        git(f, "push", "-q", "origin", "--delete", f"dmm/proposals/{pid}", check=False)

    def sync(self, m: Machine, with_branch: bool = True) -> None:
        from dmm.gitrepo import Git
        from dmm.team.sync import sync

        self.timed("dmm sync", sync, Git(m.root))
        if with_branch:  # what a person does with their branch: pull, then push
            self.timed("git pull+push", self.pull_push, m)

    def pull_push(self, m: Machine) -> None:
        for _ in range(5):
            git(m.root, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
            if git(m.root, "push", "-q", "origin", "main", check=False).returncode == 0:
                return
        raise SystemExit(f"{m.name} could not push main")


def run_team(args, base: Path) -> dict:
    rng = random.Random(args.seed)
    team = TeamBench(base, args.clones, rng)
    started = time.perf_counter()
    proposals = decisions = 0
    while proposals < args.proposals or decisions < args.decisions:
        m = rng.choice(team.machines)
        roll = rng.random()
        if roll < 0.1:
            team.sync(m, with_branch=rng.random() < 0.7)
        elif proposals < args.proposals and (roll < 0.6 or decisions >= args.decisions):
            team.timed("propose", team.propose, m)
            proposals += 1
        elif decisions < args.decisions:
            decisions += team.decide(m)
    for _ in range(2):  # everyone syncs twice: what the last pushed reaches the first
        for m in team.machines:
            team.sync(m)
    for m in team.machines:
        team.sync(m, with_branch=False)
    elapsed = time.perf_counter() - started
    return {"team": team, "elapsed": elapsed}


def check(team: TeamBench) -> dict:
    from dmm.gitrepo import Git
    from dmm.team.records import records

    out = {}
    pids = [p for p, _ in team.made]
    mids = [m for _, m in team.made]
    out["proposal id collisions"] = len(pids) - len(set(pids))
    out["memory id collisions"] = len(mids) - len(set(mids))
    origin_records = [c.sha for c in records(Git(team.machines[0].root))]
    counts = Counter(origin_records)
    out["records made"] = len(team.records)
    out["records lost"] = sum(1 for r in team.records if r not in counts)
    out["records duplicated"] = sum(1 for n in counts.values() if n > 1)
    bad = []
    for repo in [team.origin, *(m.root for m in team.machines)]:
        proc = git(repo, "fsck", "--strict", "--no-progress", check=False)
        if proc.returncode or "error" in proc.stderr:
            bad.append(f"{repo.name}: {proc.stderr.strip()[:200]}")
    out["fsck failures"] = bad
    logs = {}
    log_times = []
    for m in team.machines:
        start = time.perf_counter()
        proc = subprocess.run([*DMM, "log", "--json", "--limit", "1000000"], cwd=m.root,
                              capture_output=True, text=True, check=True)
        log_times.append(time.perf_counter() - start)
        logs[m.name] = sorted((e["commit"], e["event"], e["proposal_id"])
                              for e in json.loads(proc.stdout)["entries"])
    first = logs[team.machines[0].name]
    logged = {(pid, event) for _, event, pid in first}
    missing = [(pid, d) for pid, d in team.decided if (pid, d) not in logged]
    out["decisions made but not in the log"] = len(missing)
    if missing:
        out["first missing"] = [(pid, d, "forge" if pid in team.by_forge else "dmm")
                                for pid, d in missing[:10]]
    per = Counter(pid for pid, d in team.decided if d != "deferred")
    out["proposals decided in two clones before they met"] = sum(1 for n in per.values() if n > 1)
    made = {pid for pid, _ in team.made}
    out["proposals not in the log"] = len(made - {pid for pid, e in logged if e == "proposed"})
    out["log entries"] = len(first)
    out["log events"] = dict(Counter(e for _, e, _ in first))
    out["clones whose log differs"] = {name: {"missing": len(set(first) - set(log)),
                                              "extra": len(set(log) - set(first))}
                                       for name, log in logs.items() if log != first}
    out["dmm log median s"] = round(statistics.median(log_times), 3)
    return out


def behind(args, base: Path) -> list[float]:
    """`dmm sync` (the whole process) in a clone `--behind` proposals behind."""
    out = []
    for run in range(args.runs):
        folder = base / f"behind-{run}"
        folder.mkdir()
        team = TeamBench(folder, 2, random.Random(run))
        ahead, late = team.machines
        team.sync(late)
        for _ in range(args.behind):
            team.propose(ahead)
        team.sync(ahead, with_branch=False)
        start = time.perf_counter()
        proc = subprocess.run([*DMM, "sync", "--json"], cwd=late.root, capture_output=True,
                              text=True, check=True)
        out.append(time.perf_counter() - start)
        got = len(json.loads(proc.stdout)["fetched"]["new_proposals"])
        if got != args.behind:
            raise SystemExit(f"the late clone fetched {got} proposals, not {args.behind}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clones", type=int, default=10)
    parser.add_argument("--proposals", type=int, default=500)
    parser.add_argument("--decisions", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--behind", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="Keep the team's folders.")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dmm-bench-team-"))
    if args.keep:
        print(f"team in {base}", file=sys.stderr)
    try:
        result = run_team(args, base / "team")
        team = result["team"]
        report = {"clones": args.clones, "proposals": len(team.made),
                  "decisions": dict(team.decisions), "elapsed s": round(result["elapsed"], 1)}
        report.update(check(team))
        report["step medians ms"] = {k: round(statistics.median(v) * 1000)
                                     for k, v in sorted(team.times.items())}
        report["step counts"] = {k: len(v) for k, v in sorted(team.times.items())}
        times = behind(args, base)
        report[f"dmm sync, {args.behind} proposals behind, s"] = [round(t, 2) for t in times]
        print(json.dumps(report, indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
