"""The reviewer answers a proposal with what the proposal takes part in (issue 37 items 2 and
19): a reversal arc elsewhere in the store (REST -> GraphQL -> REST) neither defers an
unrelated proposal nor shows up when unrelated content is checked; a person approving is shown
the reviewer's warnings and asked, and a script is refused unless it says --force. Real
repositories, the real CLI and server."""

from __future__ import annotations

import json

import pytest

from tests.agents.server import Server
from tests.conftest import git, memory_text

# an arc: REST was stated, a later memory records the move to GraphQL, a still later one uses
# REST again. The temporal analyzer reports every pair along it.
ARC = [
    ("project/api/rest.md", "mem_2025_01_10_001", "2025-01-10",
     "Public API responses are served over REST",
     "The public API serves JSON responses over REST endpoints under /v1, because every client "
     "team already speaks HTTP and JSON and the API gateway caches them."),
    ("project/api/graphql.md", "mem_2025_06_10_001", "2025-06-10",
     "Public API responses moved to GraphQL",
     "We moved the public API from REST to GraphQL so that clients fetch exactly the fields "
     "they need, because the mobile app made six REST calls per screen."),
    ("project/api/rest2.md", "mem_2025_11_10_001", "2025-11-10",
     "Public API endpoints for partners use REST",
     "New partner endpoints of the public API return JSON responses over REST under /v2, "
     "because the partners' integration tools only speak plain HTTP."),
]
GZIP = ("---\ntags: [api, performance]\npriority: 0.6\nconfidence: active\n---\n\n"
        "# Public API responses are gzip-compressed\n\n"
        "Public API responses larger than one kilobyte are gzip-compressed when the client "
        "sends Accept-Encoding, because compressed JSON responses cut mobile data use by "
        "seventy percent and the gateway does it without code in the services.\n")
# a memory that does take part in the arc's conflict: it uses REST after the move
REST_AGAIN = ("---\ntags: [api]\npriority: 0.6\nconfidence: active\n---\n\n"
              "# Internal API endpoints use REST\n\n"
              "Internal API endpoints return JSON responses over REST under /internal, because "
              "the batch jobs call them with curl from shell scripts.\n")


@pytest.fixture
def arc(repo):
    for path, mid, created, title, body in ARC:
        repo.add(path, mid, title, body, tags="[api]", extra=f"created: {created}\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "the API story")
    scanned = json.loads(repo.dmm("conflicts", "scan", "--full", "--json").stdout)
    assert scanned["conflicts_detected"] >= 2, scanned  # the arc is a conflict of the store
    return repo


def propose(repo, content: str, path: str) -> str:
    proc = repo.dmm("write", "propose", "--path", path, "--reason", "learnt today", "--json",
                    input=content)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["proposal_id"]


def reviewed(repo, pid: str) -> dict:
    proc = repo.dmm("review", "process", pid, "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def conflict_messages(review: dict) -> list[str]:
    return [i["message"] for i in review["issues"] if i["category"] == "conflicts"]


def test_an_arc_elsewhere_does_not_defer_an_unrelated_proposal(arc):
    unrelated = reviewed(arc, propose(arc, GZIP, "project/api/gzip.md"))
    assert conflict_messages(unrelated) == [], unrelated
    assert unrelated["decision"] == "approved", unrelated
    # a proposal that takes part in the arc is still answered with it
    related = reviewed(arc, propose(arc, REST_AGAIN, "project/api/internal.md"))
    assert related["decision"] == "deferred", related
    assert any("reversal" in m for m in conflict_messages(related)), related


def test_checked_content_is_answered_only_with_its_own_conflicts(arc):
    with Server(arc.root) as server:
        status, unrelated = server.post("/conflicts/check-content", {"content": GZIP})
        assert status == 200, unrelated
        assert unrelated["potential_conflicts"] == [], unrelated["potential_conflicts"]
        status, related = server.post("/conflicts/check-content", {"content": REST_AGAIN})
        assert status == 200, related
        found = related["potential_conflicts"]
        assert found and all(len(c["memories"]) == 2 for c in found), found
        draft = {m["path"] for c in found for m in c["memories"]}
        assert "project/draft.md" in draft, found
        assert all("project/draft.md" in {m["path"] for m in c["memories"]} for c in found)


def refs(repo) -> str:
    return git(repo.root, "for-each-ref", "--format=%(refname) %(objectname)")


def test_a_script_approving_what_the_reviewer_would_defer_is_refused_without_force(arc):
    pid = propose(arc, REST_AGAIN, "project/api/internal.md")
    dry = json.loads(arc.dmm("review", "approve", pid, "--dry-run", "--json").stdout)
    assert dry["would_approve"] and "conflict" in dry["would_ask"], dry
    before = refs(arc)
    refused = arc.dmm("review", "approve", pid, "--yes")
    assert refused.returncode == 6, (refused.stdout, refused.stderr)
    assert "Traceback" not in refused.stderr
    assert "would defer" in refused.stderr and "--force" in refused.stderr, refused.stderr
    assert "would conflict with project/api/rest.md" in refused.stderr, refused.stderr
    assert refs(arc) == before and not (arc.memory / "project/api/internal.md").exists()
    done = arc.dmm("review", "approve", pid, "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert "would conflict with" in done.stderr  # shown, and kept in the merge commit
    assert (arc.memory / "project/api/internal.md").exists()
    assert "would conflict with" in git(arc.root, "log", "-1", "--format=%B")
    # what the reviewer would approve itself needs no --force
    plain = propose(arc, GZIP, "project/api/gzip.md")
    assert arc.dmm("review", "approve", plain).returncode == 0


def test_a_person_at_a_terminal_is_shown_the_warnings_and_asked(arc):
    pexpect = pytest.importorskip("pexpect")
    import os
    import sys

    pid = propose(arc, REST_AGAIN, "project/api/internal.md")
    before = refs(arc)

    def ask(answer: str):
        child = pexpect.spawn(sys.executable, ["-m", "dmm", "review", "approve", pid],
                              cwd=str(arc.root), env=dict(os.environ), encoding="utf-8",
                              timeout=60)
        child.expect(r"would conflict with project/api/rest\.md")
        child.expect(r"which the reviewer would defer: it would conflict with memories in the "
                     r"store: a person decides: decide it as yourself\? \[y/N\]")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        return child.exitstatus, child.before

    status, out = ask("n")
    assert status == 6 and "not confirmed" in out, out
    assert refs(arc) == before
    status, out = ask("y")
    assert status == 0, out
    assert (arc.memory / "project/api/internal.md").exists()


def _arc_memories():
    """The arc's memories and the gzip one, parsed: what a scan reads."""
    from dmm.memory.parse import parse_memory

    texts = [(path, memory_text(mid, title, body, tags="[api]", extra=f"created: {created}\n"))
             for path, mid, created, title, body in ARC]
    texts.append(("project/api/gzip.md", memory_text(
        "mem_2025_12_01_001", "Public API responses are gzip-compressed",
        GZIP.split("\n\n", 2)[2], tags="[api]", extra="created: 2025-12-01\n")))
    return [parse_memory(text, path)[0] for path, text in texts]


def test_an_incremental_scan_reports_an_arc_where_its_focus_takes_part_in_it():
    from dmm.config import DEFAULTS
    from dmm.conflicts.scanner import build, detect

    features = build(_arc_memories())
    config = dict(DEFAULTS["conflicts"])

    def pairs(focus: set[str]) -> set[frozenset]:
        return {frozenset(m.memory_id for m in c.memories)
                for c in detect(features, focus, config)[0] if "reversal" in c.description}

    rest, move, again, gzip = (m.id for m in _arc_memories())
    arc = {frozenset((move, again)), frozenset((rest, again))}
    assert pairs(set(features)) == arc  # a full scan
    assert pairs({gzip}) == set()  # the arc is not the unrelated memory's
    for member in (rest, move, again):  # each memory of the arc brings the whole arc back
        assert pairs({member}) == arc, member
