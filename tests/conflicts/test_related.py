"""The `related` field read as a declared relationship (seeds/000 1.3; issue 37 item 7)."""

from __future__ import annotations

import json

from tests.conflicts.test_detection import add, detect

GLOBAL = ("Before telling anyone a change is ready, run `tox -e lint,py312` from the root of "
          "the repository.")
PROJECT = "No merge request is opened while any environment of the matrix fails."


def _layered(repo, related: str = "") -> None:
    """A global rule and the project rule that applies it: one piece of code in both points,
    a scope overlap by sameness alone."""
    add(repo, "global/done.md", "mem_2024_12_02_001", "Finish with the linters", GLOBAL,
        scope="global")
    add(repo, "project/ready.md", "mem_2025_02_19_001",
        "A green `tox -e lint,py312` is the definition of done", PROJECT, extra=related)


def test_a_scope_overlap_the_related_field_declares_is_not_reported(repo):
    _layered(repo)
    assert detect(repo) == {("mem_2024_12_02_001", "mem_2025_02_19_001"): "scope_overlap"}
    _layered(repo, "related: [mem_2024_12_02_001]\n")
    assert detect(repo) == {}


def test_a_relation_is_no_agreement_and_says_so_in_the_evidence(repo):
    add(repo, "project/a.md", "mem_2025_01_10_001", "HTTP client timeout is 30 seconds",
        "Outbound HTTP calls time out after 30 seconds so that a slow partner never holds a "
        "worker for long.", tags="[http]")
    add(repo, "project/b.md", "mem_2025_06_10_001", "HTTP client timeout is 5 seconds",
        "Outbound HTTP calls time out after 5 seconds so that a slow partner never holds a "
        "worker for long.", tags="[http]", extra="related: [mem_2025_01_10_001]\n")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2025_06_10_001"): "contradictory"}
    shown = json.loads(repo.dmm("conflicts", "list", "--json").stdout)["conflicts"][0]
    assert "declared: mem_2025_06_10_001 lists mem_2025_01_10_001 as related" in \
        shown["evidence"]


def test_a_near_copy_in_two_scopes_is_reported_though_related(repo):
    body = ("Run the whole test suite locally before every push, so that the main branch stays "
            "green and reviewers never chase failures that a local run would have caught.")
    add(repo, "global/a.md", "mem_2025_01_10_001", "Run the full test suite before pushing",
        body, scope="global", tags="[testing, workflow]")
    add(repo, "project/b.md", "mem_2025_05_10_001", "Run the full test suite before pushing",
        body, tags="[testing, workflow]",
        extra="related: [mem_2025_01_10_001]\n")
    assert detect(repo) == {("mem_2025_01_10_001", "mem_2025_05_10_001"): "scope_overlap"}


def test_the_pack_shows_what_a_memory_is_declared_related_to(repo):
    _layered(repo, "related: [mem_2024_12_02_001]\n")
    out = repo.dmm("query", "definition of done tox matrix", "--json")
    entries = json.loads(out.stdout)["retrieved"]
    ready = next(e for e in entries if e["memory_id"] == "mem_2025_02_19_001")
    assert ready["related"] == ["mem_2024_12_02_001"]
    assert all("related" not in e for e in entries if e["memory_id"] != ready["memory_id"])
    text = repo.dmm("query", "definition of done tox matrix").stdout
    assert "related mem_2024_12_02_001" in text
