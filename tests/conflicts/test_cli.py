"""The conflicts CLI, the committed decisions, and the integrations with query and review."""

from __future__ import annotations

import json
import shutil

import pytest

from dmm.errors import ExitCode
from tests.conftest import git


@pytest.fixture
def store(repo):
    repo.add("project/node18.md", "mem_2025_05_06_001", "The frontend build requires Node.js 18",
             "Install Node.js 18 LTS to build the web client.", tags="[node, frontend]",
             extra="created: 2025-05-06\n")
    repo.add("project/node22.md", "mem_2026_02_11_002", "Node.js 22 is the required runtime",
             "The web client now builds with Node.js 22.", tags="[node, frontend]",
             extra="created: 2026-02-11\nsupersedes: [mem_2025_05_06_001]\n")
    repo.add("project/other.md", "mem_2025_09_17_003", "Invoices are numbered per year",
             "Invoice numbers restart in January.", tags="[invoices]")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "memories")
    return repo


def listed(repo, *args) -> dict:
    proc = repo.dmm("conflicts", "list", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_scan_list_show_stats(store):
    scan = json.loads(store.dmm("conflicts", "scan", "--full", "--json").stdout)
    assert scan["scan_type"] == "full" and scan["conflicts_detected"] == 1
    assert scan["by_type"] == {"supersession": 1}
    data = listed(store)
    assert data["total"] == 1
    conflict = data["conflicts"][0]
    for key in ("conflict_id", "type", "detection_method", "confidence", "status",
                "description", "evidence", "memories"):
        assert key in conflict
    assert {m["memory_id"] for m in conflict["memories"]} == {"mem_2025_05_06_001",
                                                                "mem_2026_02_11_002"}
    assert set(conflict["memories"][0]) >= {"memory_id", "path", "title", "scope", "priority",
                                             "role"}
    shown = store.dmm("conflicts", "show", conflict["conflict_id"])
    assert "supersession" in shown.stdout and "node18.md" in shown.stdout
    stats = json.loads(store.dmm("conflicts", "stats", "--json").stdout)
    assert stats["by_type"] == {"supersession": 1} and stats["recent_scans"]


def test_ids_are_stable_and_dismissals_survive_a_cache_rebuild(store):
    cid = listed(store)["conflicts"][0]["conflict_id"]
    proc = store.dmm("conflicts", "dismiss", cid, "--reason", "intended: node 18 kept for CI")
    assert proc.returncode == 0, proc.stderr
    assert (store.root / ".dmm" / "conflicts" / f"{cid}.json").exists()
    assert git(store.root, "status", "--porcelain") == ""  # committed
    assert f"Dmm-Conflict: {cid}" in git(store.root, "log", "-1", "--format=%B")
    shutil.rmtree(store.ws.state_dir)
    assert listed(store)["total"] == 0  # not reported again
    everything = listed(store, "--status", "all")
    assert [(c["conflict_id"], c["status"]) for c in everything["conflicts"]] == [
        (cid, "dismissed")]


def test_flag_and_check(store):
    proc = store.dmm("conflicts", "flag", "--memories", "mem_2025_09_17_003,mem_2026_02_11_002",
                     "--description", "these disagree about release numbering", "--json")
    flagged = json.loads(proc.stdout)
    assert flagged["created"]
    data = listed(store)
    assert flagged["conflict_id"] in {c["conflict_id"] for c in data["conflicts"]}
    check = store.dmm("conflicts", "check", "--memories", "mem_2025_09_17_003", "--json")
    assert check.returncode == ExitCode.PROBLEMS_FOUND
    assert json.loads(check.stdout)["has_conflicts"]
    bad = store.dmm("conflicts", "flag", "--memories", "mem_2025_09_17_003,mem_2099_01_01_001",
                    "--description", "x")
    assert bad.returncode == ExitCode.NOT_FOUND and "Traceback" not in bad.stderr


def test_list_scans_changed_memories_by_itself(store):
    assert [c["type"] for c in listed(store)["conflicts"]] == ["supersession"]
    store.add("project/node22.md", "mem_2026_02_11_002", "Node.js 22 is the required runtime",
              "The web client now builds with Node.js 22.", tags="[node, frontend]",
              extra="created: 2026-02-11\n")  # the supersedes link removed
    # rescanned without being asked: two active memories now require different Node versions
    assert [c["type"] for c in listed(store)["conflicts"]] == ["contradictory"]
    store.memory.joinpath("project/node18.md").unlink()
    assert listed(store)["total"] == 0


def test_query_warns_about_conflicts_among_packed_memories(store):
    store.dmm("conflicts", "scan")
    data = json.loads(store.dmm("query", "which Node.js version builds the frontend",
                                "--json").stdout)
    assert data["conflicts"] and any("conflict" in w for w in data["warnings"])


def test_status_reports_unresolved_conflicts(store):
    store.dmm("conflicts", "scan")
    data = json.loads(store.dmm("status", "--json").stdout)
    assert data["conflicts"]["unresolved"] == 1 and not data["conflicts"]["stale"]


def test_unknown_method_and_missing_conflict_are_clear_errors(store):
    proc = store.dmm("conflicts", "scan", "--methods", "telepathy")
    assert proc.returncode == ExitCode.INVALID_INPUT and "unknown method" in proc.stderr
    proc = store.dmm("conflicts", "show", "conflict_000000000000")
    assert proc.returncode == ExitCode.NOT_FOUND


def test_the_reviewer_defers_a_proposal_that_would_conflict(store):
    body = ("The public gateway refuses request bodies above {} and answers 413. The ceiling "
            "covers multipart and JSON bodies alike; integrators with larger documents use the "
            "pre-signed upload flow instead. Why: oversized uploads exhausted the API pods.\n")
    store.add("project/limit.md", "mem_2025_10_21_001", "Request body ceiling of the gateway",
              body.format("5 MB") * 4, tags="[api, uploads, limits]",
              extra="created: 2025-10-21\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "limit")
    text = ("---\ntags: [api, uploads, limits]\npriority: 0.6\nconfidence: active\n---\n\n"
            "# Request body ceiling on the gateway\n\n" + body.format("20,000,000 bytes") * 4)
    proc = store.dmm("write", "propose", "--path", "project/limit2.md", "--reason", "r", "--json",
                     input=text)
    pid = json.loads(proc.stdout)["proposal_id"]
    result = json.loads(store.dmm("review", "process", "--id", pid, "--json").stdout)
    assert result["decision"] == "deferred", result
    assert any(i["category"] == "conflicts" and "5 MB" in i["message"] for i in result["issues"])


def test_the_reviewer_sees_another_answer_that_shares_no_words(store):
    store.add("project/errors.md", "mem_2025_10_22_001", "Crashes are reported to Rollbar",
              "Unhandled exceptions reach Rollbar with the release tag attached. " * 3,
              tags="[errors]", extra="created: 2025-10-22\n")
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "errors")
    text = ("---\ntags: [monitoring]\npriority: 0.6\nconfidence: active\n---\n\n"
            "# Bugsnag receives every failure\n\n"
            + "The mobile and web clients send their failures to Bugsnag. " * 3)
    proc = store.dmm("write", "propose", "--path", "project/failures.md", "--reason", "r",
                     "--json", input=text)
    pid = json.loads(proc.stdout)["proposal_id"]
    result = json.loads(store.dmm("review", "process", "--id", pid, "--json").stdout)
    assert result["decision"] == "deferred", result
    assert any(i["category"] == "conflicts" and "errors.md" in i["message"]
               for i in result["issues"])


def test_changed_settings_rescan_instead_of_keeping_old_verdicts(store):
    assert listed(store)["total"] == 1
    config = store.root / ".dmm" / "config.toml"
    text = config.read_text()
    assert "min_confidence = 0.5" in text
    config.write_text(text.replace("min_confidence = 0.5", "min_confidence = 1.0"))
    status = json.loads(store.dmm("status", "--json").stdout)
    assert status["conflicts"]["stale"]
    assert listed(store)["total"] == 0  # rescanned with the new setting, no file changed


def test_fingerprint_tells_settings_and_weights_apart(tmp_path, monkeypatch):
    """What a scan's verdicts depend on besides the memories: any setting but the auto_ ones
    (which only say what to resolve), the analyzers' version and the fitted weights."""
    from dmm.conflicts import analyzers
    from dmm.config import DEFAULTS

    config = dict(DEFAULTS["conflicts"])
    base = analyzers.fingerprint(config)
    assert analyzers.fingerprint(dict(config)) == base
    assert analyzers.fingerprint({**config, "min_confidence": 0.9}) != base
    auto = next(k for k in config if k.startswith("auto_"))
    assert analyzers.fingerprint({**config, auto: "changed"}) == base
    monkeypatch.setattr(analyzers, "VERSION", analyzers.VERSION + 1)
    assert analyzers.fingerprint(config) != base
    monkeypatch.undo()
    weights = tmp_path / "weights.json"
    weights.write_bytes(analyzers._WEIGHTS.read_bytes().replace(b"0", b"1", 1))
    monkeypatch.setattr(analyzers, "_WEIGHTS", weights)
    assert analyzers.fingerprint(config) != base
