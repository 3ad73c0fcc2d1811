"""The rules of seeds/003 that need no model (issue 37 item 8): a working session's facts are
not contradictions of each other, a later fact that settles an earlier one is progression, and
every conflict carries a yes/no question for a person."""

from __future__ import annotations

import os
import subprocess

import pytest

from dmm.conflicts import narrative, service
from dmm.conflicts.questions import question
from dmm.conflicts.model import Conflict, ConflictMemory
from dmm.index.refresh import open_fresh
from dmm.memory.model import Memory

OLD = ("project/timeout_a.md", "mem_2025_06_10_001", "HTTP client timeout is 30 seconds",
       "Outbound HTTP calls time out after 30 seconds so that a slow partner never holds a "
       "worker for long.")
NEW = ("project/timeout_b.md", "mem_2025_06_10_002", "HTTP client timeout is 5 seconds",
       "Outbound HTTP calls time out after 5 seconds so that a slow partner never holds a "
       "worker for long.")


def _commit(repo, paths: list[str], when: int, email: str = "ann@example.com") -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{when} +0000",
           "GIT_COMMITTER_DATE": f"@{when} +0000", "GIT_AUTHOR_EMAIL": email,
           "GIT_AUTHOR_NAME": "Ann", "GIT_COMMITTER_NAME": "Ann",
           "GIT_COMMITTER_EMAIL": email}
    for p in paths:
        subprocess.run(["git", "add", f".dmm/memory/{p}"], cwd=repo.root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "--no-verify", "-m", "memories"], cwd=repo.root,
                   check=True, env=env, capture_output=True)


def _scan(repo) -> list[Conflict]:
    conn, _ = open_fresh(repo.ws)
    try:
        service.run_scan(repo.ws, conn, full=True)
        return service.conflicts(repo.ws, conn, scan=False)[0]
    finally:
        conn.close()


def _pair(repo, first_at: int, second_at: int | None, second_by: str = "ann@example.com",
          second_created: str | None = "2025-06-10"):
    path, mid, title, body = OLD
    repo.add(path, mid, title, body, tags="[http]", extra="created: 2025-06-10\n")
    path2, mid2, title2, body2 = NEW
    repo.add(path2, mid2, title2, body2, tags="[http]",
             extra=f"created: {second_created}\n" if second_created else "")
    if second_at is None:  # both in one commit
        _commit(repo, [path, path2], first_at)
    else:
        _commit(repo, [path], first_at)
        _commit(repo, [path2], second_at, second_by)
    [found] = _scan(repo)
    return found


T0 = 1_780_000_000


def test_a_working_session_settles_its_own_contradiction(repo):
    found = _pair(repo, T0, T0 + 12 * 60)
    assert found.type == "stale"
    assert [m.memory_id for m in found.memories] == ["mem_2025_06_10_002", "mem_2025_06_10_001"]
    assert [m.role for m in found.memories] == ["primary", "secondary"]
    assert "one working session" in found.description and "12 min" in found.description


@pytest.mark.parametrize("second_at, by, created", [
    (None, "ann@example.com", "2025-06-10"),  # one commit: written together, no order to read
    (T0 + 3 * 3600, "ann@example.com", "2025-06-10"),  # hours apart: two sessions
    (T0 + 5 * 60, "bob@example.com", "2025-06-10"),  # two people minutes apart: no conversation
    (T0 + 5 * 60, "ann@example.com", "2025-06-17"),  # written a week apart, committed later
    (T0 + 5 * 60, "ann@example.com", None),  # nothing says when it was written
])
def test_what_is_not_one_working_session_stays_a_contradiction(repo, second_at, by, created):
    assert _pair(repo, T0, second_at, by, created).type == "contradictory"


def test_a_later_fact_that_names_the_move_is_progression(repo):
    from dmm import config
    from dmm.conflicts.scanner import detect, load_features

    repo.add("project/a.md", "mem_2025_01_10_001", "Jobs are queued in Beanstalkd",
             "Background jobs are queued in Beanstalkd and picked up by the worker pool.",
             tags="[jobs, queue]", extra="created: 2025-01-10\n")
    repo.add("project/b.md", "mem_2026_01_10_001", "Background jobs moved to SQS",
             "In January we migrated the job queue from Beanstalkd to SQS; the workers now "
             "poll SQS.", tags="[jobs, queue]", extra="created: 2026-01-10\n")
    # a change that does not say what it left: a stale claim, at its full weight
    repo.add("project/c.md", "mem_2025_01_10_002", "Search runs on Elasticsearch 7",
             "The product search index runs on Elasticsearch 7 with one shard per tenant.",
             tags="[search, elasticsearch]", extra="created: 2025-01-10\n")
    repo.add("project/d.md", "mem_2026_01_10_002", "Search was upgraded to Elasticsearch 8",
             "In January the search cluster was upgraded to Elasticsearch 8; the index "
             "mappings now use Elasticsearch 8 too.", tags="[search, elasticsearch]",
             extra="created: 2026-01-10\n")
    found = {c.memories[0].memory_id: c for c in _scan(repo)}
    conn, _ = open_fresh(repo.ws)
    try:
        raw = {c.memories[0].memory_id: c
               for c in detect(*load_features(conn, None), config.DEFAULTS["conflicts"])[0]}
    finally:
        conn.close()
    queue, search = found["mem_2026_01_10_001"], found["mem_2026_01_10_002"]
    assert queue.type == search.type == "stale"
    assert queue.description.startswith("progression (settled), ")
    assert "progression: mem_2026_01_10_001 records the move" in queue.evidence
    assert queue.confidence == narrative.lowered(raw["mem_2026_01_10_001"].confidence,
                                                 (0.5, 0.6))
    assert queue.confidence < raw["mem_2026_01_10_001"].confidence
    assert not search.description.startswith("progression")
    assert search.confidence == raw["mem_2026_01_10_002"].confidence


def _memory(title: str, body: str) -> Memory:
    return Memory(id="mem_2025_01_01_001", path="project/x.md", title=title, body=body,
                  tags=[], scope="project", priority=0.5, confidence="active",
                  status="active")


@pytest.mark.parametrize("older, sentence", [
    ("Search uses LIKE queries", "Search was upgraded from LIKE to FTS5."),
    ("CI runs on Jenkins", "We replaced Jenkins with GitHub Actions last spring."),
    ("Passwords are hashed with bcrypt", "bcrypt was replaced by Argon2id in March."),
    ("Die Datenbank ist MySQL", "Wir haben von MySQL auf PostgreSQL umgestellt."),
    ("前端默认用 React 开发", "前端已从 React 迁移到 Vue。"),
])
def test_what_settles_an_earlier_fact(older, sentence):
    assert narrative.settles(_memory(older, older + "."), [sentence]) == sentence


@pytest.mark.parametrize("older, sentence", [
    # the move names nothing the older fact says
    ("Search uses LIKE queries", "Logging moved from syslog to Loki."),
    # it moved to what the older fact already says: no news for it
    ("Search uses FTS5, not LIKE", "Search was upgraded from LIKE to FTS5."),
    # "like" the word is not LIKE the operator
    ("Write commit messages like a changelog", "Search was upgraded from LIKE to FTS5."),
])
def test_what_does_not_settle_an_earlier_fact(older, sentence):
    assert narrative.settles(_memory(older, older + "."), [sentence]) is None


def test_every_conflict_carries_a_yes_or_no_question(repo):
    found = _pair(repo, T0, None)
    assert found.question == ("Is 'HTTP client timeout is 30 seconds' (mem_2025_06_10_001) "
                              "still the case, although mem_2025_06_10_002 says 'HTTP client "
                              "timeout is 5 seconds'?")
    out = repo.dmm("conflicts", "show", found.conflict_id)
    assert f"question for a person: {found.question}" in out.stdout


def test_the_question_asks_what_each_type_leaves_open():
    new = ConflictMemory("mem_b", "project/b.md", "Use 4 spaces\x1b[2J", "project", 0.5,
                         "primary")
    old = ConflictMemory("mem_a", "global/a.md", "Use tabs", "global", 0.5, "secondary")
    ask = {t: question(Conflict("conflict_0", t, "negation", 0.7, "", "", [new, old]))
           for t in ("contradictory", "stale", "duplicate", "scope_overlap", "supersession")}
    assert all(q.endswith("?") and "mem_a" in q and "mem_b" in q for q in ask.values())
    assert ask["scope_overlap"].startswith("Should 'Use tabs' (mem_a, global)")
    assert ask["stale"].startswith("Is 'Use tabs' (mem_a) still the case, now that mem_b")
    assert "\x1b" not in "".join(ask.values())  # a title's control characters never reach it


def test_a_question_the_narrative_pass_asked_is_kept():
    c = Conflict("conflict_0", "contradictory", "narrative", 0.5, "", "", [], question="Q?")
    assert (c.question or question(c)) == "Q?"
