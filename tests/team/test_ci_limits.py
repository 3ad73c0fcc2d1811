"""`dmm ci check` applies every limit the reviewer applies (issue 34, item 13), with the
reviewer's own functions: a file name that is not UTF-8, a memory over store.max_file_bytes
and a memory committed as a link are errors on the pull request, each reported as what it is;
and the Markdown job summary never renders a link or an image from memory text (low)."""

from __future__ import annotations

import json
import os

from dmm import ci
from dmm.errors import ExitCode
from tests.conftest import git, memory_text


def _pull_request(repo, change) -> dict:
    """``change`` made on a branch off main, committed; `dmm ci check --base main`."""
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "store")
    git(repo.root, "checkout", "-q", "-b", "feature")
    change(repo)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "the pull request")
    proc = repo.dmm("ci", "check", "--base", "main", "--json")
    assert proc.returncode in (ExitCode.OK, ExitCode.PROBLEMS_FOUND), proc.stderr
    assert "internal error" not in proc.stderr
    return {"code": proc.returncode, **json.loads(proc.stdout)}


def _good(repo) -> None:
    repo.add("project/good.md", "mem_2026_02_01_001", "Releases are tagged on main",
             "Every release is a signed tag on main; the changelog is generated from the "
             "merged pull requests' titles, so a title says what changed for a user.",
             tags="[release]")


def _errors(report: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report["findings"]:
        if f["severity"] == "error":
            out.setdefault(f["path"], []).append(f["message"])
    return out


def test_a_file_name_that_is_not_utf8_is_an_error_not_a_crash(repo):
    def change(repo):
        _good(repo)
        name = os.fsdecode(b"bad\xffname.md")
        repo.write(f"project/{name}", memory_text("mem_2026_02_01_002", "Odd name"))
    report = _pull_request(repo, change)
    assert report["code"] == ExitCode.PROBLEMS_FOUND
    errors = _errors(report)
    [(path, messages)] = [(p, m) for p, m in errors.items() if "bad" in p]
    assert any("not valid UTF-8" in m for m in messages)
    assert ".dmm/memory/project/good.md" not in errors


def test_a_memory_over_the_size_limit_is_refused_as_the_reviewer_refuses_it(repo):
    def change(repo):
        _good(repo)
        big = memory_text("mem_2026_02_01_003", "A very long memory",
                          "Words. " * 50_000)  # 350 KB: over the default 256 KiB
        repo.write("project/big.md", big)
    report = _pull_request(repo, change)
    assert report["code"] == ExitCode.PROBLEMS_FOUND
    messages = _errors(report)[".dmm/memory/project/big.md"]
    assert any("store.max_file_bytes" in m for m in messages), messages


def test_a_linked_memory_is_reported_as_a_link(repo):
    def change(repo):
        _good(repo)
        (repo.memory / "project" / "link.md").symlink_to("good.md")
    report = _pull_request(repo, change)
    assert report["code"] == ExitCode.PROBLEMS_FOUND
    messages = _errors(report)[".dmm/memory/project/link.md"]
    assert any("120000" in m and "plain files" in m for m in messages), messages
    assert not any("frontmatter" in m for m in messages)


def test_the_job_summary_renders_no_link_and_no_image_from_memory_text():
    report = ci.CiReport("pull_request", "origin/main", [".dmm/memory/project/x.md"])
    report.findings.append(ci.Finding(
        "warning", ".dmm/memory/project/x.md", "dmm conflict",
        "![pixel](https://evil.example/p.png) [click here](https://evil.example/login) "
        "<img src=x> *bold* `code` \\[ok]"))
    text = ci.summary(report)
    row = [line for line in text.splitlines() if "evil.example" in line][0]
    assert "![" not in row.replace("\\!\\[", "") and "](" not in row.replace("\\]\\(", "")
    assert "\\!\\[pixel\\]\\(" in row and "\\[click here\\]\\(" in row
    assert "<img" not in row and "&lt;img" in row
