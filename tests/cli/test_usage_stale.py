"""`dmm usage stale` says why no memory is stale: a memory newer than the window is not
judged yet, and saying every memory was returned by a query would be false."""

from __future__ import annotations

import datetime as dt
import json

from tests.conftest import git

TODAY = dt.date.today().isoformat()


def test_memories_younger_than_the_window_are_counted_not_claimed_returned(repo):
    repo.add("project/retries.md", "mem_2020_01_01_001", "Retries back off exponentially",
             "Retries back off exponentially with jitter, because the gateway throttles.",
             extra="created: 2020-01-01\n")
    repo.add("project/new1.md", "mem_2026_01_01_001", "Tenant ids go in cache keys",
             extra=f"created: {TODAY}\n")
    repo.add("project/new2.md", "mem_2026_01_01_002", "Deploys happen on weekdays",
             extra=f"created: {TODAY}\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    assert repo.dmm("query", "retries back off exponentially jitter").returncode == 0
    proc = repo.dmm("usage", "stale")
    assert proc.returncode == 0, proc.stderr
    assert "Every active memory was returned" not in proc.stderr
    assert "1 returned by a query in the last 30 days" in proc.stderr
    assert "2 added in the last 30 days" in proc.stderr
    data = json.loads(repo.dmm("usage", "stale", "--json").stdout)
    assert data["total"] == 0 and data["younger"] == 2
    limit_help = repo.dmm("usage", "stale", "--help").stdout.split("--limit")[1]
    assert "At most" in limit_help.split("--")[0]  # item 22: the option says what it does
