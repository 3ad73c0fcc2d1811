"""`dmm list`: what the store holds, filtered and sorted, as a table, rows or JSON."""

from __future__ import annotations

import json

from tests.conflicts.test_resolution import BEANSTALK, NODE18, NODE22, OLD_LIMIT, SQS, store  # noqa: F401,E501


def listed(repo, *args) -> list[str]:
    proc = repo.dmm("list", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["total"] >= len(data["memories"])
    return [m["memory_id"] for m in data["memories"]]


def test_filters_and_sorting(store):
    everything = listed(store)
    assert {OLD_LIMIT, BEANSTALK, SQS, NODE18, NODE22} <= set(everything)
    assert listed(store, "--tag", "jobs") == [BEANSTALK, SQS]  # by path
    assert listed(store, "--tag", "jobs", "--tag", "queue", "--sort", "created",
                  "--reverse") == [SQS, BEANSTALK]
    assert listed(store, "--under", "project/jobs") == [BEANSTALK, SQS]
    # a folder, not a prefix of a name; one that does not exist fails as validate does
    typo = store.dmm("list", "--under", "project/job")
    assert typo.returncode == 5 and "did you mean project/jobs?" in typo.stderr
    assert listed(store, "--scope", "baseline") == []
    assert listed(store, "--older-than", "100000") == []
    assert set(listed(store, "--newer-than", "100000")) == set(everything)
    assert listed(store, "--sort", "created", "--limit", "1") == [OLD_LIMIT]
    assert listed(store, "--status", "deprecated") == []


def test_table_rows_and_alias(store):
    table = store.dmm("list", "--tag", "jobs")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["id", "scope", "status"]
    assert "Jobs are queued in Beanstalkd" in table.stdout  # whole titles when piped
    rows = store.dmm("ls", "--tag", "jobs", "--no-headers").stdout.splitlines()
    assert [r.split("\t")[0] for r in rows] == [BEANSTALK, SQS]
    none = store.dmm("list", "--tag", "nope")
    assert none.returncode == 0 and none.stdout == "" and "No memories match" in none.stderr


def test_a_memory_with_errors_is_named_not_dropped_silently(repo):
    repo.add("project/good.md", "mem_2026_01_01_001", "Jobs go to the queue")
    repo.write("project/broken.md", "---\ntags: [x]\n---\n\n# No id, no fields\n\nText.\n")
    proc = repo.dmm("list")
    assert proc.returncode == 0, proc.stderr
    assert "mem_2026_01_01_001" in proc.stdout and "broken" not in proc.stdout
    assert "project/broken.md" in proc.stderr and "dmm validate" in proc.stderr
    data = json.loads(repo.dmm("list", "--json").stdout)
    assert data["invalid"] == ["project/broken.md"]
    assert "broken" not in repo.dmm("list", "--under", "project", "--scope", "global").stderr
