"""The writer judges at write time: a proposal gets its nearest memories back, the writer
declares how the new memory relates to each, the declaration travels with the proposal as a
claim, and the reviewer shows it beside its own findings. Real repositories, the real CLI."""

from __future__ import annotations

import json

import pytest

from dmm.errors import ExitCode
from dmm.proposals.relations import Finding, Relation, parse, undeclared
from tests.agents.test_mcp import DRAFT
from tests.conflicts.test_resolution import NEW_LIMIT, NODE18, OLD_LIMIT
from tests.conflicts.test_resolution import store  # noqa: F401 - the fixture
from tests.conftest import git

DEPLOYS = "mem_2026_01_01_aaaaaa"
RETIRED = "mem_2025_01_01_dddddd"
TUESDAYS = ("---\ntags: [deploy]\npriority: 0.6\nconfidence: active\n---\n\n"
            "# Production deploys happen on Tuesdays\n\nProduction deploys happen on Tuesday "
            "mornings and never on Fridays, because incidents after a Friday deploy had nobody "
            "on call over the weekend to fix them.\n")


@pytest.fixture
def deploys(store):
    """The resolution tests' store, plus a rule about deploy days and a deprecated memory."""
    store.add("project/deploy_days.md", DEPLOYS, "Production deploys happen on Fridays",
              "Production deploys happen on Friday afternoons, after the weekly review, "
              "because the whole team is present to watch the rollout.", tags="[deploy]")
    store.add("deprecated/project/old_deploys.md", RETIRED, "Deploys happened by hand",
              "Deploys were run by hand from a laptop, because there was no pipeline yet.",
              status="deprecated", tags="[deploy]")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "deploy memories")
    return store


def propose(repo, *args, content: str = TUESDAYS, path: str = "project/tuesdays.md"):
    proc = repo.dmm("write", "propose", "--path", path, "--reason", "the team moved the day",
                    *args, "--json", input=content)
    return proc, json.loads(proc.stdout)


def branches(repo) -> list[str]:
    return git(repo.root, "for-each-ref", "--format=%(refname)",
               "refs/heads/dmm/proposals").split()


def dry_run(repo, proposal_id: str) -> dict:
    proc = repo.dmm("review", "process", proposal_id, "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def messages(review: dict, category: str = "relations") -> list[str]:
    return [i["message"] for i in review["issues"] if i["category"] == category]


def test_boot_md_tells_agents_how_and_why_to_declare(deploys):
    boot = (deploys.root / ".dmm" / "BOOT.md").read_text()
    assert "--relation <memory_id>=<relation>" in boot and "neighbours" in boot
    for relation in ("supersedes", "contradicts", "refines", "duplicates", "unrelated"):
        assert f"`{relation}`" in boot


def test_a_proposal_without_declarations_is_made_and_asks_for_them(deploys):
    proc, out = propose(deploys)
    assert proc.returncode == 0 and out["success"], proc.stderr
    near = {n["memory_id"]: n for n in out["neighbours"]}
    assert DEPLOYS in near and RETIRED not in near  # a deprecated memory is never a neighbour
    assert len(out["neighbours"]) <= 5
    assert "Friday afternoons" in near[DEPLOYS]["passage"]
    assert near[DEPLOYS]["declared"] is None and out["relations"] == []
    assert DEPLOYS in out["declare"] and "supersedes" in out["declare"]
    text = deploys.dmm("write", "propose", "--path", "project/tuesdays2.md", "--reason", "r",
                       input=TUESDAYS.replace("Tuesdays", "Tuesday mornings"))
    assert text.returncode == 0
    assert "Nearest memories:" in text.stderr and DEPLOYS in text.stderr
    assert "--relation MEMORY=RELATION" in text.stderr


def test_a_declared_supersession_retires_the_memory_once_a_person_approves(deploys):
    proc, out = propose(deploys, "--relation", f"{DEPLOYS}=supersedes:the day moved to Tuesday")
    assert proc.returncode == 0, proc.stderr
    pid = out["proposal_id"]
    assert out["relations"] == [{"memory_id": DEPLOYS, "relation": "supersedes",
                                 "note": "the day moved to Tuesday"}]
    assert {n["memory_id"]: n["declared"] for n in out["neighbours"]}[DEPLOYS] == "supersedes"
    branch = f"dmm/proposals/{pid}"
    body = git(deploys.root, "log", "-1", "--format=%B", branch)
    assert f"Dmm-Relation: {DEPLOYS} supersedes the day moved to Tuesday" in body
    new = git(deploys.root, "show", f"{branch}:.dmm/memory/project/tuesdays.md")
    assert f"supersedes: [{DEPLOYS}]" in new
    moved = git(deploys.root, "show", f"{branch}:.dmm/memory/deprecated/project/deploy_days.md")
    assert "status: deprecated" in moved
    assert (deploys.memory / "project/deploy_days.md").exists()  # nothing lands before a person

    shown = deploys.dmm("review", "show", pid)
    assert f"declared: supersedes {DEPLOYS} (\"the day moved to Tuesday\")" in shown.stdout
    review = dry_run(deploys, pid)
    assert review["decision"] == "deferred" and "retires" in review["reason"]
    processed = deploys.dmm("review", "process", pid, "--json")
    assert json.loads(processed.stdout)["decision"] == "deferred"
    assert branch in " ".join(branches(deploys))  # deferred: still open for a person

    # the reviewer defers a retirement: approving it unasked says so with --force
    approved = deploys.dmm("review", "approve", pid, "--yes", "--force")
    assert approved.returncode == 0, approved.stderr
    assert not (deploys.memory / "project/deploy_days.md").exists()
    retired = (deploys.memory / "deprecated/project/deploy_days.md").read_text()
    assert "status: deprecated" in retired
    shown = json.loads(deploys.dmm("show", DEPLOYS, "--json").stdout)
    assert shown["status"] == "deprecated"
    logged = json.loads(deploys.dmm("log", "--memory", DEPLOYS, "--json").stdout)
    events = {(e["event"], e["proposal_id"]) for e in logged["entries"]}
    assert {("proposed", pid), ("approved", pid)} <= events, logged


@pytest.mark.parametrize("relation, why", [
    ("mem_2020_01_01_nothere=contradicts", "no memory of this store"),
    (f"{RETIRED}=supersedes", "deprecated already"),
    (f"{DEPLOYS}=replaces", "relation must be one of supersedes, contradicts"),
    (f"{DEPLOYS}=refines:" + "x" * 501, "the note is 501 characters"),
    (f"{DEPLOYS}", "relation must be one of"),
])
def test_an_invalid_declaration_is_refused_and_nothing_is_proposed(deploys, relation, why):
    before = branches(deploys)
    proc, out = propose(deploys, "--relation", relation)
    assert proc.returncode == ExitCode.INVALID_INPUT and not out["success"]
    assert any(why in e for e in out["precheck_errors"]), out["precheck_errors"]
    assert "Traceback" not in proc.stderr
    assert out["neighbours"]  # the writer still learns what to declare about
    assert branches(deploys) == before


def test_a_memory_declares_nothing_about_itself_or_twice_and_only_with_content(deploys):
    update = deploys.dmm("write", "update", "--memory", DEPLOYS, "--reason", "r",
                         "--relation", f"{DEPLOYS}=refines", "--json",
                         input=TUESDAYS.replace("# Production", "# Production still"))
    errors = json.loads(update.stdout)["precheck_errors"]
    assert update.returncode == ExitCode.INVALID_INPUT
    assert any("is the proposed memory itself" in e for e in errors), errors
    _, twice = propose(deploys, "--relation", f"{DEPLOYS}=refines", "--relation",
                       f"project/deploy_days.md=contradicts")  # a path names the same memory
    assert any("declared twice" in e for e in twice["precheck_errors"]), twice
    retire = deploys.dmm("write", "propose", "--type", "deprecate", "--path", "project/node18.md",
                         "--reason", "r", "--relation", f"{DEPLOYS}=unrelated", "--json")
    assert retire.returncode == ExitCode.INVALID_INPUT
    assert "with a create or an update" in retire.stdout


def test_an_undeclared_contradiction_is_shown_and_a_declaration_never_approves(deploys):
    """The heuristics find the draft contradicts both ceilings: undeclared ones are shown as
    such, declared ones beside them, and the decision is the same whatever is declared."""
    _, bare = propose(deploys, content=DRAFT, path="project/ceiling_a.md")
    _, said = propose(deploys, "--relation", f"{OLD_LIMIT}=contradicts:the gateway changed",
                      "--relation", f"{NEW_LIMIT}=unrelated",
                      content=DRAFT, path="project/ceiling_b.md")
    plain, claimed = dry_run(deploys, bare["proposal_id"]), dry_run(deploys,
                                                                     said["proposal_id"])
    undeclared_bare = [m for m in messages(plain) if m.startswith("undeclared")]
    assert any(OLD_LIMIT in m and "declared nothing" in m for m in undeclared_bare)
    assert any(NEW_LIMIT in m for m in undeclared_bare)
    shown = messages(claimed)
    assert any(m.startswith(f"the writer declares it contradicts {OLD_LIMIT}") for m in shown)
    assert not any(m.startswith("undeclared") and OLD_LIMIT in m for m in shown)
    assert any(m.startswith("undeclared") and NEW_LIMIT in m and "declared it unrelated" in m
               for m in shown)
    assert plain["decision"] == claimed["decision"] == "deferred"
    assert plain["confidence"] == claimed["confidence"]
    assert [m.replace(bare["memory_id"], "NEW") for m in messages(plain, "conflicts")] == \
        [m.replace(said["memory_id"], "NEW") for m in messages(claimed, "conflicts")]
    forced = deploys.dmm("review", "process", said["proposal_id"], "--force", "--dry-run",
                         "--json")
    assert json.loads(forced.stdout)["decision"] == "deferred"


def test_a_hand_made_supersession_claim_the_branch_does_not_carry_out_is_refused(deploys):
    """A trailer is a claim: a branch claiming a supersession without the retirement (or
    retiring a memory it does not claim) is judged on its diff."""
    from dmm.proposals.model import new_proposal_id

    root = deploys.root
    pid = new_proposal_id()
    git(root, "checkout", "-q", "-b", f"dmm/proposals/{pid}")
    (deploys.memory / "project/tuesdays.md").write_text(TUESDAYS.replace(
        "---\ntags", f"---\nid: mem_2026_02_02_eeeeee\nscope: project\nstatus: active\n"
                     f"supersedes: [{NODE18}]\ntags"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"dmm: propose create project/tuesdays.md\n\nr\n\n"
        f"Dmm-Proposal: {pid}\nDmm-Type: create\nDmm-Path: project/tuesdays.md\n"
        f"Dmm-Memory: mem_2026_02_02_eeeeee\nDmm-Relation: {NODE18} supersedes\n")
    git(root, "checkout", "-q", "main")
    review = dry_run(deploys, pid)
    assert review["decision"] == "rejected"
    assert any(f"supersedes {NODE18} but does not retire it" in m
               for m in messages(review, "declared_paths")), review
    assert deploys.dmm("review", "approve", pid, "--yes").returncode != 0
    assert (deploys.memory / "project/node18.md").exists()

    garbled = new_proposal_id()
    git(root, "checkout", "-q", "-b", f"dmm/proposals/{garbled}")
    (deploys.memory / "project/weekly.md").write_text(TUESDAYS.replace(
        "---\ntags", "---\nid: mem_2026_02_02_ffffff\nscope: project\nstatus: active\ntags"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"dmm: propose create project/weekly.md\n\nr\n\n"
        f"Dmm-Proposal: {garbled}\nDmm-Type: create\nDmm-Path: project/weekly.md\n"
        f"Dmm-Memory: mem_2026_02_02_ffffff\nDmm-Relation: {NODE18} overrules it\n")
    git(root, "checkout", "-q", "main")
    review = dry_run(deploys, garbled)
    assert review["decision"] == "rejected"
    assert any("relations cannot be read" in m for m in messages(review, "declared_paths"))


def test_undeclared_is_a_pure_function_any_check_can_feed():
    found = [Finding("mem_a", "project/a.md", "contradicts", "conflicts"),
             Finding("mem_a", "project/a.md", "contradicts", "model"),
             Finding("mem_b", "project/b.md", "duplicates", "duplicate"),
             Finding("mem_c", "project/c.md", "contradicts", "model")]
    said = [Relation("mem_a", "supersedes"), Relation("mem_b", "refines"),
            Relation("mem_c", "refines")]
    assert undeclared(found, said) == [(found[3], "refines")]
    assert [f.memory_id for f, s in undeclared(found, [])] == ["mem_a", "mem_b", "mem_c"]
    relations, errors = parse([{"memory_id": "mem_a", "relation": "refines",
                                "note": "two\nlines\x07"}, {"memory_id": "mem_b"}, "x"])
    assert relations == [Relation("mem_a", "refines", "two lines")]
    assert len(errors) == 2


def test_a_supersession_waits_for_an_open_proposal_on_the_memory_it_retires(deploys):
    pending = deploys.dmm("write", "deprecate", "--memory", DEPLOYS, "--reason", "old", "--json")
    assert pending.returncode == 0, pending.stderr
    proc, out = propose(deploys, "--relation", f"{DEPLOYS}=supersedes")
    assert proc.returncode == ExitCode.INVALID_INPUT
    assert any("already open for project/deploy_days.md" in e
               for e in out["precheck_errors"]), out


GHOST, HIDDEN = "mem_2026_03_03_gh0st1", "mem_2026_03_03_h1dden"


def _hand_made_supersession(repo, pid: str, claimed: str, retired: str) -> None:
    """A branch made by hand: a new memory that supersedes ``claimed`` (trailer and
    `supersedes:`), retiring the file ``retired`` exactly as dmm would move it."""
    from dmm.memory.edit import FrontmatterEditError, deprecation

    root = repo.root
    git(root, "checkout", "-q", "-b", f"dmm/proposals/{pid}")
    (repo.memory / "project/staging.md").write_text(
        f"---\nid: mem_2026_02_02_abcdef\nscope: project\nstatus: active\n"
        f"supersedes: [{claimed}]\ntags: [staging]\npriority: 0.5\nconfidence: active\n---\n\n"
        "# Staging is rebuilt on demand\n\nThe staging environment is rebuilt when a release "
        "branch is cut, because the nightly rebuilds cost more machine time than the few "
        "configuration mistakes they caught, and the release branch is what testers use.\n")
    text = (repo.memory / retired).read_text()
    try:
        moved_to, text = deprecation(retired, text)
    except FrontmatterEditError:  # a frontmatter dmm refuses to edit: edited by hand
        moved_to, text = f"deprecated/{retired}", text.replace("status: active",
                                                               "status: deprecated")
    (repo.memory / moved_to).parent.mkdir(parents=True, exist_ok=True)
    (repo.memory / moved_to).write_text(text)
    (repo.memory / retired).unlink()
    git(root, "add", "-A")
    git(root, "commit", "-qm", f"dmm: propose create project/staging.md\n\nr\n\n"
        f"Dmm-Proposal: {pid}\nDmm-Type: create\nDmm-Path: project/staging.md\n"
        f"Dmm-Memory: mem_2026_02_02_abcdef\nDmm-Relation: {claimed} supersedes\n")
    git(root, "checkout", "-q", "main")


def test_a_supersession_retires_only_the_memory_whose_id_the_file_has(deploys):
    """A frontmatter that repeats `id:` (YAML readers differ on which counts) is not a memory
    at all, and does not let a branch "supersede" the first id, which no memory has, and
    retire the file without a person."""
    from dmm.proposals.model import new_proposal_id

    deploys.add("project/hidden.md", HIDDEN, "Staging is rebuilt every night",
                "The staging environment is rebuilt from scratch every night at 02:00.",
                extra=f"id: {GHOST}\n")  # a second `id:` key; YAML keeps the last one
    text = (deploys.memory / "project/hidden.md").read_text()
    text = text.replace(f"id: {HIDDEN}\n", "").replace(f"id: {GHOST}\n",
                                                       f"id: {GHOST}\nid: {HIDDEN}\n")
    (deploys.memory / "project/hidden.md").write_text(text)
    git(deploys.root, "add", "-A")
    git(deploys.root, "commit", "-qm", "a memory")
    problems = json.loads(deploys.dmm("validate", "--json").stdout)["problems"]
    assert any(p["path"] == "project/hidden.md" and "'id' is given twice" in p["message"]
               for p in problems), problems
    pid = new_proposal_id()
    _hand_made_supersession(deploys, pid, GHOST, "project/hidden.md")
    review = dry_run(deploys, pid)
    assert review["decision"] == "rejected", review
    assert any(f"supersedes {GHOST} but does not retire it" in m
               for m in messages(review, "declared_paths")), review
    deploys.dmm("review", "process", pid)  # rejected: nothing lands
    assert (deploys.memory / "project/hidden.md").exists()


def test_a_supersession_goes_to_a_person_whatever_the_cache_knows(deploys):
    """A retirement waits for a person even when this clone's index does not know the memory
    as active (the file is gone from the work tree, the cache is behind the branch's base):
    the branch's own diff retires it, and judge has checked that it is the memory claimed."""
    from dmm.proposals.model import new_proposal_id

    deploys.add("project/hidden.md", HIDDEN, "Staging is rebuilt every night",
                "The staging environment is rebuilt from scratch every night at 02:00.")
    git(deploys.root, "add", "-A")
    git(deploys.root, "commit", "-qm", "a memory")
    pid = new_proposal_id()
    _hand_made_supersession(deploys, pid, HIDDEN, "project/hidden.md")
    (deploys.memory / "project/hidden.md").unlink()  # not in this work tree: the index has
    review = dry_run(deploys, pid)                     # no active memory of that id
    assert review["decision"] == "deferred", review
    assert any(f"retires {HIDDEN}" in m for m in messages(review)), review


def test_hostile_relation_trailers_are_shown_escaped_and_refuse_the_proposal(deploys):
    """Trailers a branch made by hand: escape sequences in the id and the note, a byte that is
    not UTF-8, far too many declarations. `review show` prints them escaped and exits 0; the
    reviewer rejects the proposal (its relations cannot be read) and nothing lands."""
    from dmm.proposals.model import new_proposal_id

    root = deploys.root
    pid = new_proposal_id()
    git(root, "checkout", "-q", "-b", f"dmm/proposals/{pid}")
    (deploys.memory / "project/tuesdays.md").write_text(TUESDAYS.replace(
        "---\ntags", "---\nid: mem_2026_02_02_eeeeee\nscope: project\nstatus: active\ntags"))
    git(root, "add", "-A")
    hostile = [f"Dmm-Relation: \x1b]0;pwned\x07{DEPLOYS} refines \x1b[8mhidden\xff words"]
    hostile += [f"Dmm-Relation: mem_{n:04d} refines" for n in range(200)]
    message = (f"dmm: propose create project/tuesdays.md\n\nr\n\nDmm-Proposal: {pid}\n"
               "Dmm-Type: create\nDmm-Path: project/tuesdays.md\n"
               "Dmm-Memory: mem_2026_02_02_eeeeee\n" + "\n".join(hostile) + "\n")
    (root / ".git" / "hostile-msg").write_bytes(message.encode("utf-8", "surrogateescape")
                                               .replace("\xff".encode(), b"\xff"))
    git(root, "commit", "-q", "-F", str(root / ".git" / "hostile-msg"))
    git(root, "checkout", "-q", "main")
    show = deploys.dmm("review", "show", pid)
    assert show.returncode == 0 and "Traceback" not in show.stderr, show.stderr
    assert "\x1b" not in show.stdout and "\x07" not in show.stdout
    assert "relations declared; at most 20" in show.stdout
    review = dry_run(deploys, pid)
    assert review["decision"] == "rejected"
    assert any("relations cannot be read" in m for m in messages(review, "declared_paths"))


def test_a_person_confirming_an_approval_is_told_what_it_retires(deploys):
    """The question at the terminal names every memory the approval retires, read from the
    branch's diff: a commit added after `review show` cannot retire one unseen."""
    pexpect = pytest.importorskip("pexpect")
    import os
    import sys

    proc, out = propose(deploys, "--relation", f"{DEPLOYS}=supersedes:the day moved")
    assert proc.returncode == 0, proc.stderr
    child = pexpect.spawn(sys.executable, ["-m", "dmm", "review", "approve",
                                           out["proposal_id"]], cwd=str(deploys.root),
                          env=dict(os.environ), encoding="utf-8", timeout=60)
    child.expect(r"at commit [0-9a-f]{40} \(it retires project/deploy_days\.md\), which "
                 r"the reviewer would defer: [^\n]*: decide it")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus != 0 and (deploys.memory / "project/deploy_days.md").exists()


@pytest.mark.parametrize("name", ["x" * 290 + ".md", "../../../etc/passwd",
                                  "project/" + "y" * 280 + ".md"])
def test_a_declaration_naming_an_impossible_path_is_refused_as_no_memory(deploys, name):
    """A memory named by a path the file system cannot hold (a component over 255 bytes) or
    outside the store is no memory of this store: a clear refusal, exit 6, nothing proposed."""
    proc, out = propose(deploys, "--relation", f"{name}=refines")
    assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr
    assert any("is no memory of this store" in e for e in out["precheck_errors"]), out
    assert branches(deploys) == []


def test_superseding_a_baseline_memory_waits_for_a_person(deploys):
    """An agent can declare that its memory supersedes a baseline memory; the retirement
    touches baseline/, so the proposal goes to a person like any baseline change."""
    base_id = "mem_2026_01_02_bbbbbb"
    deploys.add("baseline/deploy_days.md", base_id, "Deploys happen on Fridays",
                "Production deploys happen on Friday afternoons, after the weekly review, "
                "because the whole team is present to watch the rollout.", scope="baseline",
                tags="[deploy]")
    git(deploys.root, "add", "-A")
    git(deploys.root, "commit", "-qm", "a baseline memory")
    proc, out = propose(deploys, "--relation", f"{base_id}=supersedes",
                        "--relation", f"{DEPLOYS}=contradicts")
    assert proc.returncode == 0, proc.stderr
    review = dry_run(deploys, out["proposal_id"])
    assert review["decision"] == "deferred", review
    assert any(i["category"] == "baseline" for i in review["issues"])
    assert any(f"retires {base_id}" in m for m in messages(review))
    deploys.dmm("review", "process", out["proposal_id"])  # deferred: nothing lands
    assert (deploys.memory / "baseline/deploy_days.md").exists()
